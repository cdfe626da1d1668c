package signature

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// TestSignaturesTellInputsApart: inputs that match differently never share
// a signature.
func TestSignaturesTellInputsApart(t *testing.T) {
	term := func(key string, ns []string, sel, nsSel labels.Selector) fwk.AffinityTerm {
		return fwk.AffinityTerm{TopologyKey: key, Namespaces: sets.New(ns...), Selector: sel, NamespaceSelector: nsSel}
	}
	parsed := func(ls *metav1.LabelSelector) labels.Selector {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	app := parsed(at.Sel("app", "web"))
	encode := map[string]func(*Signature){
		"everything":      func(w *Signature) { w.affinityTerm(term(at.Zone, nil, labels.Everything(), labels.Nothing())) },
		"nothing":         func(w *Signature) { w.affinityTerm(term(at.Zone, nil, labels.Nothing(), labels.Nothing())) },
		"app=web":         func(w *Signature) { w.affinityTerm(term(at.Zone, nil, app, labels.Nothing())) },
		"app=web, all ns": func(w *Signature) { w.affinityTerm(term(at.Zone, nil, app, labels.Everything())) },
		"app=web in a":    func(w *Signature) { w.affinityTerm(term(at.Zone, []string{"a"}, app, labels.Nothing())) },
		"app=web in a,b":  func(w *Signature) { w.affinityTerm(term(at.Zone, []string{"a", "b"}, app, labels.Nothing())) },
		"app=web in ab":   func(w *Signature) { w.affinityTerm(term(at.Zone, []string{"ab"}, app, labels.Nothing())) },
		"app=web by host": func(w *Signature) { w.affinityTerm(term(at.Host, nil, app, labels.Nothing())) },
		"app in (web)": func(w *Signature) {
			w.affinityTerm(term(at.Zone, nil, parsed(tu.Selector(nil, tu.SelectorExpr("app", "In", "web"))), labels.Nothing()))
		},
		"weight 1": func(w *Signature) {
			w.WeightedTerms([]fwk.WeightedAffinityTerm{{AffinityTerm: term(at.Zone, nil, app, labels.Nothing()), Weight: 1}})
		},
		"weight 2": func(w *Signature) {
			w.WeightedTerms([]fwk.WeightedAffinityTerm{{AffinityTerm: term(at.Zone, nil, app, labels.Nothing()), Weight: 2}})
		},
		"two terms": func(w *Signature) {
			w.Terms([]fwk.AffinityTerm{term(at.Zone, nil, app, labels.Nothing()), term(at.Zone, nil, app, labels.Nothing())})
		},
		"one term, in list": func(w *Signature) { w.Terms([]fwk.AffinityTerm{term(at.Zone, nil, app, labels.Nothing())}) },
		"no terms, then one": func(w *Signature) {
			w.Terms(nil)
			w.Terms([]fwk.AffinityTerm{term(at.Zone, nil, app, labels.Nothing())})
		},
		"one term, then none": func(w *Signature) {
			w.Terms([]fwk.AffinityTerm{term(at.Zone, nil, app, labels.Nothing())})
			w.Terms(nil)
		},
	}
	seen := map[string]string{}
	for name, enc := range encode {
		var w Signature
		enc(&w)
		if other, dup := seen[w.String()]; dup {
			t.Errorf("%q and %q encode alike", name, other)
		}
		seen[w.String()] = name
	}
}

package nodeaffinity

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Our allocation-free matchers against component-helpers' (what upstream
// matches with), on every pair of a set of terms, alone and ORed, and a set
// of nodes: the parse rules (operators, value counts, Gt/Lt, label syntax,
// empty terms, weight 0) and the match quirks (a node without a name skips
// field requirements, a field other than metadata.name reads as "").
func TestMatchersAgreeWithComponentHelpers(t *testing.T) {
	in, notIn, ex, dne, gt, lt := v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn, v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist, v1.NodeSelectorOpGt, v1.NodeSelectorOpLt
	name := metav1.ObjectNameField
	terms := []v1.NodeSelectorTerm{
		{},
		tu.Term(tu.Expr("zone", in, "a")),
		tu.Term(tu.Expr("zone", in, "a", "b"), tu.Expr("gen", gt, "4")),
		tu.Term(tu.Expr("zone", notIn, "a")),
		tu.Term(tu.Expr("zone", ex)),
		tu.Term(tu.Expr("zone", dne)),
		tu.Term(tu.Expr("gen", lt, "6")),
		tu.Term(tu.Expr("gen", gt, "x")),            // parse error: not an integer
		tu.Term(tu.Expr("gen", gt, "4", "5")),       // parse error: two values
		tu.Term(tu.Expr("zone", in)),                // parse error: no value
		tu.Term(tu.Expr("zone", ex, "a")),           // parse error: value with Exists
		tu.Term(tu.Expr("bad key!", in, "a")),       // parse error: label key
		tu.Term(tu.Expr("zone", "Bogus", "a")),      // parse error: operator
		tu.Term(tu.Expr("zone", in, "not a value")), // parse error: label value
		tu.FieldTerm(tu.Expr(name, in, "n1")),
		tu.FieldTerm(tu.Expr(name, notIn, "n1")),
		tu.FieldTerm(tu.Expr(name, in, "n1", "n2")), // parse error: two values
		tu.FieldTerm(tu.Expr(name, ex)),             // parse error: operator
		tu.FieldTerm(tu.Expr("metadata.uid", in, "")),
		tu.FieldTerm(tu.Expr("metadata.uid", notIn, "x")),
		tu.FieldTerm(tu.Expr("metadata.uid", in, "x")),
		tu.FieldTerm(tu.Expr("metadata.uid", notIn, "")),
		{MatchExpressions: []v1.NodeSelectorRequirement{tu.Expr("zone", in, "a")}, MatchFields: []v1.NodeSelectorRequirement{tu.Expr(name, in, "n1")}},
		{MatchExpressions: []v1.NodeSelectorRequirement{tu.Expr("zone", in, "a")}, MatchFields: []v1.NodeSelectorRequirement{tu.Expr(name, in, "n1"), tu.Expr(name, notIn, "n2")}},
	}
	nodes := []*v1.Node{
		tu.MakeNode("n1").Labels(map[string]string{"zone": "a", "gen": "5"}).Obj(),
		tu.MakeNode("n2").Labels(map[string]string{"zone": "b", "gen": "7"}).Obj(),
		tu.MakeNode("n3").Labels(map[string]string{"gen": "05"}).Obj(),
		tu.MakeNode("").Labels(map[string]string{"zone": "a"}).Obj(), // no name: fields are not checked
		tu.MakeNode("n4").NoLabels().Obj(),
	}
	var selectors [][]v1.NodeSelectorTerm
	for i := range terms {
		selectors = append(selectors, []v1.NodeSelectorTerm{terms[i]})
		for j := range terms {
			selectors = append(selectors, []v1.NodeSelectorTerm{terms[i], terms[j]})
		}
	}
	selectors = append(selectors, nil) // no terms: matches nothing
	checked := 0
	for _, ts := range selectors {
		ns := &v1.NodeSelector{NodeSelectorTerms: ts}
		ours := newRequiredSelector(ns)
		theirs := nodeaffinity.NewLazyErrorNodeSelector(ns)
		var prefs []v1.PreferredSchedulingTerm
		for i, term := range ts {
			prefs = append(prefs, v1.PreferredSchedulingTerm{Weight: int32(i*3 + 1), Preference: term})
		}
		oursPref, oursOK := newPreferredTerms(prefs)
		theirsPref, err := nodeaffinity.NewPreferredSchedulingTerms(prefs)
		if oursOK != (err == nil) {
			t.Errorf("preferred %v: our parser ok=%v, component-helpers' error %v", ts, oursOK, err)
		}
		for _, n := range nodes {
			want, _ := theirs.Match(n)
			if got := ours.match(n); got != want {
				t.Errorf("required %v on node %q %v: ours %v, component-helpers %v", ts, n.Name, n.Labels, got, want)
			}
			if oursOK && err == nil {
				if got, want := oursPref.score(n), theirsPref.Score(n); got != want {
					t.Errorf("preferred %v on node %q %v: ours %d, component-helpers %d", prefs, n.Name, n.Labels, got, want)
				}
			}
			checked++
		}
	}
	// The pod's whole required selector: nodeSelector AND affinity.
	for _, sel := range []map[string]string{nil, {}, {"zone": "a"}, {"zone": "a", "gen": "5"}} {
		for _, ts := range selectors[:len(terms)] {
			pod := tu.MakePod("default", "p").NodeSelector(sel).RequiredNodeTerms(ts...).Obj()
			ps, theirs := newPodSelector(pod), nodeaffinity.GetRequiredNodeAffinity(pod)
			for _, n := range nodes {
				want, _ := theirs.Match(n)
				if got := ps.match(n); got != want {
					t.Errorf("pod nodeSelector %v, required %v on node %q: ours %v, component-helpers %v", sel, ts, n.Name, got, want)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal(fmt.Errorf("nothing compared"))
	}
}

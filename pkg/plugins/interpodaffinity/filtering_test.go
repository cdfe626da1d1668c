package interpodaffinity

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// everything is the {} selector; a nil *metav1.LabelSelector selects nothing.
var everything = tu.Selector(nil)

func TestPreFilterAndFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		// preFilter is the expected PreFilter status; when it is not a
		// success, Filter is not run.
		preFilter string
		filter    map[string]string
	}{
		{
			name:      "no terms anywhere: Skip",
			pod:       incoming("default").Label("app", "web").Obj(),
			existing:  []*v1.Pod{placed("default", "p1", "n1").Label("app", "web").Obj()},
			preFilter: skip,
		},
		{
			name: "existing anti-affinity that does not select the pod: Skip",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "p1", "n1").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj()},
			preFilter: skip,
		},
		{
			name:      "unparsable required affinity term",
			pod:       incoming("default").RequiredPodAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus", "x")))).Obj(),
			preFilter: `UnschedulableAndUnresolvable: parsing pod: requiredAffinityTerms: "Bogus" is not a valid label selector operator`,
		},
		{
			name: "an unparsable preferred term also rejects in PreFilter",
			pod: incoming("default").PreferredPodAntiAffinity(tu.Weighted(5,
				tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn))))).Obj(),
			preFilter: `UnschedulableAndUnresolvable: parsing pod: preferredAntiAffinityTerms: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`,
		},
		{
			name: "several unparsable categories are aggregated",
			pod: incoming("default").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus")))).
				PreferredPodAffinity(tu.Weighted(1, tu.WithNamespaceSelector(tu.AffinityTerm(zone, everything), tu.Selector(nil, tu.SelectorExpr("env", "Near"))))).Obj(),
			preFilter: `UnschedulableAndUnresolvable: parsing pod: [requiredAntiAffinityTerms: "Bogus" is not a valid label selector operator, preferredAffinityTerms: "Near" is not a valid label selector operator]`,
		},
		{
			name: "affinity: only the matching pod's zone, never a node without the key",
			pod:  incoming("default").Label("app", "web").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
			existing: []*v1.Pod{
				placed("default", "db", "n3").Label("app", "db").Obj(),
				placed("default", "other", "n1").Label("app", "cache").Obj(),
			},
			filter: statuses(affinityReject, affinityReject, pass, affinityReject),
		},
		{
			name:   "affinity: first pod of a series matching its own term goes anywhere with the key",
			pod:    incoming("default").Label("app", "db").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
			filter: statuses(pass, pass, pass, affinityReject),
		},
		{
			name:   "affinity: no matching pod and the pod does not match its own term",
			pod:    incoming("default").Label("app", "web").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
			filter: statuses(affinityReject, affinityReject, affinityReject, affinityReject),
		},
		{
			name:     "affinity: a matching pod elsewhere disables the first-pod exception",
			pod:      incoming("default").Label("app", "db").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n1").Label("app", "db").Obj()},
			filter:   statuses(pass, pass, affinityReject, affinityReject),
		},
		{
			name:     "affinity: a matching pod on a node without the key counts nowhere, so the exception still applies",
			pod:      incoming("default").Label("app", "db").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n4").Label("app", "db").Obj()},
			filter:   statuses(pass, pass, pass, affinityReject),
		},
		{
			name:     "affinity: a nil labelSelector matches no pod, not even the pod itself",
			pod:      incoming("default").Label("app", "db").RequiredPodAffinity(tu.AffinityTerm(zone, nil)).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n1").Label("app", "db").Obj()},
			filter:   statuses(affinityReject, affinityReject, affinityReject, affinityReject),
		},
		{
			name:     "affinity: an empty labelSelector matches every pod of the namespace",
			pod:      incoming("default").RequiredPodAffinity(tu.AffinityTerm(zone, everything)).Obj(),
			existing: []*v1.Pod{placed("default", "any", "n3").Obj()},
			filter:   statuses(affinityReject, affinityReject, pass, affinityReject),
		},
		{
			name: "affinity: pods matching one term each do not count; one pod must match all terms",
			pod: incoming("default").Label("app", "web").RequiredPodAffinity(
				tu.AffinityTerm(zone, sel("app", "db")),
				tu.AffinityTerm(rack, sel("tier", "gold"))).Obj(),
			existing: []*v1.Pod{
				placed("default", "db", "n1").Label("app", "db").Obj(),
				placed("default", "gold", "n1").Label("tier", "gold").Obj(),
			},
			filter: statuses(affinityReject, affinityReject, affinityReject, affinityReject),
		},
		{
			name: "affinity: every term's domain must hold a pod matching all terms",
			pod: incoming("default").Label("app", "web").RequiredPodAffinity(
				tu.AffinityTerm(zone, sel("app", "db")),
				tu.AffinityTerm(rack, sel("tier", "gold"))).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n1").Label("app", "db").Label("tier", "gold").Obj()},
			// n2 shares the zone but not the rack, n3 the rack but not the zone.
			filter: statuses(pass, affinityReject, affinityReject, affinityReject),
		},
		{
			name: "affinity: per-term domains may be satisfied by different pods",
			pod: incoming("default").Label("app", "web").RequiredPodAffinity(
				tu.AffinityTerm(zone, sel("app", "db")),
				tu.AffinityTerm(rack, sel("app", "db"))).Obj(),
			existing: []*v1.Pod{
				// zone z1 via n2 (rack r2), rack r1 via n3 (zone z2): n1 is
				// in both domains without hosting either pod.
				placed("default", "db-a", "n2").Label("app", "db").Obj(),
				placed("default", "db-b", "n3").Label("app", "db").Obj(),
			},
			filter: statuses(pass, pass, pass, affinityReject),
		},
		{
			name: "affinity: the self exception needs the pod to match all of its terms",
			pod: incoming("default").Label("app", "db").RequiredPodAffinity(
				tu.AffinityTerm(zone, sel("app", "db")),
				tu.AffinityTerm(rack, sel("tier", "gold"))).Obj(),
			filter: statuses(affinityReject, affinityReject, affinityReject, affinityReject),
		},
		{
			name: "affinity: the self exception with several terms",
			pod: incoming("default").Label("app", "db").Label("tier", "gold").RequiredPodAffinity(
				tu.AffinityTerm(zone, sel("app", "db")),
				tu.AffinityTerm(rack, sel("tier", "gold"))).Obj(),
			filter: statuses(pass, pass, pass, affinityReject),
		},
		{
			name: "anti-affinity: the matching pod's zone is rejected, a node without the key never",
			pod:  incoming("default").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj(),
			existing: []*v1.Pod{
				placed("default", "web", "n1").Label("app", "web").Obj(),
				placed("default", "web2", "n4").Label("app", "web").Obj(),
			},
			filter: statuses(antiReject, antiReject, pass, pass),
		},
		{
			name: "anti-affinity: any one term suffices",
			pod: incoming("default").RequiredPodAntiAffinity(
				tu.AffinityTerm(zone, sel("app", "web")),
				tu.AffinityTerm(rack, sel("app", "cache"))).Obj(),
			existing: []*v1.Pod{
				placed("default", "web", "n3").Label("app", "web").Obj(),
				placed("default", "cache", "n2").Label("app", "cache").Obj(),
			},
			filter: statuses(pass, antiReject, antiReject, pass),
		},
		{
			name: "anti-affinity: a nil labelSelector rejects nothing, {} rejects every populated domain",
			pod: incoming("default").RequiredPodAntiAffinity(
				tu.AffinityTerm(zone, nil),
				tu.AffinityTerm(rack, everything)).Obj(),
			existing: []*v1.Pod{placed("default", "any", "n3").Obj()},
			filter:   statuses(antiReject, pass, antiReject, pass),
		},
		{
			name: "existing anti-affinity: the existing pod's zone rejects the pod it selects",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "lonely", "n2").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			filter: statuses(existingReject, existingReject, pass, pass),
		},
		{
			name: "existing anti-affinity: an existing pod on a node without the key counts nowhere",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "lonely", "n4").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			preFilter: skip,
		},
		{
			name: "existing anti-affinity: one bad term drops all of the existing pod's required anti-affinity terms",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "lonely", "n2").RequiredPodAntiAffinity(
				tu.AffinityTerm(zone, sel("app", "web")),
				tu.AffinityTerm(rack, tu.Selector(nil, tu.SelectorExpr("app", "Bogus")))).Obj()},
			preFilter: skip,
		},
		{
			name: "existing pods' required affinity is not enforced",
			pod:  incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "none"))).Obj(),
			existing: []*v1.Pod{placed("default", "needy", "n1").
				RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "nobody"))).Obj()},
			filter: statuses(pass, pass, pass, pass),
		},
		{
			name: "order: affinity is checked before anti-affinity, anti-affinity before existing pods'",
			pod: incoming("default").Label("app", "web").
				RequiredPodAffinity(tu.AffinityTerm(rack, sel("app", "db"))).
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "cache"))).Obj(),
			existing: []*v1.Pod{
				placed("default", "db", "n1").Label("app", "db").Obj(),       // rack r1: n1, n3
				placed("default", "cache", "n2").Label("app", "cache").Obj(), // zone z1: n1, n2
				placed("default", "lonely", "n3").
					RequiredPodAntiAffinity(tu.AffinityTerm(rack, sel("app", "web"))).Obj(), // rack r1: n1, n3
			},
			filter: statuses(antiReject, affinityReject, existingReject, affinityReject),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, feature.Features{}, tc.existing, fixtureNodes())
			cs, st := e.preFilter(t, tc.pod)
			if diff := cmp.Diff(tc.preFilter, tu.StatusString(st)); diff != "" {
				t.Fatalf("PreFilter status (-want +got):\n%s", diff)
			}
			if !st.IsSuccess() {
				return
			}
			if diff := cmp.Diff(tc.filter, e.filterAll(t, cs, tc.pod)); diff != "" {
				t.Errorf("Filter statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNamespaceSemantics checks which namespaces a term covers, through the
// incoming pod's anti-affinity (its terms are expanded through the namespace
// lister) and through an existing pod's anti-affinity (matched against the
// incoming pod's namespace labels).
func TestNamespaceSemantics(t *testing.T) {
	namespaces := []*v1.Namespace{
		tu.MakeNamespace("a", nil),
		tu.MakeNamespace("b", map[string]string{"team": "x"}),
		tu.MakeNamespace("c", map[string]string{"team": "y"}),
		tu.MakeNamespace("prod", map[string]string{"env": "prod"}),
	}
	webTerm := tu.AffinityTerm(zone, sel("app", "web"))

	t.Run("incoming pod's terms", func(t *testing.T) {
		// One web pod per namespace, each alone in its zone, so the
		// rejected zones name the namespaces the term covers.
		nodes := []*v1.Node{
			tu.MakeNode("na").Label(zone, "za").Obj(),
			tu.MakeNode("nb").Label(zone, "zb").Obj(),
			tu.MakeNode("nc").Label(zone, "zc").Obj(),
			tu.MakeNode("nghost").Label(zone, "zghost").Obj(),
		}
		existing := []*v1.Pod{
			placed("a", "web", "na").Label("app", "web").Obj(),
			placed("b", "web", "nb").Label("app", "web").Obj(),
			placed("c", "web", "nc").Label("app", "web").Obj(),
			// a pod in a namespace the lister does not know
			placed("ghost", "web", "nghost").Label("app", "web").Obj(),
		}
		tests := []struct {
			name     string
			term     v1.PodAffinityTerm
			rejected []string
		}{
			{name: "no namespaces, null selector: own namespace", term: webTerm, rejected: []string{"na"}},
			{name: "explicit list", term: tu.InNamespaces(webTerm, "b", "c"), rejected: []string{"nb", "nc"}},
			{name: "explicit list of an unknown namespace", term: tu.InNamespaces(webTerm, "ghost"), rejected: []string{"nghost"}},
			{name: "{} selector: all namespaces, known or not", term: tu.WithNamespaceSelector(webTerm, everything), rejected: []string{"na", "nb", "nc", "nghost"}},
			{name: "{} selector with a list: still all", term: tu.WithNamespaceSelector(tu.InNamespaces(webTerm, "a"), everything), rejected: []string{"na", "nb", "nc", "nghost"}},
			{name: "list united with a selector", term: tu.WithNamespaceSelector(tu.InNamespaces(webTerm, "a"), sel("team", "x")), rejected: []string{"na", "nb"}},
			{name: "selector alone, not the own namespace", term: tu.WithNamespaceSelector(webTerm, sel("team", "y")), rejected: []string{"nc"}},
			{name: "selector matching no namespace", term: tu.WithNamespaceSelector(webTerm, sel("team", "z")), rejected: nil},
			{
				name:     "selector by absence covers only namespaces the lister knows",
				term:     tu.WithNamespaceSelector(webTerm, tu.Selector(nil, tu.SelectorExpr("team", metav1.LabelSelectorOpDoesNotExist))),
				rejected: []string{"na"},
			},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, nil, feature.Features{}, existing, nodes, namespaces...)
				pod := incoming("a").RequiredPodAntiAffinity(tc.term).Obj()
				cs, st := e.preFilter(t, pod)
				if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
					t.FailNow()
				}
				want := map[string]string{"na": pass, "nb": pass, "nc": pass, "nghost": pass}
				for _, n := range tc.rejected {
					want[n] = antiReject
				}
				if diff := cmp.Diff(want, e.filterAll(t, cs, pod)); diff != "" {
					t.Errorf("Filter statuses (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("existing pod's terms", func(t *testing.T) {
		nodes := []*v1.Node{tu.MakeNode("n1").Label(zone, "z1").Obj()}
		anyWeb := tu.AffinityTerm(zone, sel("app", "web"))
		tests := []struct {
			name string
			term v1.PodAffinityTerm
			// podNamespace is the incoming pod's namespace.
			podNamespace string
			want         string
		}{
			{name: "no namespaces, null selector: the owner's namespace", term: anyWeb, podNamespace: "a", want: existingReject},
			{name: "no namespaces, null selector: other namespace", term: anyWeb, podNamespace: "b", want: skip},
			{name: "selector matches the incoming pod's namespace labels", term: tu.WithNamespaceSelector(anyWeb, sel("env", "prod")), podNamespace: "prod", want: existingReject},
			{name: "selector does not match them", term: tu.WithNamespaceSelector(anyWeb, sel("env", "prod")), podNamespace: "b", want: skip},
			{name: "unknown namespace has nil labels: a value selector misses", term: tu.WithNamespaceSelector(anyWeb, sel("env", "prod")), podNamespace: "ghost", want: skip},
			{name: "unknown namespace: {} matches", term: tu.WithNamespaceSelector(anyWeb, everything), podNamespace: "ghost", want: existingReject},
			{
				name:         "unknown namespace: a NotIn selector matches nil labels too",
				term:         tu.WithNamespaceSelector(anyWeb, tu.Selector(nil, tu.SelectorExpr("env", metav1.LabelSelectorOpNotIn, "prod"))),
				podNamespace: "ghost", want: existingReject,
			},
			{name: "list united with a selector: listed", term: tu.WithNamespaceSelector(tu.InNamespaces(anyWeb, "c"), sel("env", "prod")), podNamespace: "c", want: existingReject},
			{name: "list united with a selector: selected", term: tu.WithNamespaceSelector(tu.InNamespaces(anyWeb, "c"), sel("env", "prod")), podNamespace: "prod", want: existingReject},
			{name: "nil namespace selector with a list: only the list", term: tu.InNamespaces(anyWeb, "c"), podNamespace: "a", want: skip},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				existing := []*v1.Pod{placed("a", "guard", "n1").RequiredPodAntiAffinity(tc.term).Obj()}
				e := newEnv(t, nil, feature.Features{}, existing, nodes, namespaces...)
				pod := incoming(tc.podNamespace).Label("app", "web").Obj()
				cs, st := e.preFilter(t, pod)
				got := tu.StatusString(st)
				if st.IsSuccess() {
					got = e.filterAll(t, cs, pod)["n1"]
				}
				if got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			})
		}
	})
}

// TestMatchLabelKeysIgnored: the apiserver folds matchLabelKeys into the
// selector on create; the plugin itself must not read the fields.
func TestMatchLabelKeysIgnored(t *testing.T) {
	term := tu.WithMismatchLabelKeys(tu.WithMatchLabelKeys(tu.AffinityTerm(zone, sel("app", "web")), "version"), "app")
	pod := incoming("default").Label("app", "web").Label("version", "1").RequiredPodAntiAffinity(term).Obj()
	existing := []*v1.Pod{placed("default", "web", "n1").Label("app", "web").Label("version", "2").Obj()}
	e := newEnv(t, nil, feature.Features{}, existing, fixtureNodes())
	cs, st := e.preFilter(t, pod)
	if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
		t.FailNow()
	}
	if diff := cmp.Diff(statuses(antiReject, antiReject, pass, pass), e.filterAll(t, cs, pod)); diff != "" {
		t.Errorf("Filter statuses (-want +got):\n%s", diff)
	}
}

func TestAddRemovePod(t *testing.T) {
	nodes := fixtureNodes()
	t.Run("removing the last matching pod re-enables the first-pod exception", func(t *testing.T) {
		db := placed("default", "db", "n1").Label("app", "db").Obj()
		e := newEnv(t, nil, feature.Features{}, []*v1.Pod{db}, nodes)
		pod := incoming("default").Label("app", "db").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj()
		cs, st := e.preFilter(t, pod)
		if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
			t.FailNow()
		}
		if diff := cmp.Diff(statuses(pass, pass, affinityReject, affinityReject), e.filterAll(t, cs, pod)); diff != "" {
			t.Errorf("before RemovePod (-want +got):\n%s", diff)
		}
		dbInfo := mustPodInfo(t, db)
		if !tu.CheckStatus(t, "RemovePod", e.pl.RemovePod(e.ctx, cs, pod, dbInfo, e.nodeInfo(t, "n1")), fwk.Success, "") {
			t.FailNow()
		}
		// The z1 entry dropped to 0 and is gone: no matching pod anywhere.
		if diff := cmp.Diff(statuses(pass, pass, pass, affinityReject), e.filterAll(t, cs, pod)); diff != "" {
			t.Errorf("after RemovePod (-want +got):\n%s", diff)
		}
		if !tu.CheckStatus(t, "AddPod", e.pl.AddPod(e.ctx, cs, pod, dbInfo, e.nodeInfo(t, "n3")), fwk.Success, "") {
			t.FailNow()
		}
		if diff := cmp.Diff(statuses(affinityReject, affinityReject, pass, affinityReject), e.filterAll(t, cs, pod)); diff != "" {
			t.Errorf("after AddPod on n3 (-want +got):\n%s", diff)
		}
	})

	t.Run("nominated pods on both sides of anti-affinity", func(t *testing.T) {
		e := newEnv(t, nil, feature.Features{}, nil, nodes)
		pod := incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "cache"))).Obj()
		cs, st := e.preFilter(t, pod)
		if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
			t.FailNow()
		}
		cache := mustPodInfo(t, tu.MakePod("default", "cache").Label("app", "cache").Obj())
		guard := mustPodInfo(t, tu.MakePod("default", "guard").RequiredPodAntiAffinity(tu.AffinityTerm(rack, sel("app", "web"))).Obj())
		steps := []struct {
			add  bool
			pi   fwk.PodInfo
			node string
			want map[string]string
		}{
			{add: true, pi: cache, node: "n3", want: statuses(pass, pass, antiReject, pass)},
			{add: true, pi: guard, node: "n2", want: statuses(pass, existingReject, antiReject, pass)},
			{add: false, pi: cache, node: "n3", want: statuses(pass, existingReject, pass, pass)},
			{add: false, pi: guard, node: "n2", want: statuses(pass, pass, pass, pass)},
		}
		for i, s := range steps {
			var st *fwk.Status
			if s.add {
				st = e.pl.AddPod(e.ctx, cs, pod, s.pi, e.nodeInfo(t, s.node))
			} else {
				st = e.pl.RemovePod(e.ctx, cs, pod, s.pi, e.nodeInfo(t, s.node))
			}
			if !tu.CheckStatus(t, fmt.Sprintf("step %d", i), st, fwk.Success, "") {
				t.FailNow()
			}
			if diff := cmp.Diff(s.want, e.filterAll(t, cs, pod)); diff != "" {
				t.Errorf("step %d (-want +got):\n%s", i, diff)
			}
		}
		s := mustState(t, cs)
		if s.existingAntiAffinity.Len() != 0 || s.antiAffinity.Len() != 0 || s.affinity.Len() != 0 {
			t.Errorf("counts not back to empty: %v %v %v", s.existingAntiAffinity, s.antiAffinity, s.affinity)
		}
	})

	t.Run("removing an uncounted pod leaves a negative entry", func(t *testing.T) {
		e := newEnv(t, nil, feature.Features{}, nil, nodes)
		pod := incoming("default").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
		cs, _ := e.preFilter(t, pod)
		web := mustPodInfo(t, tu.MakePod("default", "web").Label("app", "web").Obj())
		e.pl.RemovePod(e.ctx, cs, pod, web, e.nodeInfo(t, "n1"))
		if got, want := mustState(t, cs).antiAffinity.ToMap(), (map[topologyPair]int64{{Key: zone, Value: "z1"}: -1}); !cmp.Equal(got, want) {
			t.Errorf("antiAffinity = %v, want %v", got, want)
		}
		if diff := cmp.Diff(statuses(pass, pass, pass, pass), e.filterAll(t, cs, pod)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestCloneIsIndependent(t *testing.T) {
	existing := []*v1.Pod{
		placed("default", "web", "n1").Label("app", "web").Obj(),
		placed("default", "guard", "n3").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "db"))).Obj(),
	}
	e := newEnv(t, nil, feature.Features{}, existing, fixtureNodes())
	pod := incoming("default").Label("app", "db").
		RequiredPodAffinity(tu.AffinityTerm(rack, sel("app", "web"))).
		RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
	cs, st := e.preFilter(t, pod)
	if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
		t.FailNow()
	}
	before := e.filterAll(t, cs, pod)
	snapshot := mustState(t, cs).Clone().(*preFilterState)

	clone := cs.Clone()
	web := mustPodInfo(t, tu.MakePod("default", "web2").Label("app", "web").Obj())
	guard := mustPodInfo(t, tu.MakePod("default", "guard2").RequiredPodAntiAffinity(tu.AffinityTerm(rack, sel("app", "db"))).Obj())
	for _, n := range []string{"n2", "n4"} {
		e.pl.AddPod(e.ctx, clone, pod, web, e.nodeInfo(t, n))
		e.pl.AddPod(e.ctx, clone, pod, guard, e.nodeInfo(t, n))
	}
	e.pl.RemovePod(e.ctx, clone, pod, mustPodInfo(t, existing[0]), e.nodeInfo(t, "n1"))

	if diff := cmp.Diff(before, e.filterAll(t, cs, pod)); diff != "" {
		t.Errorf("original changed by updates to the clone (-before +after):\n%s", diff)
	}
	orig := mustState(t, cs)
	for name, pair := range map[string][2]map[topologyPair]int64{
		"existingAntiAffinity": {snapshot.existingAntiAffinity.ToMap(), orig.existingAntiAffinity.ToMap()},
		"affinity":             {snapshot.affinity.ToMap(), orig.affinity.ToMap()},
		"antiAffinity":         {snapshot.antiAffinity.ToMap(), orig.antiAffinity.ToMap()},
	} {
		if !cmp.Equal(pair[0], pair[1]) {
			t.Errorf("%s changed: %v -> %v", name, pair[0], pair[1])
		}
	}
	if cmp.Equal(mustState(t, clone).affinity.ToMap(), orig.affinity.ToMap()) {
		t.Errorf("clone's counts did not change; the test proves nothing")
	}
}

// failingInfos is a snapshot whose affinity indexes cannot be read.
type failingInfos struct {
	fwk.NodeInfoLister
}

func (failingInfos) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return nil, errors.New("index unavailable")
}

func (failingInfos) HavePodsWithRequiredNonHostScopedAntiAffinityList() ([]fwk.NodeInfo, error) {
	return nil, errors.New("non-host index unavailable")
}

type failingLister struct {
	fwk.SharedLister
}

func (l failingLister) NodeInfos() fwk.NodeInfoLister {
	return failingInfos{l.SharedLister.NodeInfos()}
}

// TestPreFilterWithoutTerms covers the shortcut for pods without pod
// (anti-)affinity: it must give what the full computation gives, errors
// included, for every pod it applies to and no other.
func TestPreFilterWithoutTerms(t *testing.T) {
	const (
		listErr        = "Error: failed to list NodeInfos with pods with affinity: index unavailable"
		nonHostListErr = "Error: failed to list NodeInfos with pods with required anti-affinity terms where topologyKey != kubernetes.io/hostname: non-host index unavailable"
		badTermErr     = `UnschedulableAndUnresolvable: parsing pod: preferredAffinityTerms: "Bogus" is not a valid label selector operator`
	)
	emptyStructs := incoming("default").Label("app", "web").Obj()
	emptyStructs.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{}, PodAntiAffinity: &v1.PodAntiAffinity{}}
	plain := incoming("default").Label("app", "web").Obj()
	badPreferred := incoming("default").PreferredPodAffinity(tu.Weighted(1,
		tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus"))))).Obj()
	guard := placed("default", "guard", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()

	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		failing  bool
		// want by hostname fast path off, on.
		want [2]string
	}{
		{name: "plain pod, no anti-affinity anywhere", pod: plain, want: [2]string{skip, skip}},
		{name: "empty affinity structs count as none", pod: emptyStructs, want: [2]string{skip, skip}},
		{name: "plain pod, an existing pod's anti-affinity selects it", pod: plain, existing: []*v1.Pod{guard}, want: [2]string{pass, pass}},
		{name: "preferred terms are still parsed", pod: badPreferred, want: [2]string{badTermErr, badTermErr}},
		{name: "plain pod, failing index", pod: plain, failing: true, want: [2]string{listErr, nonHostListErr}},
		{name: "parse errors come before index errors", pod: badPreferred, failing: true, want: [2]string{badTermErr, badTermErr}},
	}
	for _, tc := range tests {
		for i, fts := range []feature.Features{{}, {EnableInterPodAffinityHostnameFastPath: true}} {
			t.Run(fmt.Sprintf("%s/fastpath=%v", tc.name, fts.EnableInterPodAffinityHostnameFastPath), func(t *testing.T) {
				e := newEnv(t, nil, fts, tc.existing, fixtureNodes())
				if tc.failing {
					e.pl.sharedLister = failingLister{e.pl.sharedLister}
				}
				_, st := e.preFilter(t, tc.pod)
				if got := tu.StatusString(st); got != tc.want[i] {
					t.Errorf("PreFilter = %q, want %q", got, tc.want[i])
				}
			})
		}
	}
}

// foreignState stands for another plugin's state stored under our key.
type foreignState struct{}

func (foreignState) Clone() fwk.StateData { return foreignState{} }

// TestMissingState: without PreFilter's state, Filter and the extensions
// fail with upstream's message; a state of another type names both types.
func TestMissingState(t *testing.T) {
	e := newEnv(t, nil, feature.Features{}, nil, fixtureNodes())
	pod := incoming("default").Obj()
	ni := e.nodeInfo(t, "n1")
	pi := mustPodInfo(t, pod)
	const (
		missing = `error reading "PreFilterInterPodAffinity" from cycleState: not found`
		foreign = `cycle state "PreFilterInterPodAffinity" holds interpodaffinity.foreignState, not *interpodaffinity.preFilterState: is another plugin writing the same key?`
	)
	wrongType := framework.NewCycleState()
	wrongType.Write(preFilterStateKey, foreignState{})
	for _, c := range []struct {
		name string
		cs   fwk.CycleState
		want string
	}{
		{name: "missing", cs: framework.NewCycleState(), want: missing},
		{name: "wrong type", cs: wrongType, want: foreign},
	} {
		tu.CheckStatus(t, c.name+": Filter", e.pl.Filter(e.ctx, c.cs, pod, ni), fwk.Error, c.want)
		tu.CheckStatus(t, c.name+": AddPod", e.pl.AddPod(e.ctx, c.cs, pod, pi, ni), fwk.Error, c.want)
		tu.CheckStatus(t, c.name+": RemovePod", e.pl.RemovePod(e.ctx, c.cs, pod, pi, ni), fwk.Error, c.want)
	}
}

func TestResizeDeferred(t *testing.T) {
	existing := []*v1.Pod{placed("default", "guard", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, everything)).Obj()}
	pod := incoming("default").ResizeDeferred().Obj()
	for _, gate := range []bool{false, true} {
		e := newEnv(t, nil, feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: gate}, existing, fixtureNodes())
		cs, st := e.preFilter(t, pod)
		wantPre, wantN1 := pass, existingReject
		if gate {
			wantPre, wantN1 = skip, pass
		}
		if got := tu.StatusString(st); got != wantPre {
			t.Errorf("gate %v: PreFilter %q, want %q", gate, got, wantPre)
		}
		// With the gate, Filter passes even without a state.
		if got := tu.StatusString(e.pl.Filter(e.ctx, cs, pod, e.nodeInfo(t, "n1"))); got != wantN1 {
			t.Errorf("gate %v: Filter(n1) %q, want %q", gate, got, wantN1)
		}
	}
}

// TestHostnameFastPath covers the gate-on variant, including the two
// verified places where it differs from the default.
func TestHostnameFastPath(t *testing.T) {
	// NodeInfo maintains the non-host-scoped index only under the global
	// gate; feature.Features carries the plugin's view.
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, true)
	fastOn := feature.Features{EnableInterPodAffinityHostnameFastPath: true}

	// twins share a hostname label value; loner has none.
	nodes := []*v1.Node{
		tu.MakeNode("twin-a").Label(host, "same").Label(zone, "z1").Obj(),
		tu.MakeNode("twin-b").Label(host, "same").Label(zone, "z1").Obj(),
		tu.MakeNode("loner").NoLabels().Label(zone, "z2").Obj(),
	}
	hostAnti := incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(host, sel("app", "web"))).Obj()
	hostAff := incoming("default").Label("app", "web").RequiredPodAffinity(tu.AffinityTerm(host, sel("app", "web"))).Obj()
	tests := []struct {
		name     string
		pod      *v1.Pod
		existing []*v1.Pod
		off, on  map[string]string
	}{
		{
			name:     "incoming hostname anti-affinity with duplicate hostname values",
			pod:      hostAnti,
			existing: []*v1.Pod{placed("default", "web", "twin-a").Label("app", "web").Obj()},
			off:      map[string]string{"twin-a": antiReject, "twin-b": antiReject, "loner": pass},
			on:       map[string]string{"twin-a": antiReject, "twin-b": pass, "loner": pass},
		},
		{
			name: "existing hostname anti-affinity with duplicate hostname values",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "guard", "twin-a").
				RequiredPodAntiAffinity(tu.AffinityTerm(host, sel("app", "web"))).Obj()},
			off: map[string]string{"twin-a": existingReject, "twin-b": existingReject, "loner": pass},
			on:  map[string]string{"twin-a": existingReject, "twin-b": pass, "loner": pass},
		},
		{
			name:     "self affinity with a matching pod on a node without the hostname label",
			pod:      hostAff,
			existing: []*v1.Pod{placed("default", "web", "loner").Label("app", "web").Obj()},
			off:      map[string]string{"twin-a": pass, "twin-b": pass, "loner": affinityReject},
			on:       map[string]string{"twin-a": affinityReject, "twin-b": affinityReject, "loner": affinityReject},
		},
		{
			name:     "hostname affinity satisfied by the node's own pod",
			pod:      hostAff,
			existing: []*v1.Pod{placed("default", "web", "twin-b").Label("app", "web").Obj()},
			off:      map[string]string{"twin-a": pass, "twin-b": pass, "loner": affinityReject},
			on:       map[string]string{"twin-a": affinityReject, "twin-b": pass, "loner": affinityReject},
		},
		{
			name: "mixed affinity terms stay cluster-wide",
			pod: incoming("default").Label("app", "web").RequiredPodAffinity(
				tu.AffinityTerm(host, sel("app", "web")), tu.AffinityTerm(zone, sel("app", "web"))).Obj(),
			existing: []*v1.Pod{placed("default", "web", "twin-b").Label("app", "web").Obj()},
			off:      map[string]string{"twin-a": pass, "twin-b": pass, "loner": affinityReject},
			on:       map[string]string{"twin-a": pass, "twin-b": pass, "loner": affinityReject},
		},
		{
			name: "zone anti-affinity of existing pods is still counted",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "guard", "twin-a").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			off: map[string]string{"twin-a": existingReject, "twin-b": existingReject, "loner": pass},
			on:  map[string]string{"twin-a": existingReject, "twin-b": existingReject, "loner": pass},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, gate := range []bool{false, true} {
				fts, want := feature.Features{}, tc.off
				if gate {
					fts, want = fastOn, tc.on
				}
				e := newEnv(t, nil, fts, tc.existing, nodes)
				cs, st := e.preFilter(t, tc.pod)
				if !tu.CheckStatus(t, fmt.Sprintf("gate %v: PreFilter", gate), st, fwk.Success, "") {
					t.FailNow()
				}
				if diff := cmp.Diff(want, e.filterAll(t, cs, tc.pod)); diff != "" {
					t.Errorf("gate %v: Filter statuses (-want +got):\n%s", gate, diff)
				}
			}
		})
	}

	t.Run("AddPod feeds the host-scoped self-affinity counter", func(t *testing.T) {
		e := newEnv(t, nil, fastOn, nil, nodes)
		cs, st := e.preFilter(t, hostAff)
		if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
			t.FailNow()
		}
		want := map[string]string{"twin-a": pass, "twin-b": pass, "loner": affinityReject}
		if diff := cmp.Diff(want, e.filterAll(t, cs, hostAff)); diff != "" {
			t.Errorf("before (-want +got):\n%s", diff)
		}
		web := mustPodInfo(t, tu.MakePod("default", "web").Label("app", "web").Obj())
		e.pl.AddPod(e.ctx, cs, hostAff, web, e.nodeInfo(t, "loner"))
		want = map[string]string{"twin-a": affinityReject, "twin-b": affinityReject, "loner": affinityReject}
		if diff := cmp.Diff(want, e.filterAll(t, cs, hostAff)); diff != "" {
			t.Errorf("after AddPod (-want +got):\n%s", diff)
		}
	})

	t.Run("AddPod brings the first hostname anti-affinity pod", func(t *testing.T) {
		// The snapshot has no pod with hostname-scoped anti-affinity, so
		// Filter may skip the node-local scan, until a nominated pod or a
		// reprieved victim with such a term is added to a node.
		pod := incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "none"))).Obj()
		e := newEnv(t, nil, fastOn, nil, nodes)
		cs, st := e.preFilter(t, pod)
		if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
			t.FailNow()
		}
		guard := placed("default", "guard", "twin-a").RequiredPodAntiAffinity(tu.AffinityTerm(host, sel("app", "web"))).Obj()
		withGuard := e.nodeInfo(t, "twin-a").Snapshot()
		withGuard.AddPodInfo(mustPodInfo(t, guard))

		clone := cs.Clone()
		if !tu.CheckStatus(t, "AddPod", e.pl.AddPod(e.ctx, clone, pod, mustPodInfo(t, guard), withGuard), fwk.Success, "") {
			t.FailNow()
		}
		tu.CheckStatus(t, "Filter(twin-a with guard) after AddPod", e.pl.Filter(e.ctx, clone, pod, withGuard), fwk.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		tu.CheckStatus(t, "Filter(twin-b) after AddPod", e.pl.Filter(e.ctx, clone, pod, e.nodeInfo(t, "twin-b")), fwk.Success, "")
		if mustState(t, cs).existingHostAnti {
			t.Errorf("AddPod on a clone changed the original state")
		}
		// Removing the pod again leaves a scan that finds nothing.
		if !tu.CheckStatus(t, "RemovePod", e.pl.RemovePod(e.ctx, clone, pod, mustPodInfo(t, guard), e.nodeInfo(t, "twin-a")), fwk.Success, "") {
			t.FailNow()
		}
		tu.CheckStatus(t, "Filter(twin-a) after RemovePod", e.pl.Filter(e.ctx, clone, pod, e.nodeInfo(t, "twin-a")), fwk.Success, "")
	})

	t.Run("existing hostname-only anti-affinity prevents the Skip", func(t *testing.T) {
		existing := []*v1.Pod{placed("default", "guard", "twin-a").
			RequiredPodAntiAffinity(tu.AffinityTerm(host, sel("app", "db"))).Obj()}
		e := newEnv(t, nil, fastOn, existing, nodes)
		_, st := e.preFilter(t, incoming("default").Obj())
		tu.CheckStatus(t, "PreFilter", st, fwk.Success, "")
	})
}

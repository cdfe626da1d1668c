package aggregate

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	fwk "k8s.io/kube-scheduler/framework"
)

func selector(t *testing.T, reqs ...[]string) labels.Selector {
	t.Helper()
	sel := labels.NewSelector()
	for _, r := range reqs {
		req, err := labels.NewRequirement(r[0], selection.Operator(r[1]), r[2:])
		if err != nil {
			t.Fatal(err)
		}
		sel = sel.Add(*req)
	}
	return sel
}

// A selector is filed under the requirement with the fewest distinct
// values among those a label must meet by value; one with none is filed
// under no label.
func TestFiling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reqs   [][]string
		key    string
		values []string
	}{
		{"empty", nil, "", nil},
		{"equals", [][]string{{"app", "=", "web"}}, "app", []string{"web"}},
		{"in, a value twice", [][]string{{"app", "in", "b", "a", "b"}}, "app", []string{"a", "b"}},
		{"the fewest values", [][]string{{"app", "in", "a", "b"}, {"tier", "in", "front"}}, "tier", []string{"front"}},
		{"only notin and exists", [][]string{{"app", "notin", "a"}, {"tier", "exists"}}, "", nil},
		{"notin beside in", [][]string{{"app", "notin", "a"}, {"tier", "in", "x", "y"}}, "tier", []string{"x", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, values, ok := filing(selector(t, tc.reqs...))
			if ok != (tc.key != "") || key != tc.key || !slices.Equal(values, tc.values) {
				t.Errorf("filing %q %v %v, want %q %v", key, values, ok, tc.key, tc.values)
			}
		})
	}
	if _, _, ok := filing(labels.Nothing()); ok {
		t.Error("Nothing() filed under a label")
	}
}

// Each entry a query may concern is visited once, and entries removed are
// visited no more.
func TestIndexes(t *testing.T) {
	entry := func(reqs ...[]string) *termEntry {
		return &termEntry{term: fwk.AffinityTerm{Selector: selector(t, reqs...), TopologyKey: "zone"}}
	}
	inAB := entry([]string{"app", "in", "a", "b", "a"})
	anyApp := entry([]string{"app", "exists"})
	onlyB := entry([]string{"app", "=", "b"}, []string{"tier", "in", "x", "y"})
	var ti termIndex
	for _, e := range []*termEntry{inAB, anyApp, onlyB} {
		ti.add(e)
	}
	visits := func(podLabels map[string]string) map[*termEntry]int {
		got := map[*termEntry]int{}
		ti.each(podLabels, func(e *termEntry) { got[e]++ })
		return got
	}
	got := visits(map[string]string{"app": "a", "tier": "x"})
	if got[inAB] != 1 || got[anyApp] != 1 || got[onlyB] != 0 {
		t.Errorf("app=a: %v", got)
	}
	got = visits(map[string]string{"app": "b", "tier": "y"})
	if got[inAB] != 1 || got[anyApp] != 1 || got[onlyB] != 1 {
		t.Errorf("app=b,tier=y: %v", got)
	}
	ti.remove(inAB)
	ti.remove(anyApp)
	if got = visits(map[string]string{"app": "b", "tier": "x"}); len(got) != 1 || got[onlyB] != 1 {
		t.Errorf("after removals, app=b,tier=x: %v, want only the entry filed under app=b", got)
	}
	if got = visits(map[string]string{"app": "a", "tier": "x"}); len(got) != 0 {
		t.Errorf("after removals, app=a,tier=x: %v, want none", got)
	}

	class := func(l map[string]string) *podClass {
		return &podClass{pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: l}}}
	}
	ca, cb, cn := class(map[string]string{"app": "a", "tier": "x"}), class(map[string]string{"app": "b"}), class(nil)
	all := []*podClass{ca, cb, cn}
	var ci classIndex
	for _, c := range all {
		ci.add(c)
	}
	classVisits := func(sel labels.Selector) map[*podClass]int {
		got := map[*podClass]int{}
		ci.each(all, sel, func(c *podClass) { got[c]++ })
		return got
	}
	if got := classVisits(selector(t, []string{"app", "in", "a", "b", "b"})); len(got) != 2 || got[ca] != 1 || got[cb] != 1 {
		t.Errorf("app in (a, b): %v", got)
	}
	if got := classVisits(selector(t, []string{"app", "notin", "a"})); len(got) != 3 {
		t.Errorf("app notin (a) visits every class once: %v", got)
	}
	ci.remove(ca)
	if got := classVisits(selector(t, []string{"tier", "=", "x"})); len(got) != 0 {
		t.Errorf("tier=x after its class left: %v", got)
	}
}

package topology

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// TestTopologyTableReadsAsTheNodes evolves a node list the ways a snapshot
// does (pods bound, nodes relabelled, added, removed, the list reordered)
// and asks for keys in turn, more than the table copies. After every step,
// every node's values read through the view must be its labels, a NodeInfo
// outside the list (a clone) must read its own labels, and every view
// handed out before must still read what it read then.
func TestTopologyTableReadsAsTheNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	keys := make([]string, maxTopologyKeys+3)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	newNode := func(name string) *framework.NodeInfo {
		w := tu.MakeNode(name).Label(v1.LabelHostname, name)
		for _, k := range keys {
			if rng.IntN(4) != 0 { // some nodes lack some keys
				w = w.Label(k, fmt.Sprintf("v%d", rng.IntN(3)))
			}
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(w.Obj())
		return ni
	}
	var nodes []fwk.NodeInfo
	for i := range 30 {
		nodes = append(nodes, newNode(fmt.Sprint("n", i)))
	}

	// expect reads every key of every node through view, and of a clone.
	expect := func(view *View, nodes []fwk.NodeInfo, labels []map[string]string) error {
		for i, ni := range nodes {
			for _, k := range append(slices.Clone(keys), v1.LabelHostname, "absent") {
				nt := Of(view, ni)
				v, ok := nt.Get(k)
				wv, wok := labels[i][k]
				if v != wv || ok != wok {
					return fmt.Errorf("node %d key %s: got %q,%v want %q,%v", i, k, v, ok, wv, wok)
				}
			}
		}
		return nil
	}
	labelsOf := func(nodes []fwk.NodeInfo) []map[string]string {
		var out []map[string]string
		for _, ni := range nodes {
			out = append(out, maps.Clone(ni.Node().Labels))
		}
		return out
	}
	type lent struct {
		view *View
		// keys are the view's keys when it was handed out.
		keys   []string
		nodes  []fwk.NodeInfo
		labels []map[string]string
	}
	var handedOut []lent
	tab := Table{primed: true}
	cs := framework.NewCycleState()
	inView := 0
	for step := range 400 {
		switch r := rng.IntN(100); {
		case r < 40:
			ni := nodes[rng.IntN(len(nodes))].(*framework.NodeInfo)
			ni.AddPod(at.Placed("default", fmt.Sprint("p", step), ni.Node().Name).Obj())
		case r < 60:
			// Relabel a node in place, as the snapshot does: same
			// NodeInfo, new Node object, new generation.
			ni := nodes[rng.IntN(len(nodes))].(*framework.NodeInfo)
			n := ni.Node().DeepCopy()
			k := keys[rng.IntN(len(keys))]
			if rng.IntN(3) == 0 {
				delete(n.Labels, k)
			} else {
				n.Labels[k] = fmt.Sprintf("v%d", rng.IntN(3))
			}
			ni.SetNode(n)
		case r < 70:
			nodes = slices.Insert(nodes, rng.IntN(len(nodes)+1), fwk.NodeInfo(newNode(fmt.Sprint("m", step))))
		case r < 80 && len(nodes) > 5:
			i := rng.IntN(len(nodes))
			nodes = slices.Delete(nodes, i, i+1)
		case r < 85:
			rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		}
		// The list the snapshot hands out is its own slice; sync must
		// not keep the caller's.
		list := slices.Clone(nodes)
		ask := []string{keys[rng.IntN(len(keys))], keys[rng.IntN(3)]}
		var gens []int64
		var used *View
		view := tab.Sync(cs, list, ask, func(g []int64, v *View) { gens, used = slices.Clone(g), v })
		if view == nil {
			t.Fatalf("step %d: no view", step)
		}
		if used != view {
			// The indexes read labels through the view use gets: it must
			// be the one Filter and Score get.
			t.Fatalf("step %d: use got view %p, sync returned %p", step, used, view)
		}
		for i, ni := range list {
			if gens[i] != ni.GetGeneration() {
				t.Fatalf("step %d: gens[%d] = %d, want %d", step, i, gens[i], ni.GetGeneration())
			}
		}
		for _, k := range ask {
			if !slices.Contains(view.keys, k) {
				t.Fatalf("step %d: key %s asked for is not copied (%v)", step, k, view.keys)
			}
		}
		inView += len(view.keys)
		if err := expect(view, list, labelsOf(list)); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		// A clone of a listed NodeInfo (nominated pods, preemption) is
		// not a row and reads its own labels, which may differ.
		clone := list[0].Snapshot()
		n := clone.Node().DeepCopy()
		n.Labels[ask[0]] = "clone-only"
		clone.SetNode(n)
		if err := expect(view, []fwk.NodeInfo{clone}, labelsOf([]fwk.NodeInfo{clone})); err != nil {
			t.Fatalf("step %d: clone: %v", step, err)
		}
		if rng.IntN(4) == 0 {
			handedOut = append(handedOut, lent{view: view, keys: slices.Clone(view.keys), nodes: list, labels: labelsOf(list)})
		}
	}
	if inView == 0 || len(handedOut) < 50 {
		t.Fatalf("the test exercised too little: %d keys read from views, %d views kept", inView, len(handedOut))
	}
	for i, h := range handedOut {
		// Only the keys the view copies are its own; others are read
		// from the (since changed) nodes, so compare those alone.
		if !slices.Equal(h.keys, h.view.keys) {
			t.Fatalf("view %d's keys changed after it was handed out: %v, were %v", i, h.view.keys, h.keys)
		}
		for j, ni := range h.nodes {
			nt := Of(h.view, ni)
			for _, k := range h.keys {
				v, ok := nt.Get(k)
				wv, wok := h.labels[j][k]
				if v != wv || ok != wok {
					t.Fatalf("view %d changed after it was handed out: node %d key %s reads %q,%v, held %q,%v", i, j, k, v, ok, wv, wok)
				}
			}
		}
	}
}

// TestTopologyTableOff: a table not primed hands out no view on its
// first call, and the generations are then read by the caches themselves.
func TestTopologyTableOff(t *testing.T) {
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1")}
	var off Table
	called := false
	if v := off.Sync(framework.NewCycleState(), nodes, []string{at.Zone}, func(g []int64, v *View) { called = g == nil && v == nil }); v != nil || !called {
		t.Errorf("disabled table: view %v, use called with nil: %v", v, called)
	}
}

// otherNodeInfo is a NodeInfo of another implementation than the
// framework's: the table has no row for it.
type otherNodeInfo struct{ *framework.NodeInfo }

// TestTopologyTableEdges: the cases the snapshot does not produce but a
// caller might.
func TestTopologyTableEdges(t *testing.T) {
	// Each call is a cycle of its own: within one, the nodes'
	// generations are read once (nodegen).
	cs := func() fwk.CycleState { return framework.NewCycleState() }
	read := func(t *testing.T, view *View, ni fwk.NodeInfo, key string) string {
		t.Helper()
		nt := Of(view, ni)
		v, ok := nt.Get(key)
		if wv, wok := ni.Node().Labels[key]; v != wv || ok != wok {
			t.Fatalf("%s reads %q,%v, node has %q,%v", key, v, ok, wv, wok)
		}
		return v
	}
	noop := func([]int64, *View) {}

	t.Run("unchanged list, same view", func(t *testing.T) {
		tab := Table{primed: true}
		nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1"), at.ZoneNode("b", "z2")}
		v1 := tab.Sync(cs(), nodes, []string{at.Zone}, noop)
		nodes[0].(*framework.NodeInfo).AddPod(at.Placed("default", "p", "a").Obj())
		if v2 := tab.Sync(cs(), nodes, []string{at.Zone}, noop); v2 != v1 {
			t.Errorf("a pod bound, labels unchanged: a new view was made")
		}
	})

	t.Run("a node listed twice", func(t *testing.T) {
		tab := Table{primed: true}
		a := at.ZoneNode("a", "z1")
		nodes := []fwk.NodeInfo{a, at.ZoneNode("b", "z2"), a}
		view := tab.Sync(cs(), nodes, []string{at.Zone}, noop)
		for _, ni := range nodes {
			read(t, view, ni, at.Zone)
		}
	})

	t.Run("generation 0 proves nothing", func(t *testing.T) {
		tab := Table{primed: true}
		a := at.ZoneNode("a", "z1")
		a.Generation = 0
		nodes := []fwk.NodeInfo{a}
		tab.Sync(cs(), nodes, []string{at.Zone}, noop)
		n := a.Node().DeepCopy()
		n.Labels[at.Zone] = "z7"
		a.SetNode(n)
		a.Generation = 0
		if v := read(t, tab.Sync(cs(), nodes, []string{at.Zone}, noop), a, at.Zone); v != "z7" {
			t.Errorf("relabelled NodeInfo of generation 0 reads %q", v)
		}
	})

	t.Run("another NodeInfo implementation, then the framework's again", func(t *testing.T) {
		tab := Table{primed: true}
		a := at.ZoneNode("a", "z1")
		tab.Sync(cs(), []fwk.NodeInfo{a}, []string{at.Zone}, noop)
		var got []int64
		if v := tab.Sync(cs(), []fwk.NodeInfo{a, otherNodeInfo{at.ZoneNode("b", "z2")}}, []string{at.Zone}, func(g []int64, _ *View) { got = g }); v != nil || got != nil {
			t.Fatalf("foreign NodeInfo: view %v, gens %v; want none", v, got)
		}
		nodes := []fwk.NodeInfo{at.ZoneNode("c", "z3"), a}
		view := tab.Sync(cs(), nodes, []string{at.Zone, v1.LabelHostname}, noop)
		if view == nil {
			t.Fatal("no view for a framework list after a foreign one")
		}
		for _, ni := range nodes {
			read(t, view, ni, at.Zone)
			read(t, view, ni, v1.LabelHostname)
		}
	})

	t.Run("more keys in one call than are copied", func(t *testing.T) {
		tab := Table{primed: true}
		w := tu.MakeNode("a")
		var keys []string
		for i := range maxTopologyKeys + 2 {
			k := fmt.Sprint("k", i)
			keys = append(keys, k)
			w = w.Label(k, fmt.Sprint("v", i))
		}
		a := framework.NewNodeInfo()
		a.SetNode(w.Obj())
		view := tab.Sync(cs(), []fwk.NodeInfo{a}, keys, noop)
		if len(view.keys) != maxTopologyKeys {
			t.Errorf("%d keys copied, want %d", len(view.keys), maxTopologyKeys)
		}
		for _, k := range keys {
			read(t, view, a, k)
		}
		// The next call's keys evict the least recently used.
		view = tab.Sync(cs(), []fwk.NodeInfo{a}, keys[maxTopologyKeys:], noop)
		for _, k := range keys[maxTopologyKeys:] {
			if !slices.Contains(view.keys, k) {
				t.Errorf("key %s asked for alone is not copied: %v", k, view.keys)
			}
		}
	})

	t.Run("values that come and go", func(t *testing.T) {
		tab := Table{primed: true}
		a := at.ZoneNode("a", "z0")
		nodes := []fwk.NodeInfo{a}
		for i := range 4 * maxTopologyKeys {
			n := a.Node().DeepCopy()
			n.Labels[at.Zone] = fmt.Sprint("z", i)
			a.SetNode(n)
			if v := read(t, tab.Sync(cs(), nodes, []string{at.Zone}, noop), a, at.Zone); v != n.Labels[at.Zone] {
				t.Fatalf("step %d: %q", i, v)
			}
		}
		if len(tab.intern) > 2*maxTopologyKeys+1 {
			t.Errorf("%d interned values for one node and one key", len(tab.intern))
		}
	})

	t.Run("views are read while the table changes", func(t *testing.T) {
		// Run with -race: Filter reads a handed-out view from many
		// goroutines while the next cycle syncs.
		tab := Table{primed: true}
		var nodes []fwk.NodeInfo
		for i := range 20 {
			nodes = append(nodes, at.ZoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%3)))
		}
		view := tab.Sync(cs(), nodes, []string{at.Zone}, noop)
		want := make([]string, len(nodes))
		for i, ni := range nodes {
			want[i] = ni.Node().Labels[at.Zone]
		}
		done := make(chan error)
		go func() {
			for range 200 {
				for i, ni := range nodes {
					nt := Of(view, ni)
					if v, _ := nt.Get(at.Zone); v != want[i] {
						done <- fmt.Errorf("node %d reads %q, held %q", i, v, want[i])
						return
					}
				}
			}
			done <- nil
		}()
		for i := range 200 {
			ni := nodes[i%len(nodes)].(*framework.NodeInfo)
			n := ni.Node().DeepCopy()
			n.Labels[at.Zone] = fmt.Sprint("z", i)
			ni.SetNode(n)
			tab.Sync(cs(), slices.Clone(nodes[:len(nodes)-i%2]), []string{at.Zone, fmt.Sprint("k", i%12)}, noop)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

package nodegen

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// read returns a copy of what r hands out for cs and nodes.
func read(r *Reader, cs fwk.CycleState, nodes []fwk.NodeInfo) []int64 {
	var got []int64
	r.With(cs, nodes, func(gens []int64) { got = slices.Clone(gens) })
	return got
}

// TestWithReadsOncePerCycle: within one cycle (one CycleState or its
// clones) the same list is read once; another list, another cycle or no
// cycle state reads the nodes as they are.
func TestWithReadsOncePerCycle(t *testing.T) {
	a, b := at.ZoneNode("a", "z1"), at.ZoneNode("b", "z2")
	nodes := []fwk.NodeInfo{a, b}
	cs := framework.NewCycleState()
	var r Reader

	first := read(&r, cs, nodes)
	if want := at.Generations(nodes); !slices.Equal(first, want) {
		t.Fatalf("first read %v, nodes are at %v", first, want)
	}
	// A node that changes within a cycle (the snapshot does not; the
	// test does, to see whether the nodes are read again) is not read
	// again in the same cycle, nor in a clone of its state (nominated
	// pods, preemption).
	a.AddPod(at.Placed("default", "p", "a").Obj())
	if again := read(&r, cs, nodes); !slices.Equal(again, first) {
		t.Errorf("the same list in the same cycle was read again: %v, first %v", again, first)
	}
	if cloned := read(&r, cs.Clone(), nodes); !slices.Equal(cloned, first) {
		t.Errorf("a clone of the cycle state read the list again: %v, first %v", cloned, first)
	}

	// The next cycle reads the node at its new generation.
	if next := read(&r, framework.NewCycleState(), nodes); !slices.Equal(next, at.Generations(nodes)) || next[0] == first[0] {
		t.Errorf("next cycle read %v, nodes are at %v (first cycle %v)", next, at.Generations(nodes), first)
	}
	if none := read(&r, nil, nodes); !slices.Equal(none, at.Generations(nodes)) {
		t.Errorf("without a cycle state: %v, nodes are at %v", none, at.Generations(nodes))
	}

	// Another list in the same cycle, even of the same nodes or a prefix
	// of the same array, is read for itself.
	for name, other := range map[string][]fwk.NodeInfo{
		"a copy":    slices.Clone(nodes),
		"a prefix":  nodes[:1],
		"reordered": {b, a},
		"empty":     nil,
	} {
		if got := read(&r, cs, other); !slices.Equal(got, at.Generations(other)) {
			t.Errorf("%s: read %v, nodes are at %v", name, got, at.Generations(other))
		}
	}
}

// TestWithCyclesInterleaved: a call for a cycle after another cycle's
// (or list's) call reads the nodes again rather than hand out what was
// read for the other; a longer list after a shorter one is read whole.
func TestWithCyclesInterleaved(t *testing.T) {
	short := []fwk.NodeInfo{at.ZoneNode("a", "z1")}
	long := []fwk.NodeInfo{at.ZoneNode("b", "z1"), at.ZoneNode("c", "z2"), at.ZoneNode("d", "z2")}
	one, two := framework.NewCycleState(), framework.NewCycleState()
	var r Reader
	for step, c := range []struct {
		cs    fwk.CycleState
		nodes []fwk.NodeInfo
	}{{one, short}, {two, long}, {one, short}, {one, long}, {two, long}, {two, short}} {
		if step == 3 {
			long[1].(*framework.NodeInfo).AddPod(at.Placed("default", "p", "c").Obj())
		}
		if got, want := read(&r, c.cs, c.nodes), at.Generations(c.nodes); !slices.Equal(got, want) {
			t.Errorf("step %d: read %v, nodes are at %v", step, got, want)
		}
	}
}

// TestWithKeepsItsBuffer: a cycle's read, once the cycle's mark is
// written, allocates nothing; the buffer is the one the last read used.
func TestWithKeepsItsBuffer(t *testing.T) {
	nodes := make([]fwk.NodeInfo, 100)
	for i := range nodes {
		nodes[i] = at.ZoneNode(fmt.Sprint("n", i), "z1")
	}
	var r Reader
	var first *int64
	r.With(framework.NewCycleState(), nodes, func(gens []int64) { first = &gens[0] })
	states := make([]fwk.CycleState, 10)
	for i := range states {
		states[i] = framework.NewCycleState()
		cycleOf(states[i])
	}
	i := 0
	var same bool
	allocs := testing.AllocsPerRun(len(states)-1, func() {
		r.With(states[i], nodes, func(gens []int64) { same = &gens[0] == first })
		i++
	})
	if allocs != 0 || !same {
		t.Errorf("a cycle's read allocates %v times, same buffer: %v", allocs, same)
	}
}

// TestWithConcurrent: cycles that read at once each see their own list's
// generations (run with -race).
func TestWithConcurrent(t *testing.T) {
	lists := make([][]fwk.NodeInfo, 4)
	for i := range lists {
		for j := range 50 + i {
			lists[i] = append(lists[i], at.ZoneNode(fmt.Sprint("n", i, "-", j), "z1"))
		}
	}
	var r Reader
	var wg sync.WaitGroup
	errs := make(chan error, len(lists))
	for i := range lists {
		wg.Go(func() {
			for range 200 {
				cs := framework.NewCycleState()
				for range 2 {
					if got, want := read(&r, cs, lists[i]), at.Generations(lists[i]); !slices.Equal(got, want) {
						errs <- fmt.Errorf("list %d: read %v, nodes are at %v", i, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestShared: handles on one Reader share its read within a cycle; a zero
// handle reads through a Reader of its own.
func TestShared(t *testing.T) {
	a := at.ZoneNode("a", "z1")
	nodes := []fwk.NodeInfo{a}
	cs := framework.NewCycleState()
	with := func(s *Shared) []int64 {
		var got []int64
		s.With(cs, nodes, func(gens []int64) { got = slices.Clone(gens) })
		return got
	}
	r := &Reader{}
	one, two := Share(r), Share(r)
	var alone Shared
	first := with(&one)
	a.AddPod(at.Placed("default", "p", "a").Obj())
	if got := with(&two); !slices.Equal(got, first) {
		t.Errorf("a second handle on the Reader read the list again in the same cycle: %v, first %v", got, first)
	}
	if got := with(&alone); !slices.Equal(got, at.Generations(nodes)) {
		t.Errorf("a zero handle read %v, nodes are at %v", got, at.Generations(nodes))
	}
}

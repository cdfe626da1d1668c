package nodegen

import (
	"slices"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

func generations(nodes []fwk.NodeInfo) []int64 {
	out := make([]int64, len(nodes))
	for i, ni := range nodes {
		out[i] = ni.GetGeneration()
	}
	return out
}

// TestOfReadsOncePerCycle: within one cycle (one CycleState) the same
// list is read once; another list, another cycle or no cycle state reads
// the nodes as they are.
func TestOfReadsOncePerCycle(t *testing.T) {
	a, b := at.ZoneNode("a", "z1"), at.ZoneNode("b", "z2")
	nodes := []fwk.NodeInfo{a, b}
	cs := framework.NewCycleState()

	first := Of(cs, nodes)
	if want := generations(nodes); !slices.Equal(first, want) {
		t.Fatalf("first read %v, nodes are at %v", first, want)
	}
	if again := Of(cs, nodes); &again[0] != &first[0] {
		t.Errorf("the same list in the same cycle was read again")
	}
	// A clone of the cycle state (nominated pods, preemption) shares the
	// read.
	if cloned := Of(cs.Clone(), nodes); &cloned[0] != &first[0] {
		t.Errorf("a clone of the cycle state read the list again")
	}

	// The snapshot changes only between cycles; a node that changed is
	// read at its new generation in the next cycle.
	a.AddPod(at.Placed("default", "p", "a").Obj())
	if next := Of(framework.NewCycleState(), nodes); !slices.Equal(next, generations(nodes)) || next[0] == first[0] {
		t.Errorf("next cycle read %v, nodes are at %v (first cycle %v)", next, generations(nodes), first)
	}
	if none := Of(nil, nodes); !slices.Equal(none, generations(nodes)) {
		t.Errorf("without a cycle state: %v, nodes are at %v", none, generations(nodes))
	}

	// Another list in the same cycle, even of the same nodes or a prefix
	// of the same array, is read for itself.
	for name, other := range map[string][]fwk.NodeInfo{
		"a copy":    slices.Clone(nodes),
		"a prefix":  nodes[:1],
		"reordered": {b, a},
		"empty":     nil,
	} {
		got := Of(cs, other)
		if !slices.Equal(got, generations(other)) {
			t.Errorf("%s: read %v, nodes are at %v", name, got, generations(other))
		}
	}
}

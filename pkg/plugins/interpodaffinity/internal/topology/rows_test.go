package topology

import (
	"fmt"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestRowsFindEachListedNodeAtItsRow: every listed NodeInfo is found at
// its position, and a NodeInfo that is not listed (a clone of a listed one,
// as nominated pods and preemption make, or another node) is found nowhere,
// for lists of every size up to past a few table resizes.
func TestRowsFindEachListedNodeAtItsRow(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 100, 1000, 5000} {
		t.Run(fmt.Sprint(n, "Nodes"), func(t *testing.T) {
			nodes := make([]*framework.NodeInfo, n)
			for i := range nodes {
				nodes[i] = framework.NewNodeInfo()
			}
			r := newRows(nodes)
			if len(r.slots) < 2*n {
				t.Fatalf("%d slots for %d rows: searches would run long", len(r.slots), n)
			}
			for i, p := range nodes {
				if row, ok := r.row(p); !ok || row != int32(i) {
					t.Fatalf("node %d: found %v at row %d", i, ok, row)
				}
			}
			for i := range min(n, 50) {
				if row, ok := r.row(nodes[i].SnapshotConcrete()); ok {
					t.Fatalf("a clone of node %d was found at row %d", i, row)
				}
			}
			for range 50 {
				if row, ok := r.row(framework.NewNodeInfo()); ok {
					t.Fatalf("a node not listed was found at row %d", row)
				}
			}
		})
	}
}

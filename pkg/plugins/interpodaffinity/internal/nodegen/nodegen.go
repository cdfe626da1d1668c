// Package nodegen reads a cycle's node generations once for every cache
// that sweeps the cycle's node list.
//
// Each cache of the plugin (the sums' records, the classes, the topology
// view) checks every listed node's generation every cycle, to find the
// nodes whose pods or labels changed. Reading a generation goes through
// the node's NodeInfo, a pointer into the heap per node: at thousands of
// nodes, several such passes a cycle cost more than the comparisons they
// feed. The snapshot does not change within a scheduling cycle, so one
// read serves them all: the first cache to ask in a cycle reads the list's
// generations into a slice and keeps it in the cycle's state, and the
// others, in PreFilter and in PreScore, compare their own generations by
// position against that slice.
//
// Memory: one int64 per listed node, for the length of one cycle.
package nodegen

import (
	fwk "k8s.io/kube-scheduler/framework"
)

// stateKey is where a cycle's read is kept in its CycleState.
const stateKey fwk.StateKey = "placement-scheduler.io/node-generations"

// read is the generations of one list, by position.
type read struct {
	nodes []fwk.NodeInfo
	gens  []int64
}

// Clone shares the read: it is never changed once written.
func (r *read) Clone() fwk.StateData { return r }

// Of returns the generation of each of nodes, by position. The first call
// in a cycle reads them from the nodes and keeps them in cs; a later call
// in the same cycle (same cs) with the same list (the same slice: the
// snapshot's, which does not change within a cycle) returns the same
// slice. The caller must not change it. Without cs, or for another list,
// it reads them again.
func Of(cs fwk.CycleState, nodes []fwk.NodeInfo) []int64 {
	if cs != nil {
		if d, err := cs.Read(stateKey); err == nil {
			if r, ok := d.(*read); ok && sameSlice(r.nodes, nodes) {
				return r.gens
			}
		}
	}
	gens := make([]int64, len(nodes))
	for i, ni := range nodes {
		gens[i] = ni.GetGeneration()
	}
	if cs != nil {
		cs.Write(stateKey, &read{nodes: nodes, gens: gens})
	}
	return gens
}

// sameSlice reports whether a and b are one slice: same length and, for
// a non-empty one, the same first element in memory.
func sameSlice(a, b []fwk.NodeInfo) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

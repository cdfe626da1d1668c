package topology

// This file holds how a view finds a NodeInfo's row. Filter and Score look
// up the row of every node they are given, hundreds to thousands a cycle,
// and a map keyed by the NodeInfo's pointer cost more there than the rest
// of the topology reads: its buckets are several times the size of the
// few bytes a row needs, and at thousands of nodes they miss the caches.

import (
	"math/bits"
	"unsafe"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// rows is a read-only set of NodeInfos, each with its row (its position
// in the list it was made from): open addressing over a hash of the
// NodeInfo's address. The address only picks where the search starts;
// a row is found by comparing the pointers themselves, so a NodeInfo
// that is not listed is never given a row.
type rows struct {
	// nodes are the NodeInfos by row; holding them keeps each one, and so
	// its address, from being freed and reused by another.
	nodes []*framework.NodeInfo
	// slots hold a row plus one, 0 for none; their count is a power of
	// two at least twice the rows' (and at least 2), so that most searches
	// look at one slot and every search ends at an empty one.
	slots []int32
	shift uint
}

// newRows indexes nodes by position.
func newRows(nodes []*framework.NodeInfo) rows {
	size := 2 * max(len(nodes), 1)
	logSize := bits.Len(uint(size - 1))
	r := rows{nodes: nodes, slots: make([]int32, 1<<logSize), shift: uint(64 - logSize)}
	for i, p := range nodes {
		s := r.start(p)
		for r.slots[s] != 0 {
			s = (s + 1) & (len(r.slots) - 1)
		}
		r.slots[s] = int32(i + 1)
	}
	return r
}

// start is the slot a search for p starts at: Fibonacci hashing of its
// address, whose high bits the multiplication mixes from all of them.
func (r *rows) start(p *framework.NodeInfo) int {
	return int((uint64(uintptr(unsafe.Pointer(p))) * 0x9e3779b97f4a7c15) >> r.shift)
}

// row returns p's row, and whether p is one of the nodes.
func (r *rows) row(p *framework.NodeInfo) (int32, bool) {
	if len(r.nodes) == 0 {
		return 0, false
	}
	for s := r.start(p); ; s = (s + 1) & (len(r.slots) - 1) {
		i := r.slots[s]
		if i == 0 {
			return 0, false
		}
		if r.nodes[i-1] == p {
			return i - 1, true
		}
	}
}

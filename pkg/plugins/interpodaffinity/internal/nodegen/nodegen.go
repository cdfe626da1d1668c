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
// generations into the Reader's buffer, and the others, in PreFilter and
// in PreScore, compare their own generations by position against it.
//
// The buffer is kept between cycles rather than made anew in each: at
// 15,000 nodes a new slice a cycle (120 KB) cost about half as much CPU
// again as the reads themselves, in allocation and the garbage
// collection it paid for. Reusing it is safe because no cache keeps it
// past the call it was handed to (each copies what it keeps) and the
// Reader hands it out under its lock, so a cycle never sees it change
// under it.
//
// Memory: one int64 per node of the longest list read, and a reference to
// the last list read, kept for the life of the plugin.
package nodegen

import (
	"sync"

	fwk "k8s.io/kube-scheduler/framework"
)

// stateKey is where a cycle's mark is kept in its CycleState.
const stateKey fwk.StateKey = "placement-scheduler.io/node-generations"

// cycle marks one scheduling cycle's CycleState (and its clones, which
// belong to the same cycle). It has a size, so that two live marks never
// share an address, and the Reader holds the last one, so that its address
// is not reused for a later cycle's.
type cycle struct{ _ byte }

// Clone shares the mark: a clone is of the same cycle.
func (c *cycle) Clone() fwk.StateData { return c }

// Reader reads node generations into a buffer it keeps, once per cycle
// and list. The zero value is ready; it is shared by the caches of one
// plugin and safe for concurrent use.
type Reader struct {
	mu sync.Mutex
	// cycle and nodes: the cycle (nil: none) and list that buf was read
	// for.
	cycle *cycle
	nodes []fwk.NodeInfo
	buf   []int64
}

// With calls use with the generation of each of nodes, by position. The
// first call in a cycle (same cs or a clone of it) reads them from the
// nodes; a later call in the same cycle with the same list (the same
// slice: the snapshot's, which does not change within a cycle) hands out
// what that read found, unless a call for another cycle or list came in
// between, which reads again. Without cs, it reads them again.
//
// use must not keep gens nor change it, and must not call With on r: it
// runs under r's lock.
func (r *Reader) With(cs fwk.CycleState, nodes []fwk.NodeInfo, use func(gens []int64)) {
	c := cycleOf(cs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c == nil || c != r.cycle || !sameSlice(r.nodes, nodes) {
		r.buf = readInto(r.buf, nodes)
		r.cycle, r.nodes = c, nodes
	}
	use(r.buf)
}

// Shared is a cache's handle on the Reader it shares with the plugin's
// other caches over the same lists (Share). The zero value reads through a
// Reader of its own, made on first use (a cache built alone, as in its
// tests). Its owner's lock guards it.
type Shared struct{ r *Reader }

// Share returns a handle on r.
func Share(r *Reader) Shared { return Shared{r: r} }

// With is the shared Reader's With.
func (s *Shared) With(cs fwk.CycleState, nodes []fwk.NodeInfo, use func(gens []int64)) {
	if s.r == nil {
		s.r = &Reader{}
	}
	s.r.With(cs, nodes, use)
}

// readInto reads the generations of nodes into buf, grown as needed.
func readInto(buf []int64, nodes []fwk.NodeInfo) []int64 {
	if cap(buf) < len(nodes) {
		buf = make([]int64, len(nodes))
	}
	buf = buf[:len(nodes)]
	for i, ni := range nodes {
		buf[i] = ni.GetGeneration()
	}
	return buf
}

// cycleOf is cs's mark, written on the first call; nil without cs.
func cycleOf(cs fwk.CycleState) *cycle {
	if cs == nil {
		return nil
	}
	if d, err := cs.Read(stateKey); err == nil {
		if c, ok := d.(*cycle); ok {
			return c
		}
	}
	c := &cycle{}
	cs.Write(stateKey, c)
	return c
}

// sameSlice reports whether a and b are one slice: same length and, for
// a non-empty one, the same first element in memory.
func sameSlice(a, b []fwk.NodeInfo) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

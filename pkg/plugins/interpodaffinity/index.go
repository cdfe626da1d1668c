package interpodaffinity

// This file holds the plugin's only speed structure: an index that keeps,
// across scheduling cycles, what each node contributed to a cluster-wide sum
// (topology counts in PreFilter, weights in PreScore) and the sum itself.
// Between two cycles usually one node changed (the last bind), so a cycle
// recomputes that node's contribution and patches the sum instead of
// scanning every pod on every node. The behaviour is still the scan's:
// filtering.go and scoring.go say what a node contributes; the index only
// decides which contributions are still valid.

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// maxSignatures bounds the signatures an index remembers. A signature is
// what the contributions depend on besides the nodes (the incoming pod's
// terms, labels, namespace and its labels), so pods of one workload share
// one; the least recently used is dropped. Memory per signature grows with
// the nodes visited: one slot per node plus the contributions and their sum.
const maxSignatures = 8

// nodeSlot is one node's contribution as of the node's generation.
//
// A slot is valid for a NodeInfo with the same node name and generation.
// Generations come from one process-wide counter and change on every pod
// or label change the snapshot sees, while the snapshot reuses NodeInfo
// pointers: the pointer says nothing. The one place where a NodeInfo
// changes and keeps its generation is a pod-group cycle
// (Snapshot.AssumePod/ForgetPod, gate GenericWorkload): see sum, and
// newIndexes, which keeps the index off while that gate is on.
type nodeSlot[V any] struct {
	name string
	gen  int64
	set  bool
	v    V
}

// sumOps says how per-node values of type V add up into a sum of type A (a
// pointer type, mutated in place by apply).
type sumOps[V, A any] struct {
	// compute is one node's contribution; it must depend only on the node
	// (its labels and pods) and on what the signature encodes.
	compute func(ni fwk.NodeInfo) V
	newSum  func() A
	// apply adds v to the sum (sign 1) or takes it out again (sign -1).
	apply func(sum A, v V, sign int64)
	clone func(A) A
}

// indexEntry is the state of one signature. slots[i] belongs to position i
// of the node list last seen: lists keep their order between cycles, and a
// node that moved is simply recomputed.
type indexEntry[V, A any] struct {
	slots []nodeSlot[V]
	sum   A
	// lent: sum has been handed to a cycle and must never change again;
	// the next update patches a copy.
	lent    bool
	lastUse uint64
}

// nodeIndex is the cross-cycle index for one kind of sum. The zero value
// is disabled (recomputes everything every time, keeping nothing).
type nodeIndex[V, A any] struct {
	enabled bool
	mu      sync.Mutex
	entries map[string]*indexEntry[V, A]
	clock   uint64
}

// sum returns the sum of ops.compute over nodes for signature sig. The
// result is shared with later cycles and must not be modified.
//
// A pod-group scheduling cycle is answered by a plain scan, and neither
// reads nor changes the index: it assumes its members on the snapshot
// itself and keeps each node's generation, so within it a generation does
// not identify a node's pods. Its ForgetPod calls restore the nodes
// exactly, so what the index holds is valid again afterwards.
func (x *nodeIndex[V, A]) sum(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, ops sumOps[V, A]) A {
	if !x.enabled || cs.IsPodGroupSchedulingCycle() {
		return computeSum(ctx, par, nodes, ops)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(sig, ops)

	var stale []int
	for i, ni := range nodes {
		if i >= len(e.slots) || !e.slots[i].matches(ni) {
			stale = append(stale, i)
		}
	}
	if len(stale) == 0 && len(e.slots) == len(nodes) {
		e.lent = true
		return e.sum
	}

	fresh := make([]V, len(stale))
	computeAt := func(j int) { fresh[j] = ops.compute(nodes[stale[j]]) }
	if len(stale) <= 4 {
		for j := range stale {
			computeAt(j)
		}
	} else {
		par.Until(ctx, len(stale), computeAt, Name)
		if ctx.Err() != nil {
			// Some values may not have been computed. Nothing partial is
			// kept: the signature starts over next time, and this cycle,
			// which is being abandoned, gets the scan's partial answer.
			delete(x.entries, sig)
			return computeSum(ctx, par, nodes, ops)
		}
	}

	if e.lent {
		e.sum = ops.clone(e.sum)
		e.lent = false
	}
	for i := len(nodes); i < len(e.slots); i++ {
		if e.slots[i].set {
			ops.apply(e.sum, e.slots[i].v, -1)
		}
	}
	if len(e.slots) > len(nodes) {
		clear(e.slots[len(nodes):])
		e.slots = e.slots[:len(nodes)]
	} else {
		e.slots = slices.Grow(e.slots, len(nodes)-len(e.slots))[:len(nodes)]
	}
	for j, i := range stale {
		s := &e.slots[i]
		if s.set {
			ops.apply(e.sum, s.v, -1)
		}
		ni := nodes[i]
		*s = nodeSlot[V]{name: slotName(ni), gen: ni.GetGeneration(), set: true, v: fresh[j]}
		ops.apply(e.sum, s.v, 1)
	}
	e.lent = true
	return e.sum
}

// entry returns sig's entry, creating it (and dropping the least recently
// used one beyond maxSignatures) if needed.
func (x *nodeIndex[V, A]) entry(sig string, ops sumOps[V, A]) *indexEntry[V, A] {
	x.clock++
	if e, ok := x.entries[sig]; ok {
		e.lastUse = x.clock
		return e
	}
	if x.entries == nil {
		x.entries = make(map[string]*indexEntry[V, A])
	}
	if len(x.entries) >= maxSignatures {
		var oldest string
		var oldestUse uint64
		for k, e := range x.entries {
			if oldest == "" || e.lastUse < oldestUse {
				oldest, oldestUse = k, e.lastUse
			}
		}
		delete(x.entries, oldest)
	}
	e := &indexEntry[V, A]{sum: ops.newSum(), lastUse: x.clock}
	x.entries[sig] = e
	return e
}

func (s *nodeSlot[V]) matches(ni fwk.NodeInfo) bool {
	return s.set && s.gen == ni.GetGeneration() && s.name == slotName(ni)
}

func slotName(ni fwk.NodeInfo) string {
	if n := ni.Node(); n != nil {
		return n.Name
	}
	return ""
}

// computeSum is the plain scan: every node's contribution, computed in
// parallel and added up serially.
func computeSum[V, A any](ctx context.Context, par fwk.Parallelizer, nodes []fwk.NodeInfo, ops sumOps[V, A]) A {
	vals := make([]V, len(nodes))
	par.Until(ctx, len(nodes), func(i int) { vals[i] = ops.compute(nodes[i]) }, Name)
	sum := ops.newSum()
	for _, v := range vals {
		ops.apply(sum, v, 1)
	}
	return sum
}

// signature encodes what a sum depends on besides the nodes. Every part is
// length-prefixed, so different inputs never encode alike.
type signature struct{ b []byte }

func (w *signature) String() string { return string(w.b) }

func (w *signature) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *signature) flag(b bool) {
	if b {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *signature) int(n int64) { w.b = binary.AppendVarint(w.b, n) }

// labelSet encodes a label set in key order; nil and empty differ.
func (w *signature) labelSet(m map[string]string) {
	w.flag(m == nil)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.int(int64(len(keys)))
	for _, k := range keys {
		w.str(k)
		w.str(m[k])
	}
}

// selector encodes a parsed selector. String() is canonical for the
// selectors term parsing produces (keys and values are validated, so they
// cannot contain the separators), except that Nothing and Everything both
// print as "", hence the kind byte.
func (w *signature) selector(s labels.Selector) {
	switch {
	case s == nil:
		w.b = append(w.b, 'n')
	case s.Empty():
		w.b = append(w.b, 'e')
	default:
		if _, selectsSome := s.Requirements(); !selectsSome {
			w.b = append(w.b, '0')
			return
		}
		w.b = append(w.b, 's')
		w.str(s.String())
	}
}

func (w *signature) term(t fwk.AffinityTerm) {
	w.str(t.TopologyKey)
	w.int(int64(t.Namespaces.Len()))
	for _, ns := range sets.List(t.Namespaces) {
		w.str(ns)
	}
	w.selector(t.Selector)
	w.selector(t.NamespaceSelector)
}

func (w *signature) terms(ts []fwk.AffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.term(ts[i])
	}
}

func (w *signature) weightedTerms(ts []fwk.WeightedAffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.int(int64(ts[i].Weight))
		w.term(ts[i].AffinityTerm)
	}
}

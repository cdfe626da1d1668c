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
	"maps"
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
	// seen is the entry's epoch of the last call that listed the node; it
	// is only kept up to date when nodes left the list.
	seen uint64
	// pos is the slot's position in its entry's order, while the entry's
	// posValid holds (see indexEntry.position).
	pos int
	v   V
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
	// seal, if set, readies a sum to be handed out (layered.seal).
	seal func(A)
}

// indexEntry is the state of one signature: a slot per node of the list
// last seen, and their sum.
type indexEntry[V, A any] struct {
	slots map[string]*nodeSlot[V]
	// order is the last list's slots by position. The snapshot's lists
	// keep their order between cycles, so a node is usually found at the
	// same position without hashing its name; but a node joining a list
	// of nodes with affinity pods shifts the ones after it, so the map
	// is the fallback.
	order []*nodeSlot[V]
	// gens are the order's generations, to check a node against without
	// reading its slot.
	gens []int64
	// posValid: every slot of order has its position in pos. A list that
	// moved (a node joined the list of nodes with affinity pods, which
	// happens every cycle while a workload spreads out) renumbers every
	// slot after the change; that is left until a node is found by name
	// away from where it was looked for, which is rare.
	posValid bool
	// found and foundGens are scratch for one call: the slot and the
	// generation of each listed node (found is only written once a node is
	// not where the last list had it; see sum). They become order and gens
	// when the list moved.
	found     []*nodeSlot[V]
	foundGens []int64
	sum       A
	// lent: sum has been handed to a cycle and must never change again;
	// the next update patches a copy.
	lent    bool
	epoch   uint64
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
// result is shared with later cycles and must not be modified. gens, if
// not nil, are the nodes' generations, already read by the caller.
//
// A pod-group scheduling cycle is answered by a plain scan, and neither
// reads nor changes the index: it assumes its members on the snapshot
// itself and keeps each node's generation, so within it a generation does
// not identify a node's pods. Its ForgetPod calls restore the nodes
// exactly, so what the index holds is valid again afterwards. So is a list
// with a NodeInfo that has no node (test snapshots hold pods on unknown
// nodes; kube-scheduler's lists never do): it has no name to key by.
func (x *nodeIndex[V, A]) sum(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, gens []int64, ops sumOps[V, A]) A {
	if !x.enabled || cs.IsPodGroupSchedulingCycle() {
		return computeSum(ctx, par, nodes, ops)
	}
	if len(gens) != len(nodes) {
		gens = nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	e := x.entry(sig, ops)
	e.epoch++

	// One pass over the list finds each node's slot and checks it. This
	// pass is the index's cost per cycle, so its common case reads one
	// field of each NodeInfo and nothing else: the snapshot keeps its
	// lists in order between cycles, and a node is looked for where the
	// previous node was found plus one. If its generation is the one
	// recorded there, it is that slot's node, unchanged: generations come
	// from one process-wide counter, so one generation never belongs to
	// two nodes (0, which hand-built NodeInfos carry, proves nothing).
	// Otherwise the name decides, and only a node that joined, left or
	// moved costs a map lookup, which also finds where to go on.
	var stale []int
	found := slices.Grow(e.found[:0], len(nodes))[:len(nodes)]
	e.found = found
	foundGens := slices.Grow(e.foundGens[:0], len(nodes))[:len(nodes)]
	e.foundGens = foundGens
	moved := len(e.order) != len(nodes)
	// back: a node was found before the place looked in, so a node may be
	// listed twice (no snapshot does that, but then the slots cannot
	// stand for the list); checked below.
	back := false
	// inPlace: every node so far is the slot at its own position in
	// e.order, and found is not written: it stands for e.order[:i]. In the
	// common cycle that holds to the end and the pass stores no pointer.
	// A pointer store per node costs a GC write barrier whenever a
	// collection is marking: about a third of the pass's time at 5000
	// nodes (PreferredPodAntiAffinity profiles). While inPlace holds,
	// next == i.
	inPlace := true
	next := 0
	for i, ni := range nodes {
		var gen int64
		if gens != nil {
			gen = gens[i]
		} else {
			gen = ni.GetGeneration()
		}
		foundGens[i] = gen
		if next < len(e.gens) && gen != 0 && e.gens[next] == gen {
			if !inPlace {
				found[i] = e.order[next]
			}
			if next != i {
				moved = true
			}
			next++
			continue
		}
		node := ni.Node()
		if node == nil {
			// No name to key by (test snapshots hold pods on unknown
			// nodes; kube-scheduler's lists never do).
			clear(found)
			return computeSum(ctx, par, nodes, ops)
		}
		name := node.Name
		var s *nodeSlot[V]
		at := next
		if next < len(e.order) && e.order[next].name == name {
			s = e.order[next]
		} else if s = e.slots[name]; s != nil {
			at = e.position(s)
		}
		if inPlace && (s == nil || at != i) {
			copy(found[:i], e.order[:i])
			inPlace = false
		}
		if !inPlace {
			found[i] = s
		}
		if s == nil {
			moved = true
			stale = append(stale, i)
			continue
		}
		back = back || at < next
		next = at + 1
		if at != i {
			moved = true
		}
		if s.gen != gen || gen == 0 {
			// 0 (hand-built NodeInfos) proves nothing.
			stale = append(stale, i)
		}
	}
	if inPlace {
		if moved {
			// The list is e.order cut short; it becomes the new order.
			copy(found, e.order)
		} else {
			found = e.order
		}
	}
	if back && markSeen(found, e.epoch) {
		delete(x.entries, sig)
		return computeSum(ctx, par, nodes, ops)
	}
	if len(stale) == 0 && len(e.slots) == len(nodes) {
		// Every node is where it was, or was found by name.
		e.settle(moved, stale)
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
	if len(e.slots) == 0 {
		e.slots = make(map[string]*nodeSlot[V], len(nodes))
	}
	// New slots come from one allocation: a signature's first cycle
	// creates one per node.
	var slab []nodeSlot[V]
	for j, i := range stale {
		ni := nodes[i]
		s := found[i]
		if s == nil {
			// Not in the index under its name, unless listed twice.
			name := ni.Node().Name
			s = e.slots[name]
			if s == nil {
				if len(slab) == 0 {
					slab = make([]nodeSlot[V], len(stale)-j)
				}
				s, slab = &slab[0], slab[1:]
				s.name = name
				e.slots[name] = s
			} else {
				ops.apply(e.sum, s.v, -1)
			}
			found[i] = s
		} else {
			ops.apply(e.sum, s.v, -1)
		}
		s.gen, s.v = foundGens[i], fresh[j]
		ops.apply(e.sum, s.v, 1)
	}
	if len(e.slots) > len(nodes) {
		// Nodes that left the list take their contribution with them.
		markSeen(found, e.epoch)
		for name, s := range e.slots {
			if s.seen != e.epoch {
				ops.apply(e.sum, s.v, -1)
				delete(e.slots, name)
			}
		}
	}
	if len(e.slots) != len(nodes) {
		// A name listed twice: the slots cannot stand for the list.
		delete(x.entries, sig)
		return computeSum(ctx, par, nodes, ops)
	}
	e.settle(moved, stale)
	if ops.seal != nil {
		ops.seal(e.sum)
	}
	e.lent = true
	return e.sum
}

// markSeen marks the slots found as seen in epoch, and reports whether one
// was found for two nodes of the list.
func markSeen[V any](found []*nodeSlot[V], epoch uint64) (twice bool) {
	for _, s := range found {
		if s == nil {
			continue
		}
		twice = twice || s.seen == epoch
		s.seen = epoch
	}
	return twice
}

// settle ends a call: if the list's nodes moved, the slots and
// generations found are the order to look in next time, and the slots'
// positions are left to position; otherwise only the stale positions have
// new generations. The scratch may keep an earlier order's slots alive
// until a call that does not find every node in place overwrites it: at
// most one list's worth.
func (e *indexEntry[V, A]) settle(moved bool, stale []int) {
	if moved {
		e.order, e.found = e.found, e.order
		e.gens, e.foundGens = e.foundGens, e.gens
		e.posValid = false
		return
	}
	for _, i := range stale {
		e.gens[i] = e.foundGens[i]
	}
}

// position returns s's position in e.order, numbering every slot first if
// the order moved since they were last numbered.
func (e *indexEntry[V, A]) position(s *nodeSlot[V]) int {
	if !e.posValid {
		for i, o := range e.order {
			o.pos = i
		}
		e.posValid = true
	}
	return s.pos
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
	e := &indexEntry[V, A]{slots: make(map[string]*nodeSlot[V]), sum: ops.newSum(), lastUse: x.clock}
	x.entries[sig] = e
	return e
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
	if ops.seal != nil {
		ops.seal(sum)
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

// keyCounts counts, per name (a label key or a namespace), the nodes whose
// pods have a term that reads it.
type keyCounts map[string]int64

func (c keyCounts) apply(names []string, sign int64) {
	for _, k := range names {
		if n := c[k] + sign; n != 0 {
			c[k] = n
		} else {
			delete(c, k)
		}
	}
}

// termInputs is what the terms of the existing pods with pod
// (anti-)affinity read of an incoming pod, counted per node of a list:
// existing pods' terms are matched against the incoming pod, so a sum
// that depends on them depends on the incoming pod only through these.
// Two pods that agree on them match every such term alike. Keying by the
// whole pod instead would miss whenever pods carry a label of their own
// (a StatefulSet's pod name, scheduler_perf's per-pod signature label),
// or come from many namespaces (every namespace carries its own
// kubernetes.io/metadata.name label).
type termInputs struct {
	// podKeys are the label keys the terms' label selectors select on.
	podKeys keyCounts
	// nsKeys are the namespace label keys the terms' namespace selectors
	// select on.
	nsKeys keyCounts
	// namespaces are the namespaces the terms list (a term without a
	// namespace selector lists its own pod's namespace).
	namespaces keyCounts
	// scoringNodes counts the nodes with a pod that has a term PreScore
	// scores an incoming pod by: a preferred term, or a required affinity
	// term (hardPodAffinityWeight). Without one, an incoming pod without
	// preferred terms of its own scores nothing.
	scoringNodes int64
}

// nodeTermInputs is one node's part of termInputs, each name once.
type nodeTermInputs struct {
	podKeys, nsKeys, namespaces []string
	scoring                     bool
}

// selectorKeys is an index's sumOps for termInputs.
var selectorKeys = sumOps[nodeTermInputs, *termInputs]{
	compute: func(ni fwk.NodeInfo) nodeTermInputs {
		var in nodeTermInputs
		addKeys := func(keys *[]string, s labels.Selector) {
			if reqs, selectsSome := s.Requirements(); selectsSome {
				for _, r := range reqs {
					if !slices.Contains(*keys, r.Key()) {
						*keys = append(*keys, r.Key())
					}
				}
			}
		}
		addTerm := func(t *fwk.AffinityTerm) {
			addKeys(&in.podKeys, t.Selector)
			addKeys(&in.nsKeys, t.NamespaceSelector)
			for ns := range t.Namespaces {
				if !slices.Contains(in.namespaces, ns) {
					in.namespaces = append(in.namespaces, ns)
				}
			}
		}
		for _, p := range ni.GetPodsWithAffinity() {
			in.scoring = in.scoring || len(p.GetRequiredAffinityTerms()) > 0 ||
				len(p.GetPreferredAffinityTerms()) > 0 || len(p.GetPreferredAntiAffinityTerms()) > 0
			for _, ts := range [][]fwk.AffinityTerm{p.GetRequiredAffinityTerms(), p.GetRequiredAntiAffinityTerms()} {
				for i := range ts {
					addTerm(&ts[i])
				}
			}
			for _, ts := range [][]fwk.WeightedAffinityTerm{p.GetPreferredAffinityTerms(), p.GetPreferredAntiAffinityTerms()} {
				for i := range ts {
					addTerm(&ts[i].AffinityTerm)
				}
			}
		}
		return in
	},
	newSum: func() *termInputs {
		return &termInputs{podKeys: keyCounts{}, nsKeys: keyCounts{}, namespaces: keyCounts{}}
	},
	apply: func(sum *termInputs, in nodeTermInputs, sign int64) {
		sum.podKeys.apply(in.podKeys, sign)
		sum.nsKeys.apply(in.nsKeys, sign)
		sum.namespaces.apply(in.namespaces, sign)
		if in.scoring {
			sum.scoringNodes += sign
		}
	},
	clone: func(sum *termInputs) *termInputs {
		return &termInputs{podKeys: maps.Clone(sum.podKeys), nsKeys: maps.Clone(sum.nsKeys), namespaces: maps.Clone(sum.namespaces), scoringNodes: sum.scoringNodes}
	},
}

// encode writes to w what the terms can read of a pod in namespace ns
// with labels podLabels, in a namespace labelled nsLabels. A namespace no
// term lists is encoded as unlisted, whatever its name: Matches asks of
// the name only whether a term lists it.
func (in *termInputs) encode(w *signature, ns string, podLabels, nsLabels map[string]string) {
	listed := in.namespaces[ns] > 0
	w.flag(listed)
	if listed {
		w.str(ns)
	}
	w.labelSet(labelsSelectedOn(podLabels, in.podKeys))
	w.labelSet(labelsSelectedOn(nsLabels, in.nsKeys))
}

// labelsSelectedOn returns the labels whose keys are in keys. Nil and
// empty label sets give the same (empty) result: no selector tells them
// apart.
func labelsSelectedOn(lbls map[string]string, keys keyCounts) map[string]string {
	out := make(map[string]string, min(len(lbls), len(keys)))
	for k, v := range lbls {
		if keys[k] > 0 {
			out[k] = v
		}
	}
	return out
}

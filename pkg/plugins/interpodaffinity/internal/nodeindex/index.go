// Package nodeindex is the node index of the PlacementInterPodAffinity
// plugin: it keeps, across scheduling cycles, what each node contributed
// to a cluster-wide sum (topology counts in PreFilter, weights in
// PreScore, the selector keys of existing pods' terms) and the sum itself.
// Between two cycles usually one node changed (the last bind), so a cycle
// recomputes that node's contribution and patches the sum instead of
// scanning every pod on every node. The behaviour is still the scan's: the
// operations (Ops) say what a node contributes; the index only decides
// which contributions are still valid, and whether a signature is worth
// keeping at all.
//
// Summer is what the plugin asks; Index keeps the sums, PassThrough keeps
// nothing and scans every time (Scan, the same work as upstream's).
//
// Invariants: a slot recorded at a node's generation is valid while the
// node's NodeInfo still has it (generations come from one process-wide
// counter; 0 proves nothing); a sum handed out is never changed again (the
// next update patches a clone); a contribution depends only on the node
// and on what the signature encodes; a pod-group cycle neither reads nor
// changes the index.
//
// Memory: at most slotsPerNode × N node slots per index (N the listed
// nodes) and maxEntries entries, least recently used dropped first. A slot
// costs 56 bytes (the slot, its place in the entry's order, generations
// and node numbers) plus, only when its node adds something, the node's
// contribution and its share of the sum: about 260 bytes in all when every
// node adds a domain of its own (hostname-scoped terms), so one index
// holds at most about 16 × 5000 × 260 B = 21 MB at 5000 nodes, whatever
// the number of signatures, and about 90 bytes a slot when one node in
// eight adds something (interleaved Deployments). Per index, not per
// entry: the node names' numbers (at most the longest list plus numsSlack)
// and one call's scratch. BenchmarkIndexBound (bound_test.go) measures an
// index at its bound; its figures are in docs/performance.md:
//
//	go test ./pkg/plugins/interpodaffinity/internal/nodeindex -run '^$' -bench IndexBound -benchtime 1x
package nodeindex

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

const (
	// slotsPerNode bounds an index's memory: all its entries together
	// hold at most slotsPerNode × N node slots, N the length of the list
	// it was last asked about (an entry holds one slot per listed node),
	// the least recently used entry making room. With lists of one
	// length that is slotsPerNode entries. A slot costs 56 bytes, plus
	// its node's contribution if the node adds something (package doc).
	slotsPerNode = 16
	// maxEntries bounds the entries whatever the lists' length (an empty
	// list costs no slot, but an entry and its sum).
	maxEntries = 64
)

// nodeSlot is one node's contribution as of the node's generation.
//
// A slot is valid for a NodeInfo with the same node name and generation.
// Generations come from one process-wide counter and change on every pod
// or label change the snapshot sees, while the snapshot reuses NodeInfo
// pointers: the pointer says nothing. The one place where a NodeInfo
// changes and keeps its generation is a pod-group cycle
// (Snapshot.AssumePod/ForgetPod, gate GenericWorkload): see lookup, and
// the plugin's newCaches, which keeps the index off while that gate is on.
//
// A slot is 32 bytes and holds one pointer: an index holds up to
// slotsPerNode of them per node.
type nodeSlot[V any] struct {
	gen int64
	// seen is the entry's epoch of the last call that listed the node; it
	// is only kept up to date when nodes left the list.
	seen uint64
	// v is the node's contribution, nil when it adds nothing
	// (Ops.Empty): most nodes, for most signatures, so that their
	// slots hold no V.
	v *V
	// pos is the slot's position in its entry's order, while the entry's
	// posValid holds (see indexEntry.position).
	pos int32
	// num is the node's number (Index.nums), which stands for its
	// name.
	num int32
}

// Ops says how per-node values of type V add up into a sum of type A (a
// pointer type, mutated in place by Apply). The plugin builds them
// (counts.OpsOf, signature.SelectorKeys).
type Ops[V, A any] struct {
	// compute is one node's contribution; it must depend only on the node
	// (its labels and pods) and on what the signature encodes. reuse is
	// the zero V or an earlier result that the caller has applied and
	// holds no more: compute may build its result in reuse's storage, so
	// that the plain scan allocates nothing per node.
	Compute func(ni fwk.NodeInfo, reuse V) V
	NewSum  func() A
	// computeAt, if set, is compute told ni's position i in the list
	// summed, which the plain scan knows: per-node data kept by position
	// (package podsummary) is then found without hashing.
	ComputeAt func(i int, ni fwk.NodeInfo, reuse V) V
	// apply adds v to the sum (sign 1) or takes it out again (sign -1).
	Apply func(sum A, v V, sign int64)
	// merge adds src, a sum built by apply alone, into dst.
	Merge func(dst, src A)
	Clone func(A) A
	// seal, if set, readies a sum to be handed out (layered.seal).
	Seal func(A)
	// empty, if set, tells a contribution that adds nothing: apply with
	// it changes no sum. The index keeps no copy of such a one.
	Empty func(V) bool
}

// At sets ops' Compute to computeAt, told ni's position i in the list
// summed (-1: unknown): the plain scan and recompute know it, and per-node
// data kept by position (package podsummary) is then found without hashing.
func (ops Ops[V, A]) At(computeAt func(i int, ni fwk.NodeInfo, reuse V) V) Ops[V, A] {
	ops.ComputeAt = computeAt
	ops.Compute = func(ni fwk.NodeInfo, reuse V) V { return computeAt(-1, ni, reuse) }
	return ops
}

// indexEntry is the state of one signature: a slot per node of the list
// last seen, and their sum.
type indexEntry[V, A any] struct {
	// byNum is the entry's slots by node number (Index.nums), nil
	// where it has none; n counts the slots.
	byNum []*nodeSlot[V]
	n     int
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
	sum      A
	// lent: sum has been handed to a cycle and must never change again;
	// the next update patches a copy.
	lent    bool
	epoch   uint64
	lastUse uint64
}

// Summer hands a cycle the sum of ops' contributions over a node list.
type Summer[V, A any] interface {
	// Sum returns the sum of ops.Compute over nodes for signature sig,
	// which the caller must not modify; gens, if not nil, are the nodes'
	// generations, already read by the caller.
	Sum(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, gens []int64, ops Ops[V, A]) A
	// Lookup is Sum when the sum is kept, and false when the caller must
	// scan instead (Lookup never does).
	Lookup(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, gens []int64, ops Ops[V, A]) (A, bool)
}

// PassThrough is the Summer that keeps nothing: every Sum scans (Scan),
// as upstream's plugin does, and Lookup never answers. Op names the scan's
// parallel work in the parallelizer's metrics.
type PassThrough[V, A any] struct{ Op string }

// Sum scans.
func (p PassThrough[V, A]) Sum(ctx context.Context, _ fwk.CycleState, par fwk.Parallelizer, _ string, nodes []fwk.NodeInfo, _ []int64, ops Ops[V, A]) A {
	return Scan(ctx, par, p.Op, nodes, ops)
}

// Lookup answers nothing.
func (PassThrough[V, A]) Lookup(context.Context, fwk.CycleState, fwk.Parallelizer, string, []fwk.NodeInfo, []int64, Ops[V, A]) (A, bool) {
	var none A
	return none, false
}

// New returns an empty index whose parallel work is reported as op.
func New[V, A any](op string) *Index[V, A] { return &Index[V, A]{op: op} }

// AdmitEverySignature gives every signature an entry the first time it is
// seen (tests of what an entry does once it exists).
func (x *Index[V, A]) AdmitEverySignature() { x.admitFirst = true }

// Entries counts the signatures that have an entry.
func (x *Index[V, A]) Entries() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// Index is the Summer that keeps sums across cycles.
type Index[V, A any] struct {
	// op names the index's parallel work in the parallelizer's metrics.
	op string
	// admitFirst admits a signature the first time it is seen (tests of
	// what an entry does once it exists).
	admitFirst bool
	mu         sync.Mutex
	entries    map[string]*indexEntry[V, A]
	// slots counts the slots of all entries.
	slots int
	// nums numbers the names of the nodes the entries have slots for, so
	// that an entry finds a slot by name in its byNum: one map per index
	// instead of one per entry. Names of nodes gone stay numbered until
	// there are more than numsSlack beyond the longest list seen since
	// the last reset (longest), when every entry is dropped (reset).
	nums    map[string]int32
	longest int
	// names are the numbered names by number: a node found where the
	// last list had it is checked by name without hashing it.
	names []string
	// found and foundGens are scratch for the call holding mu: the slot
	// and the generation of each listed node (found is only written once
	// a node is not where the last list had it; see locate). They become
	// an entry's order and gens when its list moved, and the entry's old
	// ones the scratch.
	found     []*nodeSlot[V]
	foundGens []int64
	// clock counts the calls that consulted the index.
	clock uint64
	// ghosts are the hashes of the last signatures seen without an
	// entry, nextGhost where the next one goes (admit).
	seed      maphash.Seed
	ghosts    []uint64
	nextGhost int
}

// Sum returns the sum of ops.Compute over nodes for signature sig: from
// the index when sig has an entry or earns one (admit), otherwise by the
// plain scan. The result may be shared with later cycles and must not be
// modified. gens, if not nil, are the nodes' generations, already read by
// the caller.
func (x *Index[V, A]) Sum(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, gens []int64, ops Ops[V, A]) A {
	if s, ok := x.Lookup(ctx, cs, par, sig, nodes, gens, ops); ok {
		return s
	}
	return Scan(ctx, par, x.op, nodes, ops)
}

// Lookup returns the indexed sum for sig, and false when the index does
// not answer: the cycle is a pod-group cycle, sig is not
// admitted, or the entry cannot stand for the list (then it is dropped).
// The caller then scans; lookup never does, so that a caller that only
// wants an indexed answer (the selector keys, which only serve to key
// another index) can skip the work.
//
// A pod-group scheduling cycle neither reads nor changes the index: it
// assumes its members on the snapshot itself and keeps each node's
// generation, so within it a generation does not identify a node's pods.
// Its ForgetPod calls restore the nodes exactly, so what the index holds
// is valid again afterwards.
func (x *Index[V, A]) Lookup(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, sig string, nodes []fwk.NodeInfo, gens []int64, ops Ops[V, A]) (A, bool) {
	var none A
	if k8sline.PodGroupCycle(cs) {
		return none, false
	}
	if len(gens) != len(nodes) {
		gens = nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.clock++
	if len(x.nums) > max(x.longest, len(nodes))+numsSlack {
		x.reset()
	}
	x.longest = max(x.longest, len(nodes))
	e := x.entries[sig]
	if e == nil {
		if !x.admit(sig) {
			return none, false
		}
		x.makeRoom(len(nodes), len(nodes), true)
		e = &indexEntry[V, A]{sum: ops.NewSum()}
		if x.entries == nil {
			x.entries = make(map[string]*indexEntry[V, A])
		}
		x.entries[sig] = e
	}
	e.lastUse = x.clock
	held := e.n
	s, ok := e.update(ctx, par, x, nodes, gens, ops)
	x.slots += e.n - held
	if !ok {
		x.drop(sig)
		return none, false
	}
	x.makeRoom(len(nodes), 0, false)
	return s, true
}

// admit decides whether sig, which has no entry, gets one. An entry costs
// more in its first cycle than the scan (a slot per node) and only pays
// from its next cycle on, if it is still there: a signature is admitted
// when it is among the last slotsPerNode signatures that had no entry.
// With lists of one length the budget holds slotsPerNode entries, so an
// entry made at that reuse distance would still be there at its next use.
// One seen once, or coming back only after more signatures than that, is
// answered by the scan and leaves nothing but its ghost: its hash, in a
// ring of the last slotsPerNode ghosts.
func (x *Index[V, A]) admit(sig string) bool {
	if x.admitFirst {
		return true
	}
	if x.ghosts == nil {
		x.seed = maphash.MakeSeed()
		x.ghosts = make([]uint64, slotsPerNode)
	}
	h := maphash.String(x.seed, sig) | 1 // 0 marks an empty ghost
	if i := slices.Index(x.ghosts, h); i >= 0 {
		x.ghosts[i] = 0
		return true
	}
	x.ghosts[x.nextGhost] = h
	x.nextGhost = (x.nextGhost + 1) % len(x.ghosts)
	return false
}

// makeRoom drops the least recently used entries until want more slots
// fit within the budget for lists of length n, and, if adding, one more
// entry within maxEntries. Otherwise the entry just used is never dropped.
func (x *Index[V, A]) makeRoom(n, want int, adding bool) {
	budget := slotsPerNode * max(n, 1)
	maxKept := maxEntries
	if adding {
		maxKept--
	}
	for len(x.entries) > 0 && (x.slots+want > budget || len(x.entries) > maxKept) {
		var oldest string
		var oldestUse uint64
		first := true
		for k, e := range x.entries {
			if first || e.lastUse < oldestUse {
				oldest, oldestUse, first = k, e.lastUse, false
			}
		}
		if !adding && oldestUse == x.clock {
			// Only the entry just used is left.
			return
		}
		x.drop(oldest)
	}
}

// drop forgets sig's entry.
func (x *Index[V, A]) drop(sig string) {
	if e := x.entries[sig]; e != nil {
		x.slots -= e.n
		delete(x.entries, sig)
	}
}

// numsSlack is how many names of nodes no longer listed nums may hold
// beyond the longest list: node churn renumbers, at worst, once per that
// many new node names.
const numsSlack = 1024

// reset drops every entry and the node numbers, which then start over
// from the nodes listed from now on.
func (x *Index[V, A]) reset() {
	x.entries, x.slots, x.nums, x.names, x.longest = nil, 0, nil, nil, 0
	clear(x.found)
}

// slotNamed is e's slot for the node named name, or nil.
func (e *indexEntry[V, A]) slotNamed(nums map[string]int32, name string) *nodeSlot[V] {
	if n, ok := nums[name]; ok {
		return e.slotNumbered(n)
	}
	return nil
}

// slotNumbered is e's slot for node number n, or nil.
func (e *indexEntry[V, A]) slotNumbered(n int32) *nodeSlot[V] {
	if int(n) < len(e.byNum) {
		return e.byNum[n]
	}
	return nil
}

// addSlot files s, a new slot, under the number of the node named name,
// numbering the node if it has none yet.
func (e *indexEntry[V, A]) addSlot(x *Index[V, A], s *nodeSlot[V], name string) {
	n, ok := x.nums[name]
	if !ok {
		if x.nums == nil {
			x.nums = make(map[string]int32)
		}
		n = int32(len(x.nums))
		x.nums[name] = n
		x.names = append(x.names, name)
	}
	s.num = n
	if int(n) >= len(e.byNum) {
		e.byNum = slices.Grow(e.byNum, int(n)+1-len(e.byNum))[:int(n)+1]
	}
	e.byNum[n] = s
	e.n++
}

// update brings the entry up to date with nodes and returns its sum,
// marked as lent. False: the slots cannot stand for the list (a node
// without a name, a name listed twice, an abandoned cycle); the caller
// drops the entry, whatever state it was left in.
func (e *indexEntry[V, A]) update(ctx context.Context, par fwk.Parallelizer, x *Index[V, A], nodes []fwk.NodeInfo, gens []int64, ops Ops[V, A]) (A, bool) {
	var none A
	e.epoch++
	found, stale, moved, ok := e.locate(x, nodes, gens)
	if !ok {
		return none, false
	}
	if len(stale) == 0 && e.n == len(nodes) {
		// Every node is where it was, or was found by name.
		e.reorder(x, found, moved, stale)
		e.lent = true
		return e.sum, true
	}
	fresh, ok := recompute(ctx, par, x.op, nodes, stale, ops)
	if !ok || !e.settle(x, nodes, found, stale, fresh, ops) {
		return none, false
	}
	e.reorder(x, found, moved, stale)
	if ops.Seal != nil {
		ops.Seal(e.sum)
	}
	e.lent = true
	return e.sum, true
}

// locate finds each listed node's slot (found; nil for a node the entry
// has no slot for) and returns the positions of the nodes whose
// contribution must be recomputed (stale) and whether the list differs
// from the last one in order or length (moved).
//
// This pass is the index's cost per cycle, so its common case reads one
// field of each NodeInfo and nothing else: the snapshot keeps its lists in
// order between cycles, and a node is looked for where the previous node
// was found plus one. If its generation is the one recorded there, it is
// that slot's node, unchanged: generations come from one process-wide
// counter, so one generation never belongs to two nodes (0, which
// hand-built NodeInfos carry, proves nothing). Otherwise the name decides,
// and only a node that joined, left or moved costs a map lookup, which also
// finds where to go on.
func (e *indexEntry[V, A]) locate(x *Index[V, A], nodes []fwk.NodeInfo, gens []int64) (found []*nodeSlot[V], stale []int, moved, ok bool) {
	found = slices.Grow(x.found[:0], len(nodes))[:len(nodes)]
	x.found = found
	foundGens := slices.Grow(x.foundGens[:0], len(nodes))[:len(nodes)]
	x.foundGens = foundGens
	moved = len(e.order) != len(nodes)
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
			return nil, nil, false, false
		}
		var s *nodeSlot[V]
		at := next
		if next < len(e.order) && x.names[e.order[next].num] == node.Name {
			s = e.order[next]
		} else if s = e.slotNamed(x.nums, node.Name); s != nil {
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
		clear(x.found)
		return nil, nil, false, false
	}
	return found, stale, moved, true
}

// recompute computes the contributions of the nodes at positions stale,
// in parallel when there are more than a few. False: the cycle was
// abandoned and some may be missing. op names the work in the
// parallelizer's metrics.
func recompute[V, A any](ctx context.Context, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo, stale []int, ops Ops[V, A]) ([]V, bool) {
	fresh := make([]V, len(stale))
	var none V
	one := func(j int) {
		if i := stale[j]; ops.ComputeAt != nil {
			fresh[j] = ops.ComputeAt(i, nodes[i], none)
		} else {
			fresh[j] = ops.Compute(nodes[i], none)
		}
	}
	if len(stale) <= 4 {
		for j := range stale {
			one(j)
		}
		return fresh, true
	}
	par.Until(ctx, len(stale), one, op)
	return fresh, ctx.Err() == nil
}

// settle patches the sum (a copy, if the sum was lent) with the fresh
// contributions, makes slots for nodes that joined and drops the slots
// of nodes that left. False: a name was listed twice.
func (e *indexEntry[V, A]) settle(x *Index[V, A], nodes []fwk.NodeInfo, found []*nodeSlot[V], stale []int, fresh []V, ops Ops[V, A]) bool {
	if e.lent {
		e.sum = ops.Clone(e.sum)
		e.lent = false
	}
	// New slots come from one allocation, and so do the contributions
	// that slots without one get: a signature's first cycle creates a
	// slot per node, and a contribution for the nodes that add something.
	var slab []nodeSlot[V]
	var vals []V
	for j, i := range stale {
		s := found[i]
		if s == nil {
			// locate found no slot under this name, so a slot there
			// now was made by this call: the name is listed twice.
			// Counting the slots would not tell when another node left
			// the list too.
			name := nodes[i].Node().Name
			if e.slotNamed(x.nums, name) != nil {
				return false
			}
			if len(slab) == 0 {
				slab = make([]nodeSlot[V], len(stale)-j)
			}
			s, slab = &slab[0], slab[1:]
			e.addSlot(x, s, name)
			found[i] = s
		}
		if s.v != nil {
			ops.Apply(e.sum, *s.v, -1)
		}
		s.gen = x.foundGens[i]
		switch v := fresh[j]; {
		case ops.Empty != nil && ops.Empty(v):
			s.v = nil
		case s.v != nil:
			// Only this slot holds its contribution.
			*s.v = v
		default:
			if len(vals) == 0 {
				vals = make([]V, countAdding(fresh[j:], ops))
			}
			s.v, vals = &vals[0], vals[1:]
			*s.v = v
		}
		if s.v != nil {
			ops.Apply(e.sum, *s.v, 1)
		}
	}
	if e.n > len(nodes) {
		// Nodes that left the list take their contribution with them.
		markSeen(found, e.epoch)
		for n, s := range e.byNum {
			if s != nil && s.seen != e.epoch {
				if s.v != nil {
					ops.Apply(e.sum, *s.v, -1)
				}
				e.byNum[n] = nil
				e.n--
			}
		}
	}
	return e.n == len(nodes)
}

// countAdding is how many of vs add something (Ops.Empty).
func countAdding[V, A any](vs []V, ops Ops[V, A]) int {
	if ops.Empty == nil {
		return len(vs)
	}
	n := 0
	for _, v := range vs {
		if !ops.Empty(v) {
			n++
		}
	}
	return n
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

// reorder ends a call: if the list's nodes moved, the slots and
// generations found are the order to look in next time (the entry's old
// ones become the index's scratch), and the slots' positions are left to
// position; otherwise only the stale positions have new generations. The
// scratch may keep an earlier order's slots alive (of any entry of the
// index, even a dropped one) until a call that does not find every node
// in place overwrites it: at most one list's worth per index.
func (e *indexEntry[V, A]) reorder(x *Index[V, A], found []*nodeSlot[V], moved bool, stale []int) {
	if moved {
		e.order, x.found = found, e.order
		e.gens, x.foundGens = x.foundGens, e.gens
		e.posValid = false
		return
	}
	for _, i := range stale {
		e.gens[i] = x.foundGens[i]
	}
}

// position returns s's position in e.order, numbering every slot first if
// the order moved since they were last numbered.
func (e *indexEntry[V, A]) position(s *nodeSlot[V]) int {
	if !e.posValid {
		for i, o := range e.order {
			o.pos = int32(i)
		}
		e.posValid = true
	}
	return int(s.pos)
}

// scanParts is how many parts the plain scan splits a node list into.
// Each part is summed on its own by one worker, so a worker's result is a
// sum holding each domain once (a handful for zone-scoped terms) instead
// of a contribution per node, and the serial merge of the parts is short.
// More parts than workers keep the workers busy to the end.
const scanParts = 32

// Scan is the plain scan, the same work as upstream's: every node's
// contribution computed in parallel and added up. Each part of the list
// (scanParts) adds its nodes into a sum of its own, building every node's
// contribution in the storage of the one before (ops.Compute's reuse), and
// the parts' sums are then merged: integer sums in maps, which neither
// the order of the nodes nor the split changes. Nothing is kept. op names
// the work in the parallelizer's metrics.
func Scan[V, A any](ctx context.Context, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo, ops Ops[V, A]) A {
	parts := min(len(nodes), scanParts)
	sums := make([]A, parts)
	done := make([]bool, parts)
	par.Until(ctx, parts, func(p int) {
		sum := ops.NewSum()
		var v V
		for i := p * len(nodes) / parts; i < (p+1)*len(nodes)/parts; i++ {
			if ops.ComputeAt != nil {
				v = ops.ComputeAt(i, nodes[i], v)
			} else {
				v = ops.Compute(nodes[i], v)
			}
			ops.Apply(sum, v, 1)
		}
		sums[p], done[p] = sum, true
	}, op)
	sum := ops.NewSum()
	if parts > 0 && done[0] {
		sum = sums[0]
	}
	for p := 1; p < parts; p++ {
		// A part not done belongs to an abandoned cycle, whose
		// result nobody reads.
		if done[p] {
			ops.Merge(sum, sums[p])
		}
	}
	if ops.Seal != nil {
		ops.Seal(sum)
	}
	return sum
}

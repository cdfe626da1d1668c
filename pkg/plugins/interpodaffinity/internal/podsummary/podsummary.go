// Package podsummary holds the pod summaries of the PlacementInterPodAffinity
// plugin, a speed structure for the scans of PreFilter and PreScore: per node of the cycle's list, a summary of what the node's pods
// could match, so that a scan skips the nodes that cannot contribute
// without touching their pods. A Deployment's selector (app=web-17)
// matches a handful of the cluster's pods, yet the plain scan reads every
// pod's labels on every node (cold in memory) and evaluates every term on
// them; the summaries are compact and read in list order.
//
// A term matches a pod only if the pod satisfies every requirement of the
// term's label selector, in particular every positive one (a key with one
// of some values, or a key that exists). A summary holds, in Bloom
// filters, the (key, value) pairs and the keys of the node's pods' labels,
// and, for the terms of the node's pods, the pairs or key of one positive
// requirement of each. A filter can say "maybe" of an item it does not
// hold, never "no" of one it holds: a node is skipped only when what it
// would contribute is provably nothing.
//
// Invariants:
//   - A row stands for one NodeInfo pointer at one generation: it is used
//     only for that pointer (found at its position in the list or through
//     the row map) while the NodeInfo still has the row's generation.
//     Generations change with every pod or label change the snapshot
//     sees; 0 (hand-built NodeInfos) proves nothing and is never trusted.
//   - A view handed out never changes: the next sync copies a page before
//     its first change (copy on write) and a list change makes a new view.
//     The one exception is the stale marks, set atomically by readers for
//     the next sync and never read by a lookup.
//   - A view's words are only appended to: a view reads none past its own
//     length, so appending for a later view does not disturb it; a
//     compaction copies the live filters to new words and every page.
//   - A row found out of date (or whose node's generation moved) is made
//     again at the next sync, whether or not the list changed.
//
// Syncer is what the plugin asks; Table keeps the summaries, PassThrough
// keeps none (no node is skipped: every node is computed, as upstream).
//
// A filter says "maybe" of one absent item about 1 time in 40 to 150
// (bloomBitsPerItem); a query that tests several items says "maybe" if
// any one does, so an incoming pod with 5 labels finds about one node in
// five "maybe" in the existing pods' anti-affinity filters. Memory per listed node: a 40-byte row, at most 3
// filters of at most maxBloomWords words (768 bytes; a few words for most
// nodes), an entry in the view's row map, 16 bytes for the view's copy of
// the list and a stale bit; besides, up to live+1024 words of filters no
// row uses until a compaction drops them (at most 2×live+1024 words in
// all), and the pages and words of views a cycle still holds. Built in the
// second cycle that asks, never in the first, so that a plugin asked once
// pays no more than the scan. The cost of a build (about one scan) and of
// a cycle with and without summaries, figures in docs/performance.md:
//
//	go test ./pkg/plugins/interpodaffinity -run '^$' -bench InterleavedDeployments -benchmem
package podsummary

import (
	"context"
	"hash/maphash"
	mathbits "math/bits"
	"slices"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

const (
	// bloomBitsPerItem sizes a filter: at least that many bits per
	// distinct item (the words are rounded up to a power of two, so up to
	// twice as many), two bits set per item. A lookup of an absent item
	// then says "maybe" with probability (1-e^(-2/b))² for b bits per
	// item: about 2.4% at 12, 0.7% at 24; more in a filter capped at
	// maxBloomWords. A query that tests several items says "maybe" if
	// any one does: the existing pods' anti-affinity filter is asked for
	// every pair and key of the incoming pod's labels, so an incoming pod
	// with 5 labels (10 items) finds about one node in five "maybe" at
	// 12 bits. A "maybe" costs the node's full computation, never a
	// wrong result.
	bloomBitsPerItem = 12
	// maxBloomWords bounds one filter (2048 bits): a node with more
	// distinct labels than that holds saturates and is simply never
	// skipped.
	maxBloomWords = 32
)

// bloomRef is a filter's place in its view's words: words (0 or a power of
// two) words from off. An empty filter holds nothing.
type bloomRef struct {
	off, words uint32
}

// Summary flags.
const (
	// noPods: the node has no pod, so no pod on it matches anything.
	noPods uint8 = 1 << iota
	// antiOpen: a required anti-affinity term of a pod on the node has no
	// positive requirement: it may select any incoming pod.
	antiOpen
	// scoreOpen: likewise for a term PreScore scores by.
	scoreOpen
	// hostAnti: a pod in the node's list of pods with required
	// anti-affinity has a topology.HostScoped term: the fast path's
	// note of such a term, matching or not, which a node skipped must
	// still give.
	hostAnti
)

// nodeSummary is what one node's pods could match, as of the node's
// generation.
type nodeSummary struct {
	gen int64
	// pods holds the pairs and keys of the labels of every pod.
	pods bloomRef
	// anti holds one positive requirement of every required
	// anti-affinity term of the node's pods (the terms that may select
	// the incoming pod and reject it).
	anti bloomRef
	// score holds one positive requirement of every term of the node's
	// pods that PreScore matches against the incoming pod: required
	// affinity (hardPodAffinityWeight) and preferred (anti-)affinity.
	score bloomRef
	flags uint8
}

// View answers, for the NodeInfos of one cycle's node list, their
// summaries. Its rows are never changed once handed out; a row is used
// only for a NodeInfo whose generation is the row's (see Of).
type View struct {
	seed maphash.Seed
	// nodes is the list the view was synced with: a node at its own
	// position there is found without hashing.
	nodes []fwk.NodeInfo
	// row is each listed NodeInfo's row. The pointer says nothing about
	// what the NodeInfo holds: of checks the generation.
	row map[*framework.NodeInfo]int32
	// pages hold the rows, summaryPage to a page, so that a new view
	// shares the pages it does not change with the one handed out.
	pages [][]nodeSummary
	words []uint64
	// stale marks the rows found out of date by Of, for the next sync to
	// summarize again. Shared by the views of one list; the one part of
	// a view that changes (atomically) after it is handed out.
	stale []atomic.Uint64
}

// Syncer hands a cycle the summaries of its node list.
type Syncer interface {
	// Sync returns the view of nodes' summaries (nil: none, nothing is
	// skipped), which the caller must not change. op names its parallel
	// work in the parallelizer's metrics.
	Sync(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo) *View
}

// PassThrough is the Syncer that keeps nothing: no view, so no node is
// skipped.
type PassThrough struct{}

// Sync returns nil.
func (PassThrough) Sync(context.Context, fwk.CycleState, fwk.Parallelizer, string, []fwk.NodeInfo) *View {
	return nil
}

// summaryPage is how many rows a page holds.
const summaryPage = 256

func (v *View) rowAt(r int) *nodeSummary { return &v.pages[r/summaryPage][r%summaryPage] }

// Of returns ni's summary, or nil when there is none to trust: ni is not
// one of the view's nodes (a clone for nominated pods or preemption, a
// hand-built list), or its generation is not the summary's (its pods
// changed since; 0 proves nothing). Then nothing can be skipped. i is
// ni's position in the list the caller walks, or -1.
func (v *View) Of(i int, ni fwk.NodeInfo) *nodeSummary { return v.ofGen(i, ni, nil) }

// ofGen is of with the generations of the list the caller walks, if read
// already (nil: not), which spares reading them from the nodes.
func (v *View) ofGen(i int, ni fwk.NodeInfo, gens []int64) *nodeSummary {
	if v == nil {
		return nil
	}
	r := -1
	if i >= 0 && i < len(v.nodes) && v.nodes[i] == ni {
		r = i
	} else if p, ok := ni.(*framework.NodeInfo); ok {
		if x, ok := v.row[p]; ok {
			r = int(x)
		}
		gens = nil
	}
	if r < 0 {
		return nil
	}
	s := v.rowAt(r)
	var g int64
	if i >= 0 && i < len(gens) {
		g = gens[i]
	} else {
		g = ni.GetGeneration()
	}
	if g == 0 || g != s.gen {
		if g != 0 {
			v.stale[r/64].Or(1 << (r % 64))
		}
		return nil
	}
	return s
}

// has reports whether filter b may hold item h: false proves it does not.
func (v *View) has(b bloomRef, h uint64) bool {
	if b.words == 0 {
		return false
	}
	w := v.words[b.off : b.off+b.words]
	mask := uint64(b.words)*64 - 1
	p1, p2 := h&mask, (h>>32)&mask
	return w[p1>>6]&(1<<(p1&63)) != 0 && w[p2>>6]&(1<<(p2&63)) != 0
}

// hasAny reports whether filter b may hold one of items.
func (v *View) hasAny(b bloomRef, items []uint64) bool {
	if b.words == 0 {
		return false
	}
	for _, h := range items {
		if v.has(b, h) {
			return true
		}
	}
	return false
}

// mix64 is a 64-bit finalizer (murmur3's), spreading the bits of
// combined hashes over the word.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb93e45d4c7db
	h ^= h >> 33
	return h
}

// keyItem and pairItem are the items a label (or a requirement) stands
// for, from the hash of its key: a key that exists, and a key with a
// value. Two different items may hash alike; that costs a node not
// skipped, never a wrong result.
func keyItem(hk uint64) uint64 { return mix64(hk ^ 0x6a09e667f3bcc909) }

func pairItem(seed maphash.Seed, hk uint64, value string) uint64 {
	return mix64(hk*0x9e3779b97f4a7c15 + maphash.String(seed, value))
}

// labelItems appends the items of a label set: each pair and each key.
func labelItems(seed maphash.Seed, items []uint64, lbls map[string]string) []uint64 {
	for k, v := range lbls {
		hk := maphash.String(seed, k)
		items = append(items, pairItem(seed, hk, v), keyItem(hk))
	}
	return items
}

// selectorShape returns sel's requirements, or nothing when sel matches
// no label set (Nothing, from a nil selector). A nil Selector has none:
// it counts as matching anything.
func selectorShape(sel labels.Selector) (reqs labels.Requirements, nothing bool) {
	if sel == nil {
		return nil, false
	}
	reqs, selectsSome := sel.Requirements()
	return reqs, !selectsSome
}

// positiveKey reports whether r is positive (ok): it requires its key to
// be present with one of r's values (values true) or at all (values
// false); hk is the hash of the key.
func positiveKey(seed maphash.Seed, r *labels.Requirement) (hk uint64, values, ok bool) {
	switch r.Operator() {
	case selection.In, selection.Equals, selection.DoubleEquals:
		values, ok = true, true
	case selection.Exists, selection.GreaterThan, selection.LessThan:
		ok = true
	default:
		return 0, false, false
	}
	return maphash.String(seed, r.Key()), values, true
}

// valueItems appends the pairs of key hk with each of values.
func valueItems(seed maphash.Seed, items []uint64, hk uint64, values []string) []uint64 {
	for _, v := range values {
		items = append(items, pairItem(seed, hk, v))
	}
	return items
}

// requirementItems appends the items of one positive requirement of sel
// (the cheapest to test: one pair or one key if there is one) and reports
// open when sel has none: an empty selector, or one of NotIn and
// DoesNotExist only, which may match a pod without any label. A selector
// that matches nothing (Nothing, from a nil selector) adds nothing and is
// not open. A pod's labels satisfy sel only if they hold one of the
// appended items.
func requirementItems(seed maphash.Seed, items []uint64, sel labels.Selector) (_ []uint64, open bool) {
	reqs, nothing := selectorShape(sel)
	if nothing {
		return items, false
	}
	several := -1
	for i := range reqs {
		hk, values, ok := positiveKey(seed, &reqs[i])
		switch {
		case !ok:
			continue
		case !values:
			return append(items, keyItem(hk)), false
		}
		// The first requirement of the key, if it asks for one value
		// (without copying the values).
		if v, one := sel.RequiresExactMatch(reqs[i].Key()); one {
			return append(items, pairItem(seed, hk, v)), false
		}
		if several < 0 {
			several = i
		}
	}
	if several < 0 {
		return items, true
	}
	r := &reqs[several]
	return valueItems(seed, items, maphash.String(seed, r.Key()), r.ValuesUnsorted()), false
}

// termQuery is one of the incoming pod's terms, ready to be tested against
// nodes' pod filters.
type termQuery struct {
	// never: the selector matches no pod (Nothing).
	never bool
	// open: the selector has no positive requirement; any pod may match.
	open bool
	// reqs holds, per positive requirement, its alternatives: a pod
	// satisfying it holds one of them.
	reqs [][]uint64
}

// newTermQuery compiles t's label selector: every positive requirement,
// so that a node is skipped when any one of them is satisfied by none of
// its pods.
func newTermQuery(seed maphash.Seed, t *fwk.AffinityTerm) termQuery {
	reqs, nothing := selectorShape(t.Selector)
	if nothing {
		return termQuery{never: true}
	}
	var q termQuery
	for i := range reqs {
		hk, values, ok := positiveKey(seed, &reqs[i])
		switch {
		case !ok:
		case values:
			q.reqs = append(q.reqs, valueItems(seed, nil, hk, reqs[i].ValuesUnsorted()))
		default:
			q.reqs = append(q.reqs, []uint64{keyItem(hk)})
		}
	}
	q.open = len(q.reqs) == 0
	return q
}

// mayMatch reports whether some pod on the node of summary s may match the
// term: false proves that none does.
func (v *View) mayMatch(q *termQuery, s *nodeSummary) bool {
	if q.never || s.flags&noPods != 0 {
		return false
	}
	if q.open {
		return true
	}
	for _, alt := range q.reqs {
		if !v.hasAny(s.pods, alt) {
			return false
		}
	}
	return true
}

// mayMatchAll: some pod may match all of qs (false when qs is empty, as
// matchesAll).
func (v *View) mayMatchAll(qs []termQuery, s *nodeSummary) bool {
	if len(qs) == 0 {
		return false
	}
	for i := range qs {
		if !v.mayMatch(&qs[i], s) {
			return false
		}
	}
	return true
}

// mayMatchAny: some pod may match one of qs.
func (v *View) mayMatchAny(qs []termQuery, s *nodeSummary) bool {
	for i := range qs {
		if v.mayMatch(&qs[i], s) {
			return true
		}
	}
	return false
}

// termQueries compiles terms.
func termQueries(seed maphash.Seed, terms []fwk.AffinityTerm) []termQuery {
	qs := make([]termQuery, len(terms))
	for i := range terms {
		qs[i] = newTermQuery(seed, &terms[i])
	}
	return qs
}

// weightedQueries compiles weighted terms.
func weightedQueries(seed maphash.Seed, terms []fwk.WeightedAffinityTerm) []termQuery {
	qs := make([]termQuery, len(terms))
	for i := range terms {
		qs[i] = newTermQuery(seed, &terms[i].AffinityTerm)
	}
	return qs
}

// podItems are the items of the incoming pod's labels, for testing the
// filters of the existing pods' terms: a term whose positive requirement
// the pod satisfies holds one of them.
func (v *View) podItems(pod *v1.Pod) []uint64 {
	return labelItems(v.seed, nil, pod.Labels)
}

// RequiredQueries are what PreFilter's scans ask of a node's summary: the
// incoming pod's required terms, sorted as they are counted, and its
// labels, compiled for view. nil: no summaries, nothing is skipped.
type RequiredQueries struct {
	view *View
	// podItems are the incoming pod's labels as items (podItems).
	podItems                             []uint64
	affinity, antiAffinity, hostAffinity []termQuery
}

// NewRequiredQueries compiles the incoming pod and its required terms for
// v (nil: none, and so are the queries).
func NewRequiredQueries(v *View, pod *v1.Pod, affinity, antiAffinity, hostAffinity []fwk.AffinityTerm) *RequiredQueries {
	if v == nil {
		return nil
	}
	return &RequiredQueries{
		view:         v,
		podItems:     v.podItems(pod),
		affinity:     termQueries(v.seed, affinity),
		antiAffinity: termQueries(v.seed, antiAffinity),
		hostAffinity: termQueries(v.seed, hostAffinity),
	}
}

// Summaries is the view q was compiled for (nil: none).
func (q *RequiredQueries) Summaries() *View {
	if q == nil {
		return nil
	}
	return q.view
}

// SkipsIncoming reports whether node ni (at position i of the list
// summed, or -1; gens are that list's generations, if read) provably
// holds no pod that counts for the incoming pod's terms: none matching
// all affinity terms, none matching an anti-affinity term, none matching
// all host-scoped affinity terms.
func (q *RequiredQueries) SkipsIncoming(gens []int64, i int, ni fwk.NodeInfo) bool {
	if q == nil {
		return false
	}
	v := q.view
	sum := v.ofGen(i, ni, gens)
	return sum != nil && !v.mayMatchAll(q.affinity, sum) && !v.mayMatchAny(q.antiAffinity, sum) && !v.mayMatchAll(q.hostAffinity, sum)
}

// SkipsExistingAnti reports whether no required anti-affinity term of the
// pods on node ni (at position i of the list summed, or -1) can select
// the incoming pod (skip), and then whether one of those terms is
// topology.HostScoped (hostTerm), which the fast path notes matching or not.
func (q *RequiredQueries) SkipsExistingAnti(i int, ni fwk.NodeInfo) (skip, hostTerm bool) {
	if q == nil {
		return false, false
	}
	v := q.view
	sum := v.Of(i, ni)
	if sum == nil || sum.flags&antiOpen != 0 || v.hasAny(sum.anti, q.podItems) {
		return false, false
	}
	return true, sum.flags&hostAnti != 0
}

// ScoreQueries are what PreScore's scan asks of a node's summary: the
// incoming pod's preferred terms and its labels, compiled for view. nil:
// no summaries, nothing is skipped.
type ScoreQueries struct {
	view                     *View
	preferred, preferredAnti []termQuery
	podItems                 []uint64
}

// NewScoreQueries compiles pi's preferred terms and labels for v (nil:
// none, and so are the queries).
func NewScoreQueries(v *View, pi fwk.PodInfo) *ScoreQueries {
	if v == nil {
		return nil
	}
	return &ScoreQueries{
		view:          v,
		preferred:     weightedQueries(v.seed, pi.GetPreferredAffinityTerms()),
		preferredAnti: weightedQueries(v.seed, pi.GetPreferredAntiAffinityTerms()),
		podItems:      v.podItems(pi.GetPod()),
	}
}

// Skips reports whether node ni (at position i of the list summed, or
// -1; gens are that list's generations, if read) provably adds nothing to
// the score: none of its pods may match a preferred term of the incoming
// pod, and the incoming pod satisfies no scoring term of its pods.
func (q *ScoreQueries) Skips(gens []int64, i int, ni fwk.NodeInfo) bool {
	if q == nil {
		return false
	}
	v := q.view
	sum := v.ofGen(i, ni, gens)
	return sum != nil && sum.flags&scoreOpen == 0 && !v.mayMatchAny(q.preferred, sum) &&
		!v.mayMatchAny(q.preferredAnti, sum) && !v.hasAny(sum.score, q.podItems)
}

// Table is the Syncer that keeps the view across cycles.
type Table struct {
	mu sync.Mutex
	// primed: sync was called before; the view is built from the
	// second cycle that asks on, so that a plugin asked once (or a
	// scheduler that just started) pays no more than the scan. primedIn
	// is the cycle of the first call, until a view is built: its later
	// calls (PreScore after PreFilter) get none either.
	primed   bool
	primedIn fwk.CycleState
	seed     maphash.Seed
	view     *View
	// lent: view has been handed out and its rows must not change; the
	// pages in ownPage may (they are the view's own copies). Its words
	// are only ever appended to: a view reads none past its own length.
	lent    bool
	ownPage []bool
	// live counts the words the view's rows use; the rest is garbage
	// that a compaction drops.
	live int
}

// Sync brings the view up to date with nodes and returns it; the caller
// must not change it. Reading every node's generation would cost a cache
// miss per node in every cycle, most of which the indexes answer without
// a scan; so a row is checked against its node's generation only when it
// is used (of), and rows found out of date then are summarized again here
// at the next call. The list itself is compared pointer by pointer (the
// slices only): a list that changed is mapped anew, keeping the rows of
// the NodeInfos still listed. It returns nil in the first cycle that
// calls, in a pod-group cycle (its members are assumed on
// the snapshot without a generation of their own), and for an abandoned
// cycle.
func (t *Table) Sync(ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo) *View {
	if k8sline.PodGroupCycle(cs) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.primed {
		t.primed, t.primedIn = true, cs
		return nil
	}
	if t.primedIn != nil {
		if cs == t.primedIn {
			return nil
		}
		t.primedIn = nil
	}
	if t.view == nil || !slices.Equal(t.view.nodes, nodes) {
		if !t.remap(ctx, par, op, nodes) {
			t.view, t.lent = nil, false
			return nil
		}
	} else if !t.refresh(ctx, par, op) {
		return nil
	}
	t.lent = true
	return t.view
}

// Prime makes the table build its view from its first call on (tests of
// the paths through a view).
func (t *Table) Prime() { t.primed = true }

// remap makes a view for a list the view does not stand for, keeping the
// up-to-date rows of the NodeInfos the old view had and summarizing the
// others, those found stale included: the new view's stale marks start
// empty, so a row kept out of date would be computed in full at every use
// until found again under an unchanged list. A
// list with a NodeInfo of another implementation than the framework's, or
// one listed twice, has no view.
func (t *Table) remap(ctx context.Context, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo) bool {
	old := t.view
	if old == nil {
		t.seed = maphash.MakeSeed()
	}
	v := &View{seed: t.seed, nodes: slices.Clone(nodes), row: make(map[*framework.NodeInfo]int32, len(nodes)),
		stale: make([]atomic.Uint64, (len(nodes)+63)/64)}
	for p := 0; p < len(nodes); p += summaryPage {
		v.pages = append(v.pages, make([]nodeSummary, min(summaryPage, len(nodes)-p)))
	}
	t.live = 0
	var missing []int
	for i, ni := range nodes {
		p, ok := ni.(*framework.NodeInfo)
		if !ok {
			return false
		}
		if _, twice := v.row[p]; twice {
			return false
		}
		v.row[p] = int32(i)
		if old != nil {
			// A row is kept unless it is out of date: found so by Of (its
			// mark would not survive the new list's marks) or by its
			// node's generation, read here since the list is walked anyway.
			if r, ok := old.row[p]; ok && old.stale[r/64].Load()&(1<<(r%64)) == 0 {
				s := *old.rowAt(int(r))
				if g := ni.GetGeneration(); g == 0 || g == s.gen {
					*v.rowAt(i) = s
					t.live += int(s.pods.words + s.anti.words + s.score.words)
					continue
				}
			}
		}
		missing = append(missing, i)
	}
	if old != nil {
		v.words = old.words
	}
	fresh, ok := summarize(ctx, par, op, t.seed, nodes, missing)
	if !ok {
		return false
	}
	t.view, t.lent = v, false
	t.ownPage = make([]bool, len(v.pages))
	for i := range t.ownPage {
		t.ownPage[i] = true
	}
	t.install(fresh, missing)
	return true
}

// refresh summarizes again the rows marked stale whose node's generation
// changed. False: the cycle was abandoned.
func (t *Table) refresh(ctx context.Context, par fwk.Parallelizer, op string) bool {
	v := t.view
	var at []int
	for w := range v.stale {
		bits := v.stale[w].Swap(0)
		for bits != 0 {
			r := w*64 + mathbits.TrailingZeros64(bits)
			bits &= bits - 1
			if g := v.nodes[r].GetGeneration(); g != 0 && g != v.rowAt(r).gen {
				at = append(at, r)
			}
		}
	}
	if len(at) == 0 {
		return true
	}
	fresh, ok := summarize(ctx, par, op, t.seed, v.nodes, at)
	if !ok {
		// Mark them again for the next call.
		for _, r := range at {
			v.stale[r/64].Or(1 << (r % 64))
		}
		return false
	}
	if t.lent {
		c := *v
		c.pages = slices.Clone(v.pages)
		t.view, t.lent = &c, false
		clear(t.ownPage)
	}
	t.install(fresh, at)
	return true
}

// install puts the fresh summaries of the nodes at positions at into the
// view, appending their filters to its words, copying a page the view
// does not own before its first change, and compacts the words when more
// than half of them is garbage.
func (t *Table) install(fresh []partSummaries, at []int) {
	v := t.view
	j := 0
	for _, part := range fresh {
		base := uint32(len(v.words))
		v.words = append(v.words, part.words...)
		for _, s := range part.rows {
			for _, b := range []*bloomRef{&s.pods, &s.anti, &s.score} {
				if b.words > 0 {
					b.off += base
				}
			}
			page := at[j] / summaryPage
			if !t.ownPage[page] {
				v.pages[page] = slices.Clone(v.pages[page])
				t.ownPage[page] = true
			}
			old := v.rowAt(at[j])
			t.live += int(s.pods.words+s.anti.words+s.score.words) - int(old.pods.words+old.anti.words+old.score.words)
			*old = s
			j++
		}
	}
	if len(v.words) > 2*t.live+1024 {
		// Copy the live filters to new words, and every page: views
		// handed out keep the old ones.
		words := make([]uint64, 0, t.live)
		for p := range v.pages {
			if !t.ownPage[p] {
				v.pages[p] = slices.Clone(v.pages[p])
				t.ownPage[p] = true
			}
			for i := range v.pages[p] {
				s := &v.pages[p][i]
				for _, b := range []*bloomRef{&s.pods, &s.anti, &s.score} {
					if b.words > 0 {
						src := v.words[b.off : b.off+b.words]
						b.off = uint32(len(words))
						words = append(words, src...)
					}
				}
			}
		}
		v.words = words
	}
}

// partSummaries are the summaries of a run of nodes, their filters'
// offsets relative to words.
type partSummaries struct {
	rows  []nodeSummary
	words []uint64
}

// summarizeParts is how many parts summarize splits its nodes into when
// there are many.
const summarizeParts = 32

// summarize computes the summaries of the nodes at positions at, in
// parallel parts when there are more than a few. False: the cycle was
// abandoned.
func summarize(ctx context.Context, par fwk.Parallelizer, op string, seed maphash.Seed, nodes []fwk.NodeInfo, at []int) ([]partSummaries, bool) {
	parts := 1
	if len(at) > 64 {
		parts = summarizeParts
	}
	out := make([]partSummaries, parts)
	done := make([]bool, parts)
	work := func(p int) {
		var b summaryBuilder
		run := at[p*len(at)/parts : (p+1)*len(at)/parts]
		ps := partSummaries{rows: make([]nodeSummary, 0, len(run))}
		for _, i := range run {
			ps.rows = append(ps.rows, b.summarize(seed, nodes[i], &ps.words))
		}
		out[p], done[p] = ps, true
	}
	if parts == 1 {
		work(0)
		return out, true
	}
	par.Until(ctx, parts, work, op)
	return out, ctx.Err() == nil && !slices.Contains(done, false)
}

// summaryBuilder holds one worker's scratch.
type summaryBuilder struct {
	items []uint64
}

// summarize is ni's summary, its filters appended to words.
func (b *summaryBuilder) summarize(seed maphash.Seed, ni fwk.NodeInfo, words *[]uint64) nodeSummary {
	s := nodeSummary{gen: ni.GetGeneration()}
	pods := ni.GetPods()
	if len(pods) == 0 {
		s.flags |= noPods
	}
	b.items = b.items[:0]
	for _, p := range pods {
		b.items = labelItems(seed, b.items, p.GetPod().Labels)
	}
	s.pods = b.bloom(words)

	// Exactly the pods and terms a holder node's computation reads, for
	// hostAnti, which a skipped node must report as the full computation
	// would.
	b.items = b.items[:0]
	for _, p := range ni.GetPodsWithRequiredAntiAffinity() {
		terms := p.GetRequiredAntiAffinityTerms()
		for i := range terms {
			if topology.HostScoped(terms[i]) {
				s.flags |= hostAnti
			}
			b.addTermItems(seed, terms[i].Selector, &s.flags, antiOpen)
		}
	}
	s.anti = b.bloom(words)

	// Every pod's terms: the score computation reads those of the pods
	// with affinity (or of all pods, which have no others).
	b.items = b.items[:0]
	for _, p := range pods {
		terms := p.GetRequiredAffinityTerms()
		for i := range terms {
			b.addTermItems(seed, terms[i].Selector, &s.flags, scoreOpen)
		}
		for _, weighted := range [2][]fwk.WeightedAffinityTerm{p.GetPreferredAffinityTerms(), p.GetPreferredAntiAffinityTerms()} {
			for i := range weighted {
				b.addTermItems(seed, weighted[i].Selector, &s.flags, scoreOpen)
			}
		}
	}
	s.score = b.bloom(words)
	return s
}

// addTermItems adds the items of one positive requirement of sel, or sets flag
// open when it has none.
func (b *summaryBuilder) addTermItems(seed maphash.Seed, sel labels.Selector, flags *uint8, open uint8) {
	var isOpen bool
	if b.items, isOpen = requirementItems(seed, b.items, sel); isOpen {
		*flags |= open
	}
}

// bloom appends a filter holding b.items to words.
func (b *summaryBuilder) bloom(words *[]uint64) bloomRef {
	items := b.items
	if len(items) == 0 {
		return bloomRef{}
	}
	if len(items) > 8 {
		// Pods of one workload share their labels: size by the distinct
		// items.
		slices.Sort(items)
		items = slices.Compact(items)
	}
	n := uint32(1) << mathbits.Len32(uint32((len(items)*bloomBitsPerItem-1)/64))
	n = min(n, maxBloomWords)
	ref := bloomRef{off: uint32(len(*words)), words: n}
	*words = append(*words, make([]uint64, n)...)
	w := (*words)[ref.off:]
	mask := uint64(n)*64 - 1
	for _, h := range items {
		p1, p2 := h&mask, (h>>32)&mask
		w[p1>>6] |= 1 << (p1 & 63)
		w[p2>>6] |= 1 << (p2 & 63)
	}
	return ref
}

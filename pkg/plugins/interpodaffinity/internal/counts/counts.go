// Package counts holds the count types of the PlacementInterPodAffinity
// plugin: what one node contributes to a cluster-wide sum (NodeTally,
// ExistingAnti, IncomingMatches) and the sums (TopologyCounts, ScoreSum
// and their bundles), with how a contribution is added to and taken back
// from a sum; the layered maps the sums keep their domains in (layered.go),
// the counts a table keeps and lends to the sums (lend.go), and the read
// side Filter and Score use on a sum handed out (lookup.go).
// The plugin's filtering.go and scoring.go decide what goes into them; the
// scan (package nodeindex) and the term table (package aggregate) add them
// up.
//
// Invariants: a sum handed out is never changed again (AddPod and
// RemovePod fork before their first write), and neither is what it
// borrows of a table's counts (Domains, lend.go: a fork of them); a
// domain whose count drops to zero is deleted, so an empty TopologyCounts
// means "no such pod anywhere".
//
// Memory: a layered map holds its base and the delta since (at most about
// the square root of twice the base's domains before it is folded); a
// forked sum shares the base and copies the delta. A base a sum borrowed
// lives as long as the sum.
package counts

import (
	"fmt"
	"iter"
	"maps"
	"slices"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodeindex"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// TopologyCounts counts relevant pods per topology domain. An entry that
// drops to zero through AddPod/RemovePod is deleted, so that an empty map
// keeps meaning "no such pod anywhere" (the first-pod-of-a-series rule relies
// on it).
//
// The counts are layered (layered.go): a cycle's state forks its counts
// before AddPod or RemovePod first changes them, and a clone of a state
// that changed them forks them again, which costs the few domains that
// changed instead of a copy of every domain (thousands for hostname-scoped
// terms).
type TopologyCounts struct {
	domains layered[topology.Pair, int64]
	// keys counts the domains present per topology key, so that
	// coversNode looks up only the node's labels that can match.
	keys KeyTally
}

// NewTopologyCounts returns empty counts that may be changed. The zero
// TopologyCounts is empty too, and read-only until forked.
func NewTopologyCounts() TopologyCounts {
	return TopologyCounts{domains: newLayered[topology.Pair, int64]()}
}

// Get is the count of domain p (0 when absent).
func (c *TopologyCounts) Get(p topology.Pair) int64 {
	n, _ := c.domains.Get(p)
	return n
}

// Len is the number of domains present.
func (c *TopologyCounts) Len() int { return c.domains.Len() }

// Keys counts the domains present per topology key.
func (c *TopologyCounts) Keys() KeyTally { return c.keys }

// Lookup reads the counts, which must no longer change, for Filter.
func (c *TopologyCounts) Lookup() Lookup[int64] { return LookupOf(&c.domains) }

// AddTo adds delta to domain p, deleting it when it drops to zero.
func (c *TopologyCounts) AddTo(p topology.Pair, delta int64) {
	switch had, has := addCount(&c.domains, p, delta); {
	case !had && has:
		c.keys.Add(p.Key, 1)
	case had && !has:
		c.keys.Add(p.Key, -1)
	}
}

// Add adds delta to the domain of key on a node with nodeLabels; a node
// without the key belongs to no domain of it and counts nowhere.
func (c *TopologyCounts) Add(nodeLabels map[string]string, key string, delta int64) {
	v, ok := nodeLabels[key]
	if !ok {
		return
	}
	c.AddTo(topology.Pair{Key: key, Value: v}, delta)
}

// Apply adds (sign 1) or takes back (sign -1) one node's tally. Tallies
// hold positive counts only, so a domain whose count drops to zero has
// no pod left and is deleted, as add does.
func (c *TopologyCounts) Apply(t NodeTally, sign int64) {
	for _, d := range t {
		c.AddTo(d.pair, sign*d.count)
	}
}

// Merge adds the counts of src, which are positive (a sum of tallies),
// into c.
func (c *TopologyCounts) Merge(src *TopologyCounts) {
	for p, n := range src.domains.All() {
		c.AddTo(p, n)
	}
}

// Fork returns counts that may be changed while c, shared, is not.
func (c *TopologyCounts) Fork() TopologyCounts {
	return TopologyCounts{domains: c.domains.Fork(), keys: slices.Clone(c.keys)}
}

// Seal readies the counts to be handed out; they are never changed again
// (layered.Freeze: a fold due is left to the first fork, which most
// cycles never make).
func (c *TopologyCounts) Seal() { c.domains.Freeze() }

// ToMap is the counts as a plain map, for messages and tests.
func (c *TopologyCounts) ToMap() map[topology.Pair]int64 { return maps.Collect(c.domains.All()) }

func (c TopologyCounts) String() string { return fmt.Sprint(c.ToMap()) }

// CoversNode reports whether node nt lies in a domain with a positive
// count. Only the keys that have domains are looked up: usually one or
// two, while nodes carry a dozen labels.
func (c *TopologyCounts) CoversNode(nt *topology.Node) bool {
	for _, kc := range c.keys {
		if v, ok := nt.Get(kc.Key); ok && c.Get(topology.Pair{Key: kc.Key, Value: v}) > 0 {
			return true
		}
	}
	return false
}

// KeyTally counts something per topology key (the domains a sum holds
// under it, or the tally entries that made them) and drops a key whose
// count reaches zero. A slice, not a map: sums hold a key or two, and
// Filter and Score walk them for every node.
type KeyTally []KeyCount

// KeyCount is one key's count in a KeyTally.
type KeyCount struct {
	Key string
	N   int64
}

func (t *KeyTally) Add(key string, delta int64) {
	for i := range *t {
		if (*t)[i].Key == key {
			if (*t)[i].N += delta; (*t)[i].N == 0 {
				*t = slices.Delete(*t, i, i+1)
			}
			return
		}
	}
	*t = append(*t, KeyCount{Key: key, N: delta})
}

// NodeTally is one node's contribution to a TopologyCounts (or to a score
// map). On one node a topology key has exactly one value, so entries are
// unique per key; there are only as many as distinct term keys, which makes
// a linear scan cheaper than a map. Nodes that contribute nothing allocate
// nothing, and the scan builds each node's tally in the storage of the one
// before (nodeindex.Scan), so that a scan allocates no tally per node.
type NodeTally []DomainCount

type DomainCount struct {
	pair  topology.Pair
	count int64
}

// Reset empties t and keeps its storage for the next node (nodeindex.Ops.Compute).
func (t NodeTally) Reset() NodeTally { return t[:0] }

// Empty: t adds nothing to a sum.
func (t NodeTally) Empty() bool { return len(t) == 0 }

// Add reads the node's value of key through nt, so that a key and value
// read through a view are the view's own strings (topology.Table.Sync).
func (t *NodeTally) Add(nt *topology.Node, key string, delta int64) {
	key, v, ok := nt.Pair(key)
	if !ok {
		return
	}
	for i := range *t {
		if (*t)[i].pair.Key == key {
			(*t)[i].count += delta
			return
		}
	}
	*t = append(*t, DomainCount{pair: topology.Pair{Key: key, Value: v}, count: delta})
}

// ExistingAnti is one holder node's part of s.existingAntiAffinity.
type ExistingAnti struct {
	Tally NodeTally
	// HostScoped (fast path): a pod on the node has a topology.HostScoped required
	// anti-affinity term, which Filter checks on the node itself.
	HostScoped bool
}

// Empty: v adds nothing to a sum.
func (v ExistingAnti) Empty() bool { return len(v.Tally) == 0 && !v.HostScoped }

// ExistingAntiSum is s.existingAntiAffinity over all holder nodes, and how
// many nodes hold hostname-scoped terms (fast path): those of the list
// scanned, or of all nodes for the term table's sum (package aggregate),
// so that only whether there are any is read.
type ExistingAntiSum struct {
	Counts          TopologyCounts
	HostScopedNodes int64
}

func NewExistingAntiSum() *ExistingAntiSum {
	return &ExistingAntiSum{Counts: NewTopologyCounts()}
}

func (sum *ExistingAntiSum) Apply(v ExistingAnti, sign int64) {
	sum.Counts.Apply(v.Tally, sign)
	if v.HostScoped {
		sum.HostScopedNodes += sign
	}
}

func (sum *ExistingAntiSum) Merge(src *ExistingAntiSum) {
	sum.Counts.Merge(&src.Counts)
	sum.HostScopedNodes += src.HostScopedNodes
}

func (sum *ExistingAntiSum) Seal() { sum.Counts.Seal() }

// IncomingMatches is one node's part of the counts for the incoming pod's
// required terms.
type IncomingMatches struct {
	Affinity, AntiAffinity NodeTally
	HostAffinity           int64
}

// Empty: v adds nothing to a sum.
func (v IncomingMatches) Empty() bool {
	return len(v.Affinity) == 0 && len(v.AntiAffinity) == 0 && v.HostAffinity == 0
}

// IncomingSum is IncomingMatches over all nodes.
type IncomingSum struct {
	Affinity, AntiAffinity TopologyCounts
	HostAffinity           int64
}

func NewIncomingSum() *IncomingSum {
	return &IncomingSum{Affinity: NewTopologyCounts(), AntiAffinity: NewTopologyCounts()}
}

func (sum *IncomingSum) Apply(v IncomingMatches, sign int64) {
	sum.Affinity.Apply(v.Affinity, sign)
	sum.AntiAffinity.Apply(v.AntiAffinity, sign)
	sum.HostAffinity += sign * v.HostAffinity
}

func (sum *IncomingSum) Merge(src *IncomingSum) {
	sum.Affinity.Merge(&src.Affinity)
	sum.AntiAffinity.Merge(&src.AntiAffinity)
	sum.HostAffinity += src.HostAffinity
}

func (sum *IncomingSum) Seal() {
	sum.Affinity.Seal()
	sum.AntiAffinity.Seal()
}

// ScoreSum holds the summed weights per topology domain, as PreScore merges
// them over all nodes. A domain is in it while some node's tally has an
// entry for it, even when the weights cancel out to zero: such an entry
// still counts as something to score, as upstream.
type ScoreSum struct {
	// domains is layered, as TopologyCounts' domains are, so that Filter
	// and Score read both through one lookup type (LookupOf).
	domains layered[topology.Pair, DomainWeight]
	// lent are the tables' maps the sum reads through besides domains
	// (AddDomains): a domain's weight and entries are the sum of domains'
	// and theirs.
	lent []lentWeights
	// keys counts the entries of each topology key (as DomainWeight).
	keys KeyTally
}

type DomainWeight struct {
	Weight int64
	// Entries is positive while something weighed the domain, even to a
	// zero weight, and only then: a sum of node tallies counts the
	// tallies with an entry for the domain, a sum built by AddTo (package
	// aggregate) the (incoming, existing) pairs. Only whether it is
	// positive decides anything.
	Entries int64
}

func NewScoreSum() *ScoreSum {
	return &ScoreSum{domains: newLayered[topology.Pair, DomainWeight]()}
}

// Apply adds (sign 1) or takes back (sign -1) one node's tally.
func (s *ScoreSum) Apply(t NodeTally, sign int64) {
	for _, d := range t {
		w, had := s.domains.Get(d.pair)
		w.Weight += sign * d.count
		w.Entries += sign
		if w.Entries == 0 {
			// No tally has the domain any more (its weight is 0 too).
			w = DomainWeight{}
		}
		s.domains.Update(d.pair, w, had)
		s.keys.Add(d.pair.Key, sign)
	}
}

// AddTo adds weight and entries to domain p, as entries tally entries
// (the same node's or others') of the domain whose weights sum to weight
// would: the domain stays while it has entries, whatever its weight.
func (s *ScoreSum) AddTo(p topology.Pair, weight, entries int64) {
	w, had := s.domains.Get(p)
	w.Weight += weight
	w.Entries += entries
	if w.Entries == 0 {
		w = DomainWeight{}
	}
	s.domains.Update(p, w, had)
	s.keys.Add(p.Key, entries)
}

// Merge adds src, a sum of tallies (which lends nothing), into s: weights
// and entries add up per domain, and each entry of src counts for its key
// as it did there.
func (s *ScoreSum) Merge(src *ScoreSum) {
	for p, w := range src.domains.All() {
		d, had := s.domains.Get(p)
		d.Weight += w.Weight
		d.Entries += w.Entries
		s.domains.Update(p, d, had)
		s.keys.Add(p.Key, w.Entries)
	}
}

func (s *ScoreSum) Seal() { s.domains.Seal() }

// Keys counts the entries of each topology key (as DomainWeight); a key
// is in it while some domain of it is.
func (s *ScoreSum) Keys() KeyTally { return s.keys }

// Empty: no domain is present.
func (s *ScoreSum) Empty() bool { return s.domains.Len() == 0 && len(s.lent) == 0 }

// Lookup reads the weights, which must no longer change, for Score.
func (s *ScoreSum) Lookup() ScoreLookup {
	return ScoreLookup{own: LookupOf(&s.domains), lent: s.lent}
}

// ToMap is the weights as a plain map, for tests.
func (s *ScoreSum) ToMap() map[topology.Pair]DomainWeight {
	l := s.Lookup()
	return maps.Collect(l.All())
}

// ScoreLookup reads a ScoreSum that is no longer changed, for Score: a
// domain's weight is the sum of the sum's own and its lent maps'.
type ScoreLookup struct {
	own  Lookup[DomainWeight]
	lent []lentWeights
}

// Get returns p's weight and entries, zero when p is absent.
func (l *ScoreLookup) Get(p topology.Pair) DomainWeight {
	w := l.own.Get(p)
	for i := range l.lent {
		if lw := &l.lent[i]; lw.key == p.Key {
			if n := lw.counts.Get(p); n != 0 {
				w.Weight += lw.perPair * n
				w.Entries += n
			}
		}
	}
	return w
}

// All yields the domains present with their weights, in no particular
// order (tests: the domains are the very ones the sum holds). It costs a
// map of them all.
func (l *ScoreLookup) All() iter.Seq2[topology.Pair, DomainWeight] {
	out := maps.Collect(l.own.All())
	for _, lw := range l.lent {
		for p, n := range lw.counts.All() {
			w := out[p]
			w.Weight += lw.perPair * n
			w.Entries += n
			out[p] = w
		}
	}
	return maps.All(out)
}

// sum is what the scan (nodeindex.Scan) needs of a sum of contributions V.
type sum[V, A any] interface {
	Apply(v V, sign int64)
	Merge(src A)
	Seal()
}

// OpsOf tells the scan how contributions V add up into sums A, computeAt
// being one node's contribution, told its position in the list summed
// (nodeindex.Ops.At).
func OpsOf[V any, A sum[V, A]](newSum func() A, computeAt func(i int, ni fwk.NodeInfo, reuse V) V) nodeindex.Ops[V, A] {
	return nodeindex.Ops[V, A]{
		NewSum: newSum,
		Apply:  A.Apply,
		Merge:  A.Merge,
		Seal:   A.Seal,
	}.At(computeAt)
}

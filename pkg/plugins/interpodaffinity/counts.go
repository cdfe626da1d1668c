package interpodaffinity

// This file holds the count types: what one node contributes to a
// cluster-wide sum (nodeTally, existingAnti, incomingMatches) and the sums
// (topologyCounts, scoreSum and their bundles), with how a contribution
// is added to and taken back from a sum. filtering.go and scoring.go
// decide what goes into them; ops.go hands them to the index.

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// topologyPair names a topology domain: the nodes whose label key has value.
type topologyPair struct {
	key   string
	value string
}

// topologyCounts counts relevant pods per topology domain. An entry that
// drops to zero through AddPod/RemovePod is deleted, so that an empty map
// keeps meaning "no such pod anywhere" (the first-pod-of-a-series rule relies
// on it).
//
// The counts are layered (layered.go): the index hands counts out to a
// cycle and then patches a fork of them for the next one, which costs the
// few domains that changed instead of a copy of every domain (thousands
// for hostname-scoped terms).
type topologyCounts struct {
	domains layered[topologyPair, int64]
	// keys counts the domains present per topology key, so that
	// coversNode looks up only the node's labels that can match.
	keys keyTally
}

func newTopologyCounts() topologyCounts {
	return topologyCounts{domains: newLayered[topologyPair, int64]()}
}

// get is the count of domain p (0 when absent).
func (c *topologyCounts) get(p topologyPair) int64 {
	n, _ := c.domains.get(p)
	return n
}

// len is the number of domains present.
func (c *topologyCounts) len() int { return c.domains.len() }

// addTo adds delta to domain p, deleting it when it drops to zero.
func (c *topologyCounts) addTo(p topologyPair, delta int64) {
	old, had := c.domains.get(p)
	n := old + delta
	c.domains.update(p, n, had)
	switch {
	case !had && n != 0:
		c.keys.add(p.key, 1)
	case had && n == 0:
		c.keys.add(p.key, -1)
	}
}

// add adds delta to the domain of key on a node with nodeLabels; a node
// without the key belongs to no domain of it and counts nowhere.
func (c *topologyCounts) add(nodeLabels map[string]string, key string, delta int64) {
	v, ok := nodeLabels[key]
	if !ok {
		return
	}
	c.addTo(topologyPair{key: key, value: v}, delta)
}

// apply adds (sign 1) or takes back (sign -1) one node's tally. Tallies
// hold positive counts only, so a domain whose count drops to zero has
// no pod left and is deleted, as add does.
func (c *topologyCounts) apply(t nodeTally, sign int64) {
	for _, d := range t {
		c.addTo(d.pair, sign*d.count)
	}
}

// merge adds the counts of src, which are positive (a sum of tallies),
// into c.
func (c *topologyCounts) merge(src *topologyCounts) {
	for p, n := range src.domains.all() {
		c.addTo(p, n)
	}
}

// fork returns counts that may be changed while c, shared, is not.
func (c *topologyCounts) fork() topologyCounts {
	return topologyCounts{domains: c.domains.fork(), keys: slices.Clone(c.keys)}
}

// seal readies the counts to be handed out (layered.seal).
func (c *topologyCounts) seal() { c.domains.seal() }

// toMap is the counts as a plain map, for messages and tests.
func (c *topologyCounts) toMap() map[topologyPair]int64 { return maps.Collect(c.domains.all()) }

func (c topologyCounts) String() string { return fmt.Sprint(c.toMap()) }

// coversNode reports whether node nt lies in a domain with a positive
// count. Only the keys that have domains are looked up: usually one or
// two, while nodes carry a dozen labels.
func (c *topologyCounts) coversNode(nt *nodeTopology) bool {
	for _, kc := range c.keys {
		if v, ok := nt.get(kc.key); ok && c.get(topologyPair{key: kc.key, value: v}) > 0 {
			return true
		}
	}
	return false
}

// keyTally counts something per topology key (the domains a sum holds
// under it, or the tally entries that made them) and drops a key whose
// count reaches zero. A slice, not a map: sums hold a key or two, and
// Filter and Score walk them for every node.
type keyTally []keyCount

type keyCount struct {
	key string
	n   int64
}

func (t *keyTally) add(key string, delta int64) {
	for i := range *t {
		if (*t)[i].key == key {
			if (*t)[i].n += delta; (*t)[i].n == 0 {
				*t = slices.Delete(*t, i, i+1)
			}
			return
		}
	}
	*t = append(*t, keyCount{key: key, n: delta})
}

// nodeTally is one node's contribution to a topologyCounts (or to a score
// map). On one node a topology key has exactly one value, so entries are
// unique per key; there are only as many as distinct term keys, which makes
// a linear scan cheaper than a map. Nodes that contribute nothing allocate
// nothing, and the plain scan builds each node's tally in the storage of
// the one before (computeSum), so that only the index keeps tallies.
type nodeTally []domainCount

type domainCount struct {
	pair  topologyPair
	count int64
}

// reset empties t and keeps its storage for the next node (sumOps.compute).
func (t nodeTally) reset() nodeTally { return t[:0] }

// empty: t adds nothing to a sum (sumOps.empty).
func (t nodeTally) empty() bool { return len(t) == 0 }

// add reads the node's value of key through nt, so that a key and value
// read through a view are the view's own strings (topologyTable.sync).
func (t *nodeTally) add(nt *nodeTopology, key string, delta int64) {
	key, v, ok := nt.pair(key)
	if !ok {
		return
	}
	for i := range *t {
		if (*t)[i].pair.key == key {
			(*t)[i].count += delta
			return
		}
	}
	*t = append(*t, domainCount{pair: topologyPair{key: key, value: v}, count: delta})
}

// existingAnti is one holder node's part of s.existingAntiAffinity.
type existingAnti struct {
	tally nodeTally
	// hostScoped (fast path): a pod on the node has a hostScoped required
	// anti-affinity term, which Filter checks on the node itself.
	hostScoped bool
}

// empty: v adds nothing to a sum (sumOps.empty).
func (v existingAnti) empty() bool { return len(v.tally) == 0 && !v.hostScoped }

// hostScoped reports whether a term's domain is a single node (by its
// kubernetes.io/hostname label), which the hostname fast path checks
// against the candidate node's own pods instead of counting cluster-wide.
// The one rule for the decisions and for the pod summaries, which must
// note exactly the terms the decisions do (existingAnti.hostScoped).
func hostScoped(t fwk.AffinityTerm) bool { return t.TopologyKey == v1.LabelHostname }

// existingAntiSum is s.existingAntiAffinity over all holder nodes, and how
// many of them hold hostname-scoped terms.
type existingAntiSum struct {
	counts          topologyCounts
	hostScopedNodes int64
}

func newExistingAntiSum() *existingAntiSum {
	return &existingAntiSum{counts: newTopologyCounts()}
}

func (sum *existingAntiSum) apply(v existingAnti, sign int64) {
	sum.counts.apply(v.tally, sign)
	if v.hostScoped {
		sum.hostScopedNodes += sign
	}
}

func (sum *existingAntiSum) merge(src *existingAntiSum) {
	sum.counts.merge(&src.counts)
	sum.hostScopedNodes += src.hostScopedNodes
}

func (sum *existingAntiSum) clone() *existingAntiSum {
	return &existingAntiSum{counts: sum.counts.fork(), hostScopedNodes: sum.hostScopedNodes}
}

func (sum *existingAntiSum) seal() { sum.counts.seal() }

// incomingMatches is one node's part of the counts for the incoming pod's
// required terms.
type incomingMatches struct {
	affinity, antiAffinity nodeTally
	hostAffinity           int64
}

// empty: v adds nothing to a sum (sumOps.empty).
func (v incomingMatches) empty() bool {
	return len(v.affinity) == 0 && len(v.antiAffinity) == 0 && v.hostAffinity == 0
}

// incomingSum is incomingMatches over all nodes.
type incomingSum struct {
	affinity, antiAffinity topologyCounts
	hostAffinity           int64
}

func newIncomingSum() *incomingSum {
	return &incomingSum{affinity: newTopologyCounts(), antiAffinity: newTopologyCounts()}
}

func (sum *incomingSum) apply(v incomingMatches, sign int64) {
	sum.affinity.apply(v.affinity, sign)
	sum.antiAffinity.apply(v.antiAffinity, sign)
	sum.hostAffinity += sign * v.hostAffinity
}

func (sum *incomingSum) merge(src *incomingSum) {
	sum.affinity.merge(&src.affinity)
	sum.antiAffinity.merge(&src.antiAffinity)
	sum.hostAffinity += src.hostAffinity
}

func (sum *incomingSum) clone() *incomingSum {
	return &incomingSum{affinity: sum.affinity.fork(), antiAffinity: sum.antiAffinity.fork(), hostAffinity: sum.hostAffinity}
}

func (sum *incomingSum) seal() {
	sum.affinity.seal()
	sum.antiAffinity.seal()
}

// scoreSum holds the summed weights per topology domain, as PreScore merges
// them over all nodes. A domain is in it while some node's tally has an
// entry for it, even when the weights cancel out to zero: such an entry
// still counts as something to score, as upstream.
type scoreSum struct {
	// domains is layered: the index patches a fork of a sum it has
	// handed out, which costs a fraction of copying a domain per node.
	domains layered[topologyPair, domainWeight]
	// keys counts the tally entries of each topology key.
	keys keyTally
}

type domainWeight struct {
	weight int64
	// entries: how many node tallies have an entry for the domain.
	entries int64
}

func newScoreSum() *scoreSum {
	return &scoreSum{domains: newLayered[topologyPair, domainWeight]()}
}

// apply adds (sign 1) or takes back (sign -1) one node's tally.
func (s *scoreSum) apply(t nodeTally, sign int64) {
	for _, d := range t {
		w, had := s.domains.get(d.pair)
		w.weight += sign * d.count
		w.entries += sign
		if w.entries == 0 {
			// No tally has the domain any more (its weight is 0 too).
			w = domainWeight{}
		}
		s.domains.update(d.pair, w, had)
		s.keys.add(d.pair.key, sign)
	}
}

// merge adds src, a sum of tallies, into s: weights and entries add up
// per domain, and each entry of src counts for its key as it did there.
func (s *scoreSum) merge(src *scoreSum) {
	for p, w := range src.domains.all() {
		d, had := s.domains.get(p)
		d.weight += w.weight
		d.entries += w.entries
		s.domains.update(p, d, had)
		s.keys.add(p.key, w.entries)
	}
}

func (s *scoreSum) clone() *scoreSum {
	return &scoreSum{domains: s.domains.fork(), keys: slices.Clone(s.keys)}
}

func (s *scoreSum) seal() { s.domains.seal() }

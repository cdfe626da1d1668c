package counts

// This file holds the counts a table keeps across cycles and lends to
// the sums it hands out. A term scoped to the hostname that many pods
// carry counts in thousands of domains, and a sum of it built anew each
// cycle cost a hashed insert per domain: most of PreFilter's and
// PreScore's time on such workloads. The table keeps such counts layered
// (layered.go), and a sum takes their base as it is and a copy of the
// few domains changed since (a fork): about the square root of the
// domains per cycle, as for the forks AddPod makes.

import (
	"iter"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// Domains counts something positive per domain of one topology key, kept
// by a table across cycles (package aggregate: a distinct term's or a
// class's counts). The zero Domains is empty and ready to use.
//
// Invariants: every count held is positive (one that drops to zero is
// deleted); every domain has the same key. A sum that borrows the counts
// holds a fork of them, whose base no one changes (layered never writes
// a base), so the table goes on changing its own.
type Domains struct {
	l layered[topology.Pair, int64]
	// total is the sum of the counts.
	total int64
}

// Add adds n to domain p, deleting it when it drops to zero.
func (d *Domains) Add(p topology.Pair, n int64) {
	if n == 0 {
		return
	}
	if d.l.delta == nil {
		// No base until the first lend folds one: most counts (a
		// class's, a term's of few pods) are small and never lent.
		d.l.delta = map[topology.Pair]int64{}
	}
	addCount(&d.l, p, n)
	d.total += n
}

// Len is the number of domains present.
func (d *Domains) Len() int {
	if d == nil {
		return 0
	}
	return d.l.Len()
}

// All yields the domains present with their counts, in no particular
// order.
func (d *Domains) All() iter.Seq2[topology.Pair, int64] {
	if d == nil {
		return func(func(topology.Pair, int64) bool) {}
	}
	return d.l.All()
}

// lend returns a fork of d for a sum: d's base, and a copy of the domains
// changed since. A delta grown large next to the base is folded into a
// new base first, in d itself, so that the forks after it copy little.
func (d *Domains) lend() layered[topology.Pair, int64] {
	d.l.Seal()
	return d.l.Fork()
}

// AddDomains adds src's counts, all of key, to c. An empty c becomes a
// fork of src (Domains.lend): a sum of one term or class costs the
// domains changed since src's base, however many domains it has. A c
// with fewer domains than src becomes a fork of src too, its own domains
// added to it, so that a zone term matched before a hostname term costs
// its few domains, not the hostname's thousands. Otherwise each domain of
// src is added, as AddTo does.
func (c *TopologyCounts) AddDomains(key string, src *Domains) {
	n := src.Len()
	if n == 0 {
		return
	}
	if c.domains.Len() >= n {
		c.domains.reserve(n)
		for p, v := range src.All() {
			c.AddTo(p, v)
		}
		return
	}
	had := c.domains
	c.domains, c.keys = src.lend(), c.keys[:0]
	c.keys.Add(key, int64(n))
	c.domains.reserve(had.Len())
	for p, v := range had.All() {
		c.AddTo(p, v)
	}
}

// maxLentWeights bounds the maps a ScoreSum reads through: Score looks
// each of them up for every node scored, so beyond a few a map is added
// domain by domain instead.
const maxLentWeights = 4

// lentWeights is counts lent to a ScoreSum (a fork of a Domains, read
// through a lookup): each of its domains weighs perPair per count, and
// counts that many entries.
type lentWeights struct {
	key     string
	counts  Lookup[int64]
	perPair int64
}

// AddDomains adds src's counts, all of key, to s, each count a pair
// weighing perPair: what AddTo(p, perPair*n, n) adds for each domain p of
// count n. With lend, s borrows src (a fork, Domains.lend: Score reads it
// through the sum's lookup, with one more lookup per node scored, instead
// of a copy of every domain), unless s reads through maxLentWeights
// already. The caller lends the large counts, which cost more to copy
// than the lookups cost.
func (s *ScoreSum) AddDomains(key string, src *Domains, perPair int64, lend bool) {
	if src.Len() == 0 {
		return
	}
	if lend && len(s.lent) < maxLentWeights {
		l := src.lend()
		s.lent = append(s.lent, lentWeights{key: key, counts: LookupOf(&l), perPair: perPair})
		s.keys.Add(key, src.total)
		return
	}
	for p, v := range src.All() {
		s.AddTo(p, perPair*v, v)
	}
}

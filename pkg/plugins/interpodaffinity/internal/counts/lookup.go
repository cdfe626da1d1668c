package counts

// This file holds the read side of a sum handed to a cycle, for Filter and
// Score: they look up a domain or two per node, for hundreds of nodes per
// cycle, in a sum that no one changes any more (layered.go). A layered
// map looks a key up in its delta and then in its base, and each lookup
// hashes the key (two strings) again; the lookup here compares a few
// domains without hashing when the sum has only a few (zone-scoped terms),
// and otherwise hashes once for most domains.

import (
	"iter"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// maxSmallLookup bounds the domains a lookup compares one by one: a
// comparison costs a fraction of hashing a domain (for a value read
// through the topology view, whose strings the sums share, it is a
// pointer comparison), and the lookup holds them in place, so that
// PreFilter and PreScore allocate nothing for them.
const maxSmallLookup = 4

// Lookup reads a layered map of domains that is no longer changed
// (a sum handed out) and answers as layered.get does.
type Lookup[V comparable] struct {
	// small[:nSmall] holds every domain present, when they are few
	// (isSmall).
	small   [maxSmallLookup]domainValue[V]
	nSmall  int
	isSmall bool
	// Otherwise base and delta are the map's layers, and changed has the
	// bit domainBit of every domain in delta set: a domain whose bit is
	// clear is not in delta, so one lookup in base answers for it.
	base, delta map[topology.Pair]V
	changed     [4]uint64
}

type domainValue[V comparable] struct {
	pair  topology.Pair
	value V
}

// LookupOf returns a lookup of m, which must not change while the lookup
// is used. Building it copies m's domains when they are few, and
// otherwise m's delta: the domains changed since its base was folded
// (layered.foldDue bounds them).
func LookupOf[V comparable](m *layered[topology.Pair, V]) Lookup[V] {
	if n := m.Len(); n <= maxSmallLookup {
		l := Lookup[V]{isSmall: true}
		for p, v := range m.All() {
			l.small[l.nSmall] = domainValue[V]{pair: p, value: v}
			l.nSmall++
		}
		return l
	}
	if len(m.base) == 0 {
		// Built from scratch: all in delta, which over an empty base
		// holds no deletion marks, so it reads as a base.
		return Lookup[V]{base: m.delta}
	}
	l := Lookup[V]{base: m.base}
	if len(m.delta) > 0 {
		l.delta = m.delta
		for p := range m.delta {
			b := domainBit(p.Value)
			l.changed[b>>6] |= 1 << (b & 63)
		}
	}
	return l
}

// Get returns p's value, the zero V when p is absent: layered.get's
// value, which Filter's counts and Score's weights read alike.
func (l *Lookup[V]) Get(p topology.Pair) V {
	if l.isSmall {
		for i := range l.small[:l.nSmall] {
			if d := &l.small[i]; d.pair.Value == p.Value && d.pair.Key == p.Key {
				return d.value
			}
		}
		var zero V
		return zero
	}
	if l.delta != nil {
		if b := domainBit(p.Value); l.changed[b>>6]&(1<<(b&63)) != 0 {
			// A zero in delta marks a domain of base as deleted: absent.
			if v, ok := l.delta[p]; ok {
				return v
			}
		}
	}
	return l.base[p]
}

// All yields the domains present with their values, in no particular
// order (tests: the domains are the very ones the sum holds).
func (l *Lookup[V]) All() iter.Seq2[topology.Pair, V] {
	return func(yield func(topology.Pair, V) bool) {
		if l.isSmall {
			for _, d := range l.small[:l.nSmall] {
				if !yield(d.pair, d.value) {
					return
				}
			}
			return
		}
		m := layered[topology.Pair, V]{base: l.base, delta: l.delta}
		for p, v := range m.All() {
			if !yield(p, v) {
				return
			}
		}
	}
}

// domainBit is a cheap hash of a domain's value, 0-255, from its length
// and last three bytes: where domain values differ (node names, zones),
// they differ at the end.
func domainBit(v string) uint8 {
	n := len(v)
	x := uint32(n)
	if n >= 3 {
		x ^= uint32(v[n-1])<<8 | uint32(v[n-2])<<16 | uint32(v[n-3])<<24
	} else if n > 0 {
		x ^= uint32(v[n-1]) << 8
	}
	return uint8((x * 0x9E3779B1) >> 24)
}

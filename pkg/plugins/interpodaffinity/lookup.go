package interpodaffinity

// This file holds the read side of a sum handed to a cycle, for Filter and
// Score: they look up a domain or two per node, for hundreds of nodes per
// cycle, in a sum that no one changes any more (layered.go). A layered
// map looks a key up in its delta and then in its base, and each lookup
// hashes the key again; the lookup here hashes once for most keys.

// domainLookup reads a layered map of domains that is no longer changed
// (a sum handed out) and answers as layered.get does. changed has the bit
// domainBit of every domain in delta set, so a domain whose bit is clear
// is not in delta, and one lookup in base answers for it.
type domainLookup[V comparable] struct {
	base, delta map[topologyPair]V
	changed     [4]uint64
}

// lookupOf returns a lookup of m, which must not change while the lookup
// is used. Building it visits m's delta: the few domains changed since
// its base was folded (layered.foldDue bounds them).
func lookupOf[V comparable](m *layered[topologyPair, V]) domainLookup[V] {
	if len(m.base) == 0 {
		// Built from scratch: all in delta, which over an empty base
		// holds no deletion marks, so it reads as a base.
		return domainLookup[V]{base: m.delta}
	}
	l := domainLookup[V]{base: m.base, delta: m.delta}
	for p := range m.delta {
		b := domainBit(p.value)
		l.changed[b>>6] |= 1 << (b & 63)
	}
	return l
}

// get returns p's value, the zero V when p is absent: layered.get's
// value, which Filter's counts and Score's weights read alike.
func (l *domainLookup[V]) get(p topologyPair) V {
	if b := domainBit(p.value); l.changed[b>>6]&(1<<(b&63)) != 0 {
		// A zero in delta marks a domain of base as deleted: absent.
		if v, ok := l.delta[p]; ok {
			return v
		}
	}
	return l.base[p]
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

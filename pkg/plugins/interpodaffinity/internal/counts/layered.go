package counts

// This file holds a speed structure of the sums: a map that a cycle can
// keep reading while a fork of it is changed (AddPod and RemovePod on a
// state's own counts), without copying the whole map each time.

import (
	"iter"
	"maps"
	"sync"
)

// layered is a map from K to V, in two layers: base, which is never
// changed once shared, and delta, the changes made over base since. The
// zero V is never stored as a value: setting it deletes the key, and in
// delta it marks a key of base as deleted.
//
// Copying a layered value shares both maps, and then neither copy may be
// changed; fork makes a changeable one. fork copies delta alone while it
// is small next to base and otherwise folds it into a new base: with the
// fold at |delta|² > 2|base|, a sum of N keys that changes a few keys per
// cycle costs about √(2N) key copies per cycle, instead of the N that
// copying the map costs.
type layered[K comparable, V comparable] struct {
	base, delta map[K]V
	// n counts the keys present.
	n int
	// fold, set by Freeze, is the fold of base and delta that the first
	// fork makes, shared by every copy of m and every fork after.
	fold *pendingFold[K, V]
}

// pendingFold is a fold of a frozen map (Freeze), made at most once.
type pendingFold[K comparable, V comparable] struct {
	once sync.Once
	base map[K]V
}

func newLayered[K comparable, V comparable]() layered[K, V] {
	return layered[K, V]{base: map[K]V{}, delta: map[K]V{}}
}

// Get returns k's value and whether k is present.
func (m *layered[K, V]) Get(k K) (V, bool) {
	var zero V
	if len(m.base) == 0 {
		// A sum being built from scratch (the scan): all in delta.
		v := m.delta[k]
		return v, v != zero
	}
	if v, ok := m.delta[k]; ok {
		return v, v != zero
	}
	v, ok := m.base[k]
	return v, ok
}

// Len is the number of keys present.
func (m *layered[K, V]) Len() int { return m.n }

// Set sets k to v, or deletes k when v is the zero V. m must not be shared.
func (m *layered[K, V]) Set(k K, v V) {
	var zero V
	if len(m.base) == 0 {
		m.Update(k, v, m.delta[k] != zero)
		return
	}
	m.setOverBase(k, v)
}

// Update is set for a key whose presence the caller just read (get), which
// spares a sum built from scratch a second lookup per key.
func (m *layered[K, V]) Update(k K, v V, had bool) {
	var zero V
	if len(m.base) == 0 {
		// Over an empty base, delta holds no deletion marks.
		if v != zero {
			m.delta[k] = v
		} else {
			delete(m.delta, k)
		}
		m.count(had, v != zero)
		return
	}
	m.setOverBase(k, v)
}

// reserve readies m, which must not be shared, for up to n keys more
// set in its delta. A sum that adds a second class's or term's domains
// one by one (AddDomains) sets hundreds or thousands of keys in a delta
// that a fork left with a few, and a map grown step by step rehashes its
// keys at each step: at 500 keys that was half of the adding.
func (m *layered[K, V]) reserve(n int) {
	if n <= len(m.delta) {
		// The delta grows to twice its size at most: one step of
		// growth, which costs what the copy here would.
		return
	}
	delta := make(map[K]V, len(m.delta)+n)
	maps.Copy(delta, m.delta)
	m.delta = delta
}

// addCount adds d to k's count in m, which must not be shared, and reports
// whether k was present before and is after. It looks k up once in each
// layer at most and stores once: Get and then Update, which the sums
// added up domain by domain (AddTo) used to do, look k up in both layers
// twice and hash it five times.
func addCount[K comparable](m *layered[K, int64], k K, d int64) (had, has bool) {
	if len(m.base) == 0 {
		// Over an empty base, delta holds no deletion marks.
		old := m.delta[k]
		n := old + d
		if n != 0 {
			m.delta[k] = n
		} else if old != 0 {
			delete(m.delta, k)
		}
		had, has = old != 0, n != 0
		m.count(had, has)
		return had, has
	}
	old, inDelta := m.delta[k]
	inBase := false
	if inDelta {
		had = old != 0
	} else {
		old, inBase = m.base[k]
		had = inBase
	}
	n := old + d
	has = n != 0
	switch {
	case has:
		m.delta[k] = n
	case inDelta:
		// As setOverBase: a zero stays in delta as a deletion mark only
		// for a key of base.
		if _, inBase = m.base[k]; inBase {
			m.delta[k] = 0
		} else {
			delete(m.delta, k)
		}
	case inBase:
		m.delta[k] = 0
	}
	m.count(had, has)
	return had, has
}

// setOverBase is set over a base that may hold k.
func (m *layered[K, V]) setOverBase(k K, v V) {
	var zero V
	dv, inDelta := m.delta[k]
	_, inBase := m.base[k]
	had := inBase
	if inDelta {
		had = dv != zero
	}
	switch {
	case v != zero || inBase:
		// A zero in delta marks a key of base as deleted.
		m.delta[k] = v
	case inDelta:
		delete(m.delta, k)
	}
	m.count(had, v != zero)
}

// count keeps n up to date when a key that had (or not) a value has (or
// not) one now.
func (m *layered[K, V]) count(had, has bool) {
	switch {
	case has && !had:
		m.n++
	case !has && had:
		m.n--
	}
}

// All yields the keys present with their values, in no particular order.
func (m *layered[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		var zero V
		for k, v := range m.delta {
			if v != zero && !yield(k, v) {
				return
			}
		}
		for k, v := range m.base {
			if _, changed := m.delta[k]; !changed && !yield(k, v) {
				return
			}
		}
	}
}

// Fork returns a copy of m that may be changed while m, shared, is not.
// The zero layered (nil maps) is an empty map that can only be read until
// forked.
func (m *layered[K, V]) Fork() layered[K, V] {
	if f := m.fold; f != nil {
		// Frozen: every copy of m holds the same maps, so the first fork
		// of any of them folds for all.
		f.once.Do(func() { f.base = m.folded() })
		return layered[K, V]{base: f.base, delta: map[K]V{}, n: m.n}
	}
	if !m.foldDue() {
		delta := maps.Clone(m.delta)
		if delta == nil {
			delta = map[K]V{}
		}
		return layered[K, V]{base: m.base, delta: delta, n: m.n}
	}
	return layered[K, V]{base: m.folded(), delta: map[K]V{}, n: m.n}
}

// Seal readies m to be shared: its owner folds a delta that is large next
// to base now, once, instead of every fork made of m later (AddPod forks
// the counts a cycle was handed, once per clone). A sum built from scratch
// is all delta over an empty base, which then becomes the base as it is.
// m's delta must be its own; its base may be shared (Seal writes no map,
// it replaces m's fields).
func (m *layered[K, V]) Seal() { m.seal(false) }

// Freeze readies m to be handed out for good: no one changes m again, its
// copies are only read, and a fork is made of them only when a cycle
// changes what it was handed (AddPod, RemovePod: nominated pods,
// preemption), which most cycles never do. So a fold that is due is not
// made now but by the first fork, once, for all the forks of m's copies:
// a cycle that forks none costs no fold, while its reads look up the
// delta's domains in delta first (Lookup), as they do in any unfolded map.
// A sum built from scratch becomes its base as it is, as Seal does.
func (m *layered[K, V]) Freeze() { m.seal(true) }

// seal is Seal, or with lazy Freeze.
func (m *layered[K, V]) seal(lazy bool) {
	switch {
	case !m.foldDue():
	case len(m.base) == 0:
		// Over an empty base, delta holds no deletion marks.
		m.base, m.delta = m.delta, map[K]V{}
	case lazy:
		m.fold = &pendingFold[K, V]{}
	default:
		m.base, m.delta = m.folded(), map[K]V{}
	}
}

// foldDue: delta is large enough next to base that folding it costs less,
// over the forks to come, than copying it into each.
func (m *layered[K, V]) foldDue() bool {
	return len(m.delta) > 32 && len(m.delta)*len(m.delta) > 2*len(m.base)
}

// folded is a new base: base with delta applied.
func (m *layered[K, V]) folded() map[K]V {
	var zero V
	base := maps.Clone(m.base)
	if base == nil {
		base = make(map[K]V, len(m.delta))
	}
	for k, v := range m.delta {
		if v == zero {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	return base
}

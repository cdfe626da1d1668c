// Package signature encodes the affinity terms of the
// PlacementInterPodAffinity plugin so that equal terms, and only they,
// encode alike: the term table (package aggregate) keys its distinct terms
// by their encoding, so that the equal terms of many pods are kept once.
//
// Invariant: every part is length-prefixed or tagged (a selector's kind),
// so that no two different inputs encode alike.
package signature

import (
	"encoding/binary"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// Signature is an encoding being built. Every part is length-prefixed or
// tagged, so different inputs never encode alike.
type Signature struct{ b []byte }

// String is the encoding, to key a map with.
func (w *Signature) String() string { return string(w.b) }

func (w *Signature) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *Signature) int(n int64) { w.b = binary.AppendVarint(w.b, n) }

// selector encodes a parsed selector. String() is canonical for the
// selectors term parsing produces (keys and values are validated, so they
// cannot contain the separators), except that Nothing and Everything both
// print as "", hence the kind byte.
func (w *Signature) selector(s labels.Selector) {
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

func (w *Signature) affinityTerm(t fwk.AffinityTerm) {
	w.str(t.TopologyKey)
	w.int(int64(t.Namespaces.Len()))
	for _, ns := range sets.List(t.Namespaces) {
		w.str(ns)
	}
	w.selector(t.Selector)
	w.selector(t.NamespaceSelector)
}

// Terms encodes required terms in order.
func (w *Signature) Terms(ts []fwk.AffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.affinityTerm(ts[i])
	}
}

// WeightedTerms encodes weighted terms in order.
func (w *Signature) WeightedTerms(ts []fwk.WeightedAffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.int(int64(ts[i].Weight))
		w.affinityTerm(ts[i].AffinityTerm)
	}
}

// Package signature holds the keys of the node index's entries (package
// nodeindex): what a sum depends on besides the nodes, encoded so that
// different inputs never encode alike, and the selector keys (TermInputs):
// what existing pods' terms read of an incoming pod, kept per node list in
// an index of their own, so that the signatures of sums over existing
// pods' terms hold only what those terms can read.
//
// Invariant: every input of a contribution beyond the node is in the
// signature; two incoming pods that agree on TermInputs.Encode match every
// existing pod's term alike.
package signature

import (
	"encoding/binary"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodeindex"
)

// Signature encodes what a sum depends on besides the nodes. Every part is
// length-prefixed, so different inputs never encode alike.
type Signature struct{ b []byte }

// String is the encoding, the key of an index entry.
func (w *Signature) String() string { return string(w.b) }

func (w *Signature) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

// Flag encodes a boolean.
func (w *Signature) Flag(b bool) {
	if b {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *Signature) int(n int64) { w.b = binary.AppendVarint(w.b, n) }

// labelSet encodes a label set in key order; nil and empty differ.
func (w *Signature) labelSet(m map[string]string) {
	w.Flag(m == nil)
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

// TermInputs is what the terms of the existing pods with pod
// (anti-)affinity read of an incoming pod, counted per node of a list:
// existing pods' terms are matched against the incoming pod, so a sum
// that depends on them depends on the incoming pod only through these.
// Two pods that agree on them match every such term alike. Keying by the
// whole pod instead would miss whenever pods carry a label of their own
// (a StatefulSet's pod name, scheduler_perf's per-pod Signature label),
// or come from many namespaces (every namespace carries its own
// kubernetes.io/metadata.name label).
type TermInputs struct {
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
	ScoringNodes int64
}

// NodeTermInputs is one node's part of TermInputs, each name once.
type NodeTermInputs struct {
	podKeys, nsKeys, namespaces []string
	scoring                     bool
}

// SelectorKeys is an index's nodeindex.Ops for TermInputs.
var SelectorKeys = nodeindex.Ops[NodeTermInputs, *TermInputs]{
	Compute: func(ni fwk.NodeInfo, _ NodeTermInputs) NodeTermInputs {
		var in NodeTermInputs
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
	NewSum: func() *TermInputs {
		return &TermInputs{podKeys: keyCounts{}, nsKeys: keyCounts{}, namespaces: keyCounts{}}
	},
	Apply: func(sum *TermInputs, in NodeTermInputs, sign int64) {
		sum.podKeys.apply(in.podKeys, sign)
		sum.nsKeys.apply(in.nsKeys, sign)
		sum.namespaces.apply(in.namespaces, sign)
		if in.scoring {
			sum.ScoringNodes += sign
		}
	},
	Merge: func(dst, src *TermInputs) {
		for _, m := range [][2]keyCounts{{dst.podKeys, src.podKeys}, {dst.nsKeys, src.nsKeys}, {dst.namespaces, src.namespaces}} {
			for k, n := range m[1] {
				m[0][k] += n
			}
		}
		dst.ScoringNodes += src.ScoringNodes
	},
	Clone: func(sum *TermInputs) *TermInputs {
		return &TermInputs{podKeys: maps.Clone(sum.podKeys), nsKeys: maps.Clone(sum.nsKeys), namespaces: maps.Clone(sum.namespaces), ScoringNodes: sum.ScoringNodes}
	},
	Empty: func(in NodeTermInputs) bool {
		return len(in.podKeys) == 0 && len(in.nsKeys) == 0 && len(in.namespaces) == 0 && !in.scoring
	},
}

// Encode writes to w what the terms can read of a pod in namespace ns
// with labels podLabels, in a namespace labelled nsLabels. A namespace no
// term lists is encoded as unlisted, whatever its name: Matches asks of
// the name only whether a term lists it.
func (in *TermInputs) Encode(w *Signature, ns string, podLabels, nsLabels map[string]string) {
	listed := in.namespaces[ns] > 0
	w.Flag(listed)
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

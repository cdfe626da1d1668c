package interpodaffinity

// This file holds the keys of the index's entries (index.go): what a sum
// depends on besides the nodes, encoded so that different inputs never
// encode alike.

import (
	"encoding/binary"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// signature encodes what a sum depends on besides the nodes. Every part is
// length-prefixed, so different inputs never encode alike.
type signature struct{ b []byte }

func (w *signature) String() string { return string(w.b) }

func (w *signature) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *signature) flag(b bool) {
	if b {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *signature) int(n int64) { w.b = binary.AppendVarint(w.b, n) }

// labelSet encodes a label set in key order; nil and empty differ.
func (w *signature) labelSet(m map[string]string) {
	w.flag(m == nil)
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
func (w *signature) selector(s labels.Selector) {
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

func (w *signature) term(t fwk.AffinityTerm) {
	w.str(t.TopologyKey)
	w.int(int64(t.Namespaces.Len()))
	for _, ns := range sets.List(t.Namespaces) {
		w.str(ns)
	}
	w.selector(t.Selector)
	w.selector(t.NamespaceSelector)
}

func (w *signature) terms(ts []fwk.AffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.term(ts[i])
	}
}

func (w *signature) weightedTerms(ts []fwk.WeightedAffinityTerm) {
	w.int(int64(len(ts)))
	for i := range ts {
		w.int(int64(ts[i].Weight))
		w.term(ts[i].AffinityTerm)
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

// termInputs is what the terms of the existing pods with pod
// (anti-)affinity read of an incoming pod, counted per node of a list:
// existing pods' terms are matched against the incoming pod, so a sum
// that depends on them depends on the incoming pod only through these.
// Two pods that agree on them match every such term alike. Keying by the
// whole pod instead would miss whenever pods carry a label of their own
// (a StatefulSet's pod name, scheduler_perf's per-pod signature label),
// or come from many namespaces (every namespace carries its own
// kubernetes.io/metadata.name label).
type termInputs struct {
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
	scoringNodes int64
}

// nodeTermInputs is one node's part of termInputs, each name once.
type nodeTermInputs struct {
	podKeys, nsKeys, namespaces []string
	scoring                     bool
}

// selectorKeys is an index's sumOps for termInputs.
var selectorKeys = sumOps[nodeTermInputs, *termInputs]{
	compute: func(ni fwk.NodeInfo, _ nodeTermInputs) nodeTermInputs {
		var in nodeTermInputs
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
	newSum: func() *termInputs {
		return &termInputs{podKeys: keyCounts{}, nsKeys: keyCounts{}, namespaces: keyCounts{}}
	},
	apply: func(sum *termInputs, in nodeTermInputs, sign int64) {
		sum.podKeys.apply(in.podKeys, sign)
		sum.nsKeys.apply(in.nsKeys, sign)
		sum.namespaces.apply(in.namespaces, sign)
		if in.scoring {
			sum.scoringNodes += sign
		}
	},
	merge: func(dst, src *termInputs) {
		for _, m := range [][2]keyCounts{{dst.podKeys, src.podKeys}, {dst.nsKeys, src.nsKeys}, {dst.namespaces, src.namespaces}} {
			for k, n := range m[1] {
				m[0][k] += n
			}
		}
		dst.scoringNodes += src.scoringNodes
	},
	clone: func(sum *termInputs) *termInputs {
		return &termInputs{podKeys: maps.Clone(sum.podKeys), nsKeys: maps.Clone(sum.nsKeys), namespaces: maps.Clone(sum.namespaces), scoringNodes: sum.scoringNodes}
	},
	empty: func(in nodeTermInputs) bool {
		return len(in.podKeys) == 0 && len(in.nsKeys) == 0 && len(in.namespaces) == 0 && !in.scoring
	},
}

// encode writes to w what the terms can read of a pod in namespace ns
// with labels podLabels, in a namespace labelled nsLabels. A namespace no
// term lists is encoded as unlisted, whatever its name: Matches asks of
// the name only whether a term lists it.
func (in *termInputs) encode(w *signature, ns string, podLabels, nsLabels map[string]string) {
	listed := in.namespaces[ns] > 0
	w.flag(listed)
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

package aggregate

// This file holds the projections of the classes: the classes as the
// selectors reading only some label keys see them.
//
// A class is a namespace and a whole label set, so pods with a label of
// their own (a StatefulSet's pod name and index; scheduler_perf's
// per-pod signature label) make a class each, and a query matching a
// workload's selector against the classes would match every pod of the
// workload one by one. But a selector reads only the labels of the keys
// its requirements name: pods alike in their namespace and those labels
// match it alike. A projection onto keys adds up the classes alike in
// those into one projected class, so that a query matches each workload
// once, whatever labels its pods carry besides.

import (
	"encoding/binary"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
)

// maxProjections bounds the projections kept: each costs a projected
// class per distinct namespace and labels of its keys, with their counts,
// and every count the classes take is added to each. The key sets the
// selectors of a cluster read are few (a workload label or two, and
// pod-template-hash through matchLabelKeys); the one asked for longest
// ago makes room.
const maxProjections = 8

// projection is the classes projected onto a set of label keys.
type projection struct {
	// keys are sorted and distinct; id is their encoding.
	keys []string
	id   string
	classSet
	// lastUse is the classTable.clock of the last query that asked for
	// the projection.
	lastUse uint64
	// scratch is reused for encodings.
	scratch []byte
}

// ref returns the projected class that c adds up into, made if new, with
// one more reference.
func (p *projection) ref(c *podClass) *podClass {
	p.scratch = encodeLabels(p.scratch[:0], c.pod.Namespace, c.pod.Labels, p.keys)
	q, _ := p.classSet.ref(p.scratch, c.pod.Namespace, func() map[string]string {
		var l map[string]string
		for _, k := range p.keys {
			if v, ok := c.pod.Labels[k]; ok {
				if l == nil {
					l = make(map[string]string, len(p.keys))
				}
				l[k] = v
			}
		}
		return l
	})
	return q
}

// selectorKeys appends to keys the label keys sels read, sorted and
// distinct; ok is false when a selector cannot say which it reads.
func selectorKeys(keys []string, sels []labels.Selector) (_ []string, ok bool) {
	for _, sel := range sels {
		if sel == nil {
			continue
		}
		reqs, selectable := sel.Requirements()
		if !selectable {
			// labels.Nothing, which matches no pod: nothing to
			// project onto, and no projection is needed to match
			// it.
			return keys, false
		}
		for _, r := range reqs {
			keys = append(keys, r.Key())
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), true
}

// encodeKeys appends a sorted key set, length-prefixed.
func encodeKeys(buf []byte, keys []string) []byte {
	for _, k := range keys {
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
	}
	return buf
}

// matchingTerms is matching for the selectors of ts.
func (ct *classTable) matchingTerms(ts []fwk.AffinityTerm) *classSet {
	ct.selScratch = ct.selScratch[:0]
	for i := range ts {
		ct.selScratch = append(ct.selScratch, ts[i].Selector)
	}
	return ct.matching(ct.selScratch...)
}

// matching returns the classes to match sels against: the projection onto
// the keys they read when one is kept, otherwise the classes themselves.
// Matches on a projected class is Matches on any of its classes, for a
// selector of sels and a term's namespaces, and its counts are theirs
// added up.
//
// A projection is made on the second query that asks for its key set (a
// key set asked for once costs no more than matching the classes
// themselves), if it at least halves the classes: one that does not would
// cost its memory and upkeep for little. A key set declined is tried again
// once the classes have doubled since. A projection made evicts the one
// asked for longest ago, never one this query asked for (the new one is
// then not kept).
func (ct *classTable) matching(sels ...labels.Selector) *classSet {
	keys, ok := selectorKeys(ct.keyScratch[:0], sels)
	ct.keyScratch = keys
	if !ok {
		return &ct.classSet
	}
	ct.idScratch = encodeKeys(ct.idScratch[:0], keys)
	id := ct.idScratch
	for _, p := range ct.projs {
		if p.id == string(id) {
			p.lastUse = ct.clock
			return &p.classSet
		}
	}
	at, declined := ct.declined[string(id)]
	if declined && len(ct.list) < 2*at {
		return &ct.classSet
	}
	if !declined && !ct.asked[string(id)] {
		if ct.asked == nil || len(ct.asked) >= 4*ct.projBound() {
			// Key sets asked for once long ago are forgotten: one
			// asked for again is made on its next query.
			ct.asked = map[string]bool{}
		}
		ct.asked[string(id)] = true
		return &ct.classSet
	}
	delete(ct.asked, string(id))
	if 2*ct.countProjected(keys) > len(ct.list) {
		if ct.declined == nil || len(ct.declined) >= 4*ct.projBound() {
			ct.declined = map[string]int{}
		}
		ct.declined[string(id)] = max(len(ct.list), 1)
		return &ct.classSet
	}
	delete(ct.declined, string(id))
	if len(ct.projs) >= ct.projBound() {
		j := ct.leastRecentProjection()
		if ct.projs[j].lastUse == ct.clock {
			return &ct.classSet
		}
		ct.dropProjection(j)
	}
	return &ct.project(slices.Clone(keys), string(id)).classSet
}

// countProjected counts the projected classes a projection onto keys
// would hold, without making it.
func (ct *classTable) countProjected(keys []string) int {
	seen := make(map[string]struct{}, len(ct.list)/2)
	for _, c := range ct.list {
		ct.encScratch = encodeLabels(ct.encScratch[:0], c.pod.Namespace, c.pod.Labels, keys)
		if _, ok := seen[string(ct.encScratch)]; !ok {
			seen[string(ct.encScratch)] = struct{}{}
		}
	}
	return len(seen)
}

// project makes the projection onto keys, encoded id, from the classes.
func (ct *classTable) project(keys []string, id string) *projection {
	p := &projection{keys: keys, id: id, lastUse: ct.clock}
	ct.projs = append(ct.projs, p)
	for _, c := range ct.list {
		q := p.ref(c)
		c.proj = append(c.proj, q)
		q.pods += c.pods
		for i := range c.domains {
			for d, n := range c.domains[i].All() {
				q.addOwn(i, d, n)
			}
		}
	}
	return p
}

// dropProjection stops keeping projection j.
func (ct *classTable) dropProjection(j int) {
	ct.projs = slices.Delete(ct.projs, j, j+1)
	for _, c := range ct.list {
		c.proj = slices.Delete(c.proj, j, j+1)
	}
}

// leastRecentProjection is the index of the projection asked for longest
// ago.
func (ct *classTable) leastRecentProjection() int {
	j := 0
	for i, p := range ct.projs {
		if p.lastUse < ct.projs[j].lastUse {
			j = i
		}
	}
	return j
}

// projBound is how many projections are kept.
func (ct *classTable) projBound() int {
	if ct.maxProjs > 0 {
		return ct.maxProjs
	}
	return maxProjections
}

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
// distinct.
func selectorKeys(keys []string, sels []labels.Selector) []string {
	for _, sel := range sels {
		if sel == nil {
			continue
		}
		reqs, _ := sel.Requirements()
		for _, r := range reqs {
			keys = append(keys, r.Key())
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// encodeKeys appends a sorted key set, length-prefixed.
func encodeKeys(buf []byte, keys []string) []byte {
	for _, k := range keys {
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
	}
	return buf
}

// matching returns the classes to match sels against: the projection onto
// the keys they read when one is kept, otherwise the classes themselves.
// Matches on a projected class is Matches on any of its classes, for a
// selector of sels and a term's namespaces, and its counts are theirs
// added up.
//
// A projection is made on the second query that asks for its key set (a
// key set asked for once costs no more than matching the classes
// themselves), and kept if it at least halves the classes: one that does
// not would cost its memory and upkeep for little. A key set declined is
// tried again once the classes have doubled since.
func (ct *classTable) matching(sels ...labels.Selector) *classSet {
	ct.keyScratch = selectorKeys(ct.keyScratch[:0], sels)
	ct.idScratch = encodeKeys(ct.idScratch[:0], ct.keyScratch)
	for _, p := range ct.projs {
		if p.id == string(ct.idScratch) {
			p.lastUse = ct.clock
			return &p.classSet
		}
	}
	declinedAt, asked := ct.asked[string(ct.idScratch)]
	switch {
	case !asked:
		if ct.asked == nil || len(ct.asked) >= 4*ct.projBound() {
			// Key sets asked for once long ago are forgotten, and
			// declines: one asked for again is made on its next
			// query.
			ct.asked = map[string]int{}
		}
		ct.asked[string(ct.idScratch)] = 0
		return &ct.classSet
	case declinedAt > 0 && len(ct.list) < 2*declinedAt:
		return &ct.classSet
	}
	p := ct.project(slices.Clone(ct.keyScratch), string(ct.idScratch))
	if 2*len(p.list) > len(ct.list) {
		ct.dropProjection(len(ct.projs) - 1)
		ct.asked[p.id] = max(len(ct.list), 1)
		return &ct.classSet
	}
	delete(ct.asked, p.id)
	if len(ct.projs) > ct.projBound() {
		// The new one was asked for last: another makes room.
		ct.dropProjection(ct.leastRecentProjection())
	}
	return &p.classSet
}

// project makes the projection onto keys, encoded id, from the classes.
func (ct *classTable) project(keys []string, id string) *projection {
	p := &projection{keys: keys, id: id, lastUse: ct.clock}
	ct.projs = append(ct.projs, p)
	for _, c := range ct.list {
		q := p.ref(c)
		c.proj = append(c.proj, q)
		q.pods += c.pods
		for i, m := range c.domains {
			for value, n := range m {
				q.addOwn(i, value, n)
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

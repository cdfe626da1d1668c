package aggregate

// This file holds what each node contributes to the classes' counts and
// the generation sweep over all nodes that keeps them current.

import (
	"slices"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// useKeys makes the classes count every key of keys, for a query over
// nodes, the list the records were just swept with. Keys beyond the bound
// make room by evicting the one asked for longest ago, never one of this
// query's (a query with more keys than the bound counts them all, and
// the next query trims the surplus).
func (r *classRecords) useKeys(keys []string, nodes []fwk.NodeInfo, view *topology.View) {
	ct := &r.classes
	ct.clock++
	for _, k := range keys {
		if i := ct.key(k); i >= 0 {
			ct.lastUse[i] = ct.clock
		}
	}
	for len(ct.keys) > ct.bound() {
		j := ct.leastRecentlyUsed()
		if j < 0 {
			break
		}
		r.evict(j)
	}
	for _, k := range keys {
		if ct.key(k) >= 0 {
			continue
		}
		if len(ct.keys) >= ct.bound() {
			if j := ct.leastRecentlyUsed(); j >= 0 {
				r.evict(j)
			}
		}
		r.count(k, nodes, view)
	}
}

// evict stops counting key index j: its counts go from every class and
// its labels from every record, and the later keys move down one index.
func (r *classRecords) evict(j int) {
	ct := &r.classes
	ct.keys = slices.Delete(ct.keys, j, j+1)
	ct.lastUse = slices.Delete(ct.lastUse, j, j+1)
	for _, c := range ct.list {
		c.dropKey(j)
	}
	for _, p := range ct.projs {
		for _, q := range p.list {
			q.dropKey(j)
		}
	}
	for _, rec := range r.byName {
		if len(rec.values) > j {
			rec.values = slices.Delete(rec.values, j, j+1)
		}
	}
}

// classPart is what one node contributes to one class.
type classPart struct {
	class *podClass
	n     int64
}

// label is a node's domain of one counted key when its record was made;
// ok is false for a node without the key.
type label struct {
	domain topology.Pair
	ok     bool
}

// classRecord is a node's contribution to the classes as of its
// generation.
type classRecord struct {
	name  string
	gen   int64
	seen  uint64
	parts []classPart
	// values are the node's labels of classTable.keys (same index).
	values []label
}

// classRecords are the nodes' records by name, and what they add up to.
type classRecords struct {
	byName  map[string]*classRecord
	classes classTable
	sweeps  uint64
	// scratch is reused for class encodings.
	scratch []byte
	// last is the list last swept, and gens its records' generations by
	// position.
	last order[classRecord]
	gens []int64
}

// sweep is records.sweep for the classes: every pod of every node counts,
// so every node has a record. Labels are read through view (nil: from the
// nodes), so that the domains counted hold the view's strings, which
// Filter looks them up by.
func (r *classRecords) sweep(nodes []fwk.NodeInfo, gens []int64, view *topology.View) bool {
	if r.last.same(nodes) && r.sweepInOrder(nodes, gens, view) {
		return true
	}
	r.sweeps++
	if r.byName == nil {
		r.byName = make(map[string]*classRecord, len(nodes))
	}
	recs := make([]*classRecord, len(nodes))
	for i, ni := range nodes {
		n := ni.Node()
		if n == nil {
			r.reset()
			return false
		}
		rec := r.byName[n.Name]
		if rec == nil {
			rec = &classRecord{name: n.Name}
			r.byName[n.Name] = rec
		} else if rec.seen == r.sweeps {
			r.reset()
			return false
		}
		rec.seen = r.sweeps
		recs[i] = rec
		if g := gens[i]; g == 0 || g != rec.gen {
			r.recompute(rec, ni, g, view)
		}
	}
	if len(r.byName) > len(nodes) {
		for name, rec := range r.byName {
			if rec.seen != r.sweeps {
				r.releaseParts(rec.parts, rec.values)
				delete(r.byName, name)
			}
		}
	}
	r.last.remember(nodes, recs)
	r.gens = append(r.gens[:0], gens...)
	return true
}

// sweepInOrder is records.sweepInOrder for the classes.
func (r *classRecords) sweepInOrder(nodes []fwk.NodeInfo, gens []int64, view *topology.View) bool {
	for i, g := range gens {
		if g != 0 && g == r.gens[i] {
			continue
		}
		rec := r.last.recs[i]
		if n := nodes[i].Node(); n == nil || n.Name != rec.name {
			return false
		}
		r.recompute(rec, nodes[i], g, view)
		r.gens[i] = g
	}
	return true
}

// reset drops every record and class; the keys counted go too.
func (r *classRecords) reset() {
	*r = classRecords{sweeps: r.sweeps}
}

// recompute replaces rec's contribution with ni's current one, at
// generation gen, adding the new parts before releasing the old (a class
// the node keeps keeps its entry).
func (r *classRecords) recompute(rec *classRecord, ni fwk.NodeInfo, gen int64, view *topology.View) {
	oldParts, oldValues := rec.parts, rec.values
	rec.parts, rec.values, rec.gen = nil, nil, gen
	for _, p := range ni.GetPods() {
		pod := p.GetPod()
		r.scratch = classID(r.scratch[:0], pod)
		found := false
		for i := range rec.parts {
			if rec.parts[i].class.id == string(r.scratch) {
				rec.parts[i].n++
				found = true
				break
			}
		}
		if !found {
			rec.parts = append(rec.parts, classPart{class: r.classes.ref(r.scratch, pod), n: 1})
		}
	}
	if len(rec.parts) > 0 {
		nt := topology.Of(view, ni)
		rec.values = make([]label, len(r.classes.keys))
		for i, k := range r.classes.keys {
			key, v, ok := nt.Pair(k)
			rec.values[i] = label{domain: topology.Pair{Key: key, Value: v}, ok: ok}
		}
	}
	r.applyParts(rec.parts, rec.values, 1)
	r.releaseParts(oldParts, oldValues)
}

// applyParts adds (sign 1) or takes out (sign -1) parts counted on a node
// with values.
func (r *classRecords) applyParts(parts []classPart, values []label, sign int64) {
	for _, p := range parts {
		p.class.addPods(sign * p.n)
		for i, l := range values {
			if l.ok {
				p.class.add(i, l.domain, sign*p.n)
			}
		}
	}
}

// releaseParts takes parts out and drops their references.
func (r *classRecords) releaseParts(parts []classPart, values []label) {
	r.applyParts(parts, values, -1)
	for _, p := range parts {
		r.classes.unref(p.class)
	}
}

// count starts counting topology key k, reading each recorded node's
// label from nodes, the list the records were just swept with (so each
// NodeInfo is at its record's generation), through view as sweep does.
func (r *classRecords) count(k string, nodes []fwk.NodeInfo, view *topology.View) int {
	i := len(r.classes.keys)
	r.classes.keys = append(r.classes.keys, k)
	r.classes.lastUse = append(r.classes.lastUse, r.classes.clock)
	for _, ni := range nodes {
		rec := r.byName[ni.Node().Name]
		if len(rec.parts) == 0 {
			continue
		}
		nt := topology.Of(view, ni)
		key, v, ok := nt.Pair(k)
		d := topology.Pair{Key: key, Value: v}
		rec.values = append(rec.values, label{domain: d, ok: ok})
		if ok {
			for _, p := range rec.parts {
				p.class.add(i, d, p.n)
			}
		}
	}
	return i
}

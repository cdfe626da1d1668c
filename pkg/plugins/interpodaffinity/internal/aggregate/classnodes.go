package aggregate

// This file holds what each node contributes to the classes' counts and
// the generation sweep over all nodes that keeps them current.

import (
	"slices"

	v1 "k8s.io/api/core/v1"
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
	// pods are the node's pods at gen, in its order, each with its class.
	pods []podOfClass
}

// podOfClass is a pod a record counted, and its class. A pod object is
// not changed once the scheduler's cache holds it (the informers' rule,
// which upstream's terms parsed once per pod rely on too: an update is a
// new object), so a pod still on the node when its generation moves keeps
// its class without being encoded and looked up again. A node with many
// pods (a Deployment's replicas packed by preferred hostname affinity)
// changes with every pod bound to it, and encoding each of its pods each
// time cost more than the rest of the sweep.
type podOfClass struct {
	pod   *v1.Pod
	class *podClass
}

func (p podOfClass) podOf() *v1.Pod { return p.pod }

// keptAt returns the index in before, a node's pods at its last record, of
// pod (-1: it was not there), looking first at position i, where a pod
// stays until one before it is removed (which moves the last pod into its
// place).
func keptAt[E interface{ podOf() *v1.Pod }](before []E, i int, pod *v1.Pod) int {
	if i < len(before) && before[i].podOf() == pod {
		return i
	}
	for j, b := range before {
		if b.podOf() == pod {
			return j
		}
	}
	return -1
}

// keep returns built, a record's new list made in scratch storage, in
// storage of the record's own: old's, its last list (whose elements left
// over are cleared, so that it holds no pod that left), when it is large
// enough and not four times too large. built is cleared for the next
// record. Storage is never passed from one record to another, so that a
// record holds no more than its own node's pods ever needed.
func keep[E any](old, built []E) []E {
	var out []E
	if cap(old) >= len(built) && cap(old) < 4*len(built)+4 {
		out = append(old[:0], built...)
		if len(old) > len(out) {
			clear(old[len(out):])
		}
	} else {
		clear(old)
		out = slices.Clone(built)
	}
	clear(built)
	return out
}

// classRecords are the nodes' records by name, and what they add up to.
type classRecords struct {
	byName  map[string]*classRecord
	classes classTable
	sweeps  uint64
	// scratch is reused for class encodings, pods for a record's pods
	// and values for its labels while it is recomputed.
	scratch []byte
	pods    []podOfClass
	values  []label
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
// generation gen. A pod that was on the node at its last record keeps its
// class (podOfClass); with the labels unchanged, only the classes whose
// count on the node moved change their counts. Otherwise the new parts are
// added before the old are released (a class the node keeps keeps its
// entry).
func (r *classRecords) recompute(rec *classRecord, ni fwk.NodeInfo, gen int64, view *topology.View) {
	oldParts, oldValues, before := rec.parts, rec.values, rec.pods
	rec.parts, rec.values, rec.gen = nil, nil, gen
	now := r.pods[:0]
	for i, p := range ni.GetPods() {
		pod := p.GetPod()
		var c *podClass
		if j := keptAt(before, i, pod); j >= 0 {
			c = before[j].class
		}
		if c == nil {
			r.scratch = classID(r.scratch[:0], pod)
			c = rec.countID(r.scratch)
			if c == nil {
				c = r.classes.ref(r.scratch, pod)
				rec.parts = append(rec.parts, classPart{class: c, n: 1})
			}
		} else if !rec.countClass(c) {
			// c is alive: the old parts still refer to it.
			c.refs++
			rec.parts = append(rec.parts, classPart{class: c, n: 1})
		}
		now = append(now, podOfClass{pod: pod, class: c})
	}
	rec.pods, r.pods = keep(before, now), now
	if len(rec.parts) > 0 {
		nt := topology.Of(view, ni)
		values := r.values[:0]
		for _, k := range r.classes.keys {
			key, v, ok := nt.Pair(k)
			values = append(values, label{domain: topology.Pair{Key: key, Value: v}, ok: ok})
		}
		r.values = values
		// A node's labels rarely move: it keeps its old values then,
		// and a copy is made only when they did.
		if rec.values = oldValues; !slices.Equal(oldValues, values) {
			rec.values = slices.Clone(values)
		}
	}
	if len(oldParts) > 0 && slices.Equal(oldValues, rec.values) {
		r.applyChanges(oldParts, rec.parts, rec.values)
		for _, p := range oldParts {
			r.classes.unref(p.class)
		}
		return
	}
	r.applyParts(rec.parts, rec.values, 1)
	r.releaseParts(oldParts, oldValues)
}

// countID counts one more pod of the part whose class has encoding id, and
// returns that class (nil: no part has it).
func (rec *classRecord) countID(id []byte) *podClass {
	for i := range rec.parts {
		if rec.parts[i].class.id == string(id) {
			rec.parts[i].n++
			return rec.parts[i].class
		}
	}
	return nil
}

// countClass counts one more pod of c's part, and reports whether there is
// one.
func (rec *classRecord) countClass(c *podClass) bool {
	for i := range rec.parts {
		if rec.parts[i].class == c {
			rec.parts[i].n++
			return true
		}
	}
	return false
}

// applyChanges takes a node from parts old to parts now, both counted with
// values: each class by the change in its count (a class holds at most one
// part of a record).
func (r *classRecords) applyChanges(old, now []classPart, values []label) {
	for _, p := range now {
		n := p.n
		for _, o := range old {
			if o.class == p.class {
				n -= o.n
				break
			}
		}
		r.addClass(p.class, n, values)
	}
	for _, o := range old {
		if !slices.ContainsFunc(now, func(p classPart) bool { return p.class == o.class }) {
			r.addClass(o.class, -o.n, values)
		}
	}
}

// addClass adds n pods of class c on a node with values.
func (r *classRecords) addClass(c *podClass, n int64, values []label) {
	if n == 0 {
		return
	}
	c.addPods(n)
	for i, l := range values {
		if l.ok {
			c.add(i, l.domain, n)
		}
	}
}

// applyParts adds (sign 1) or takes out (sign -1) parts counted on a node
// with values.
func (r *classRecords) applyParts(parts []classPart, values []label, sign int64) {
	for _, p := range parts {
		r.addClass(p.class, sign*p.n, values)
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

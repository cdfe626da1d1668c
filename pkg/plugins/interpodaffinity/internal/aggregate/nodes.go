package aggregate

// This file holds what each node contributes to the distinct terms' counts
// and the generation sweep that keeps the table current.

import (
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// part is what one node contributes to one distinct term.
type part struct {
	term *termEntry
	// domain is the node's domain of the term's topology key when the
	// part was made; labelled is false for a node without the key, which
	// counts in no domain of it.
	domain   topology.Pair
	labelled bool
	// n counts the term's occurrences among the node's pods.
	n int64
}

// nodeRecord is a node's contribution as of its generation.
type nodeRecord struct {
	name string
	gen  int64
	// seen is the sweep that last listed the node.
	seen  uint64
	parts []part
	// hostScoped: a pod on the node has a hostname-scoped required
	// anti-affinity term (the hostname fast path checks those on the
	// candidate node itself and counts the nodes holding them).
	hostScoped bool
	// pods are the node's pods the record counted at gen, in the node's
	// order, each with its terms' entries in entries.
	pods    []podTerms
	entries []*termEntry
}

// podTerms is a pod a record counted, and the entries of its terms the
// records count. A pod object is not changed once the scheduler's cache
// holds it (podOfClass), so a pod still on the node when its generation
// moves keeps its entries without its terms being encoded again.
type podTerms struct {
	pod *v1.Pod
	// from and to delimit the pod's entries in its record's.
	from, to int32
}

func (p podTerms) podOf() *v1.Pod { return p.pod }

// records are the nodes' records by name, and what they add up to.
type records struct {
	// scoring: the records hold the terms PreScore weighs (required
	// affinity, preferred affinity and anti-affinity, of the pods with
	// affinity); otherwise the required anti-affinity terms of the pods
	// with such.
	scoring bool
	byName  map[string]*nodeRecord
	terms   termTable
	// hostNodes counts the records with hostScoped set.
	hostNodes int64
	// sweeps numbers the sweeps, for nodeRecord.seen.
	sweeps uint64
	// last is the list last swept, and gens the generation of each
	// position's node as last swept (the record's, or for a node that
	// holds nothing, whose record is nil, the one it held nothing at).
	last order[nodeRecord]
	gens []int64
	// pods and entries hold a record's while it is recomputed.
	pods    []podTerms
	entries []*termEntry
}

// sweep brings the records in line with nodes, whose generations are
// gens (by position, read once a cycle: nodegen): a node whose generation
// moved (or is 0, which proves nothing) is recomputed, a recorded node no
// longer listed is taken out. A node that holds nothing the records
// count (most nodes, when the list is all nodes) keeps no record, only
// its generation by position. Labels are read through view (nil: from
// the nodes). It reports false, having dropped every record, when nodes
// cannot be recorded by name (a NodeInfo without a node, or a recorded
// name listed twice); the caller then scans. A name listed twice among
// nodes that hold nothing is let be: they add nothing either way, and
// whichever comes to hold something first gets the record, the other
// then finding it taken.
func (r *records) sweep(nodes []fwk.NodeInfo, gens []int64, view *topology.View) bool {
	if r.last.same(nodes) && r.sweepInOrder(nodes, gens, view) {
		return true
	}
	r.sweeps++
	if r.byName == nil {
		r.byName = make(map[string]*nodeRecord, len(nodes))
	}
	recs := make([]*nodeRecord, len(nodes))
	for i, ni := range nodes {
		n := ni.Node()
		if n == nil {
			r.reset()
			return false
		}
		rec := r.byName[n.Name]
		if rec == nil {
			if !r.holds(ni) {
				continue
			}
			rec = &nodeRecord{name: n.Name}
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
	// Some recorded node was not listed (it left the list or the
	// cluster) or holds nothing any more.
	for name, rec := range r.byName {
		if rec.seen != r.sweeps || len(rec.parts) == 0 {
			r.release(rec)
			delete(r.byName, name)
		}
	}
	for i, rec := range recs {
		if rec != nil && len(rec.parts) == 0 {
			recs[i] = nil
		}
	}
	r.last.remember(nodes, recs)
	// Every record is now at its node's generation, and every node
	// without one was read at it.
	r.gens = append(r.gens[:0], gens...)
	return true
}

// holds reports whether ni has pods the records count.
func (r *records) holds(ni fwk.NodeInfo) bool {
	if r.scoring {
		return len(ni.GetPodsWithAffinity()) > 0
	}
	return len(ni.GetPodsWithRequiredAntiAffinity()) > 0
}

// sweepInOrder is sweep for the list last swept: only the positions whose
// generation moved are looked at (the comparison reads two arrays, not
// the nodes). A position's record is recomputed, and a node without one
// gets one if it now holds something. It reports false when a node that
// moved no longer has its record's name, or its name has a record
// elsewhere (the caller then sweeps by name, which recomputes what is
// still out of date).
func (r *records) sweepInOrder(nodes []fwk.NodeInfo, gens []int64, view *topology.View) bool {
	for i, g := range gens {
		if g != 0 && g == r.gens[i] {
			continue
		}
		ni := nodes[i]
		rec := r.last.recs[i]
		if rec == nil {
			n := ni.Node()
			if n == nil || r.byName[n.Name] != nil {
				return false
			}
			r.gens[i] = g
			if !r.holds(ni) {
				continue
			}
			rec = &nodeRecord{name: n.Name, seen: r.sweeps}
			r.byName[n.Name] = rec
			r.last.recs[i] = rec
		} else if n := ni.Node(); n == nil || n.Name != rec.name {
			return false
		}
		r.recompute(rec, ni, g, view)
		r.gens[i] = g
		if len(rec.parts) == 0 {
			// Its pods' terms went, or never parsed.
			delete(r.byName, rec.name)
			r.last.recs[i] = nil
		}
	}
	return true
}

// reset drops every record and term.
func (r *records) reset() {
	*r = records{sweeps: r.sweeps, scoring: r.scoring}
}

// recompute replaces rec's contribution with ni's current one, at
// generation gen. A pod that was on the node at its last record keeps its
// entries (podTerms); a term whose domain on the node did not move changes
// its counts by the change in its count on the node. Otherwise the new
// parts are added before the old are released, so that a term the node
// keeps keeps its entry.
func (r *records) recompute(rec *nodeRecord, ni fwk.NodeInfo, gen int64, view *topology.View) {
	old, oldHost, before, beforeEntries := rec.parts, rec.hostScoped, rec.pods, rec.entries
	rec.parts, rec.hostScoped, rec.gen = nil, false, gen
	nt := topology.Of(view, ni)
	pods := ni.GetPodsWithRequiredAntiAffinity()
	if r.scoring {
		pods = ni.GetPodsWithAffinity()
	}
	now, entries := r.pods[:0], r.entries[:0]
	for i, p := range pods {
		pod := p.GetPod()
		from := len(entries)
		if j := keptAt(before, i, pod); j >= 0 {
			for _, e := range beforeEntries[before[j].from:before[j].to] {
				rec.addEntry(e, &nt)
				entries = append(entries, e)
			}
		} else {
			entries = r.addTerms(rec, p, &nt, entries)
		}
		now = append(now, podTerms{pod: pod, from: int32(from), to: int32(len(entries))})
	}
	rec.pods, r.pods = keep(before, now), now
	rec.entries, r.entries = keep(beforeEntries, entries), entries
	for i := range rec.parts {
		if rec.parts[i].term.hostScoped {
			rec.hostScoped = true
		}
	}
	if rec.hostScoped {
		r.hostNodes++
	}
	for i := range rec.parts {
		p := &rec.parts[i]
		n := p.n
		if j := samePart(old, p); j >= 0 {
			// Only the change is added; the old part's count is zeroed,
			// so that releaseParts takes nothing out for it and only
			// drops its reference (the new part took one).
			n -= old[j].n
			old[j].n = 0
		}
		if p.labelled {
			p.term.domains.Add(p.domain, n)
		}
	}
	r.releaseParts(old, oldHost)
}

// addTerms counts p's terms the records count in rec's parts, on a node
// whose labels nt reads, and returns entries with their entries appended in
// p's order.
func (r *records) addTerms(rec *nodeRecord, p fwk.PodInfo, nt *topology.Node, entries []*termEntry) []*termEntry {
	add := func(k termKind, w int32, t fwk.AffinityTerm) {
		entries = append(entries, rec.add(&r.terms, k, w, t, nt))
	}
	if r.scoring {
		for _, t := range p.GetRequiredAffinityTerms() {
			add(requiredAffinity, 0, t)
		}
		for _, t := range p.GetPreferredAffinityTerms() {
			add(preferredAffinity, t.Weight, t.AffinityTerm)
		}
		for _, t := range p.GetPreferredAntiAffinityTerms() {
			add(preferredAnti, t.Weight, t.AffinityTerm)
		}
	} else {
		for _, t := range p.GetRequiredAntiAffinityTerms() {
			add(requiredAnti, 0, t)
		}
	}
	return entries
}

// samePart is the index in parts of the part of p's term in p's domain,
// or -1.
func samePart(parts []part, p *part) int {
	for j := range parts {
		if q := &parts[j]; q.term == p.term {
			if q.labelled == p.labelled && q.domain == p.domain {
				return j
			}
			return -1
		}
	}
	return -1
}

// add counts one occurrence of t (kind k, weight w) in rec's parts, on a
// node whose labels nt reads, and returns t's entry.
func (rec *nodeRecord) add(tt *termTable, k termKind, w int32, t fwk.AffinityTerm, nt *topology.Node) *termEntry {
	id := termID(k, w, t)
	for i := range rec.parts {
		if rec.parts[i].term.id == id {
			rec.parts[i].n++
			return rec.parts[i].term
		}
	}
	e := tt.ref(id, k, w, t)
	rec.newPart(e, nt)
	return e
}

// addEntry counts one occurrence of e's term in rec's parts, on a node
// whose labels nt reads. e is alive: a part of rec's last record refers to
// it.
func (rec *nodeRecord) addEntry(e *termEntry, nt *topology.Node) {
	for i := range rec.parts {
		if rec.parts[i].term == e {
			rec.parts[i].n++
			return
		}
	}
	e.refs++
	rec.newPart(e, nt)
}

// newPart adds a part of one occurrence of e's term, which holds one
// reference to e, on a node whose labels nt reads.
func (rec *nodeRecord) newPart(e *termEntry, nt *topology.Node) {
	key, v, ok := nt.Pair(e.term.TopologyKey)
	rec.parts = append(rec.parts, part{term: e, domain: topology.Pair{Key: key, Value: v}, labelled: ok, n: 1})
}

// release takes rec's contribution out of the table.
func (r *records) release(rec *nodeRecord) {
	r.releaseParts(rec.parts, rec.hostScoped)
	rec.parts, rec.hostScoped = nil, false
}

func (r *records) releaseParts(parts []part, hostScoped bool) {
	for i := range parts {
		if parts[i].labelled {
			parts[i].term.domains.Add(parts[i].domain, -parts[i].n)
		}
		r.terms.unref(parts[i].term)
	}
	if hostScoped {
		r.hostNodes--
	}
}

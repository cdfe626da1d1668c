package aggregate

// This file holds the distinct terms: existing pods' terms grouped by the
// term as upstream resolved it (namespaces, selectors, topology key), each
// with its counts per domain of its key.

import (
	"encoding/binary"

	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/signature"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// termKind says what a term does, and with it how it weighs.
type termKind uint8

const (
	// requiredAnti: a required anti-affinity term, which filters.
	requiredAnti termKind = iota
	// requiredAffinity: a required affinity term, scored by the
	// plugin's hardPodAffinityWeight.
	requiredAffinity
	// preferredAffinity and preferredAnti: preferred terms, scored by
	// their weight, positive and negative.
	preferredAffinity
	preferredAnti
)

// termEntry is one distinct term and its counts.
type termEntry struct {
	// id is the term's encoding (signature.Signature.Terms) with its kind
	// and weight: two terms with the same id match every pod alike,
	// weigh alike and count under one key.
	id     string
	kind   termKind
	weight int32
	// term is the first of the equal terms seen; Matches on it is
	// Matches on any of them.
	term       fwk.AffinityTerm
	hostScoped bool
	// pos is the entry's position in termTable.list.
	pos int
	// refs counts the node parts that refer to the entry, labelled or
	// not: the entry goes when the last goes.
	refs int64
	// domains counts, per domain of the term's topology key, the terms on
	// nodes in it. A domain whose count drops to zero is deleted, as in
	// the plugin's counts; the sums handed out borrow the map.
	domains counts.Domains
}

// termTable holds the distinct terms.
type termTable struct {
	byID map[string]*termEntry
	// list is the entries in no particular order.
	list []*termEntry
	// index finds the entries that may select a pod.
	index termIndex
}

// termID encodes t of kind k and weight w so that equal terms, and only
// they, encode alike.
func termID(k termKind, w int32, t fwk.AffinityTerm) string {
	var sig signature.Signature
	sig.Terms([]fwk.AffinityTerm{t})
	b := binary.AppendVarint([]byte{byte(k)}, int64(w))
	return string(b) + sig.String()
}

// ref returns the entry of t of kind k and weight w, whose termID is id,
// made if new, with one more reference.
func (tt *termTable) ref(id string, k termKind, w int32, t fwk.AffinityTerm) *termEntry {
	e := tt.byID[id]
	if e == nil {
		if tt.byID == nil {
			tt.byID = map[string]*termEntry{}
		}
		e = &termEntry{id: id, kind: k, weight: w, term: t, hostScoped: topology.HostScoped(t), pos: len(tt.list)}
		tt.byID[id] = e
		tt.list = append(tt.list, e)
		tt.index.add(e)
	}
	e.refs++
	return e
}

// unref drops one reference to e, and e itself with the last one.
func (tt *termTable) unref(e *termEntry) {
	if e.refs--; e.refs > 0 {
		return
	}
	tt.list = swapRemove(tt.list, e.pos, func(moved *termEntry) { moved.pos = e.pos })
	delete(tt.byID, e.id)
	tt.index.remove(e)
}

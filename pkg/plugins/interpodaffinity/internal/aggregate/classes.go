package aggregate

// This file holds the classes of existing pods: pods grouped by namespace
// and labels, which is all the incoming pod's terms read of a pod (they
// are matched with no namespace labels, their namespace selectors folded
// into their namespace lists), each with its pods counted per domain of
// each topology key some term asked for.

import (
	"encoding/binary"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// podClass is the existing pods of one namespace and label set, or of a
// projection's (projection.go).
type podClass struct {
	id string
	// pod stands for the class's pods: their namespace and labels, and
	// nothing else, which is all a term's Matches reads.
	pod *v1.Pod
	pos int
	// refs counts the node parts that refer to the class (for a
	// projected class, the classes projected onto it).
	refs int64
	// pods counts the class's pods on the recorded nodes, labelled or
	// not (the hostname fast path counts pods anywhere).
	pods int64
	// domains are, per key of classTable.keys (same index), the class's
	// pods per domain of the key; the sums handed out borrow them.
	domains []counts.Domains
	// proj are, per projection of classTable.projs (same index), the
	// projected class this class's pods also count in; nil for a
	// projected class.
	proj []*podClass
}

// classSet is a set of classes by encoding, with their label index.
type classSet struct {
	byID map[string]*podClass
	list []*podClass
	// index finds the classes a selector may select.
	index classIndex
}

// ref returns the class with encoding id, made if new with namespace ns
// and the labels lbls returns (kept as they are), with one more
// reference; made reports a new class.
func (s *classSet) ref(id []byte, ns string, lbls func() map[string]string) (c *podClass, made bool) {
	if c = s.byID[string(id)]; c == nil {
		if s.byID == nil {
			s.byID = map[string]*podClass{}
		}
		c = &podClass{id: string(id), pos: len(s.list),
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: lbls()}}}
		s.byID[c.id] = c
		s.list = append(s.list, c)
		s.index.add(c)
		made = true
	}
	c.refs++
	return c, made
}

// unref drops one reference to c, and c itself with the last one, which
// it reports.
func (s *classSet) unref(c *podClass) bool {
	if c.refs--; c.refs > 0 {
		return false
	}
	s.list = swapRemove(s.list, c.pos, func(moved *podClass) { moved.pos = c.pos })
	delete(s.byID, c.id)
	s.index.remove(c)
	return true
}

// each calls fn for every class of the set that sel may select.
func (s *classSet) each(sel labels.Selector, fn func(*podClass)) {
	s.index.each(s.list, sel, fn)
}

// swapRemove removes list[i] by moving the last element into its place,
// telling moved, and clearing the freed slot.
func swapRemove[E any](list []E, i int, moved func(E)) []E {
	last := len(list) - 1
	if i != last {
		list[i] = list[last]
		moved(list[i])
	}
	var zero E
	list[last] = zero
	return list[:last]
}

// maxCountedKeys bounds the topology keys counted for the classes: each
// costs a count per domain per class and a label per node record, and
// the keys asked for come from the incoming pods, any of which may bring
// keys of its own. Terms use a key or two (hostname, zone); the key least
// recently asked for makes room.
const maxCountedKeys = 8

// classTable holds the classes and the topology keys counted for them.
type classTable struct {
	classSet
	// keys are the topology keys counted; their index is the one of
	// podClass.domains and of classRecord.values. lastUse is each key's
	// last query (clock counts the queries).
	keys    []string
	lastUse []uint64
	clock   uint64
	// maxKeys, if set, replaces maxCountedKeys (tests of eviction).
	maxKeys int
	// projs are the projections kept (projection.go); asked are the
	// key sets (by encoding) asked for once, declined those whose
	// projection would not halve the classes (the classes then);
	// maxProjs, if set, replaces maxProjections (tests of eviction).
	projs    []*projection
	asked    map[string]bool
	declined map[string]int
	maxProjs int
	// Scratch reused by matching.
	keyScratch []string
	idScratch  []byte
	encScratch []byte
	selScratch []labels.Selector
}

// classID encodes a pod's namespace and labels so that pods of one class,
// and only they, encode alike (length-prefixed, labels in key order).
func classID(buf []byte, pod *v1.Pod) []byte {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return encodeLabels(buf, pod.Namespace, pod.Labels, keys)
}

// encodeLabels appends namespace ns and the labels of lbls under keys
// (sorted), length-prefixed, a key lbls lacks left out.
func encodeLabels(buf []byte, ns string, lbls map[string]string, keys []string) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	str(ns)
	for _, k := range keys {
		if v, ok := lbls[k]; ok {
			str(k)
			str(v)
		}
	}
	return buf
}

// ref returns the class with encoding id of pod, made if new (and
// projected onto each projection kept), with one more reference.
func (ct *classTable) ref(id []byte, pod *v1.Pod) *podClass {
	c, made := ct.classSet.ref(id, pod.Namespace, func() map[string]string { return maps.Clone(pod.Labels) })
	if made {
		for _, p := range ct.projs {
			c.proj = append(c.proj, p.ref(c))
		}
	}
	return c
}

// unref drops one reference to c, and c itself with the last one (its
// counts are then zero, and so is what it added to its projected
// classes).
func (ct *classTable) unref(c *podClass) {
	if ct.classSet.unref(c) {
		for j, q := range c.proj {
			ct.projs[j].unref(q)
		}
	}
}

// key returns the index of topology key k, or -1 when it is not counted.
func (ct *classTable) key(k string) int { return slices.Index(ct.keys, k) }

// bound is how many keys are kept counted between queries.
func (ct *classTable) bound() int {
	if ct.maxKeys > 0 {
		return ct.maxKeys
	}
	return maxCountedKeys
}

// leastRecentlyUsed is the key index asked for longest ago, or -1 when
// every key was asked for by the current query.
func (ct *classTable) leastRecentlyUsed() int {
	j := -1
	for i, u := range ct.lastUse {
		if u < ct.clock && (j < 0 || u < ct.lastUse[j]) {
			j = i
		}
	}
	return j
}

// add adds n pods to c's domain d of key index i, and to c's projected
// classes'.
func (c *podClass) add(i int, d topology.Pair, n int64) {
	c.addOwn(i, d, n)
	for _, q := range c.proj {
		q.addOwn(i, d, n)
	}
}

// addPods adds n to c's pods, and to its projected classes'.
func (c *podClass) addPods(n int64) {
	c.pods += n
	for _, q := range c.proj {
		q.pods += n
	}
}

func (c *podClass) addOwn(i int, d topology.Pair, n int64) {
	for len(c.domains) <= i {
		c.domains = append(c.domains, counts.Domains{})
	}
	c.domains[i].Add(d, n)
}

// dropKey drops c's counts of key index j; the later keys move down one.
func (c *podClass) dropKey(j int) {
	if len(c.domains) > j {
		c.domains = slices.Delete(c.domains, j, j+1)
	}
}

// domainsOf returns c's pods per domain of key index i (nil: none).
func (c *podClass) domainsOf(i int) *counts.Domains {
	if i < 0 || i >= len(c.domains) {
		return nil
	}
	return &c.domains[i]
}

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
)

// podClass is the existing pods of one namespace and label set.
type podClass struct {
	id string
	// pod stands for the class's pods: their namespace and labels, and
	// nothing else, which is all a term's Matches reads.
	pod *v1.Pod
	pos int
	// refs counts the node parts that refer to the class.
	refs int64
	// pods counts the class's pods on the recorded nodes, labelled or
	// not (the hostname fast path counts pods anywhere).
	pods int64
	// domains are, per key of classTable.keys (same index), the class's
	// pods per value of the key; nil until a pod is counted under it.
	domains []map[string]int64
}

// maxCountedKeys bounds the topology keys counted for the classes: each
// costs a count per domain per class and a label per node record, and
// the keys asked for come from the incoming pods, any of which may bring
// keys of its own. Terms use a key or two (hostname, zone); the key least
// recently asked for makes room.
const maxCountedKeys = 8

// classTable holds the classes and the topology keys counted for them.
type classTable struct {
	byID map[string]*podClass
	list []*podClass
	// index finds the classes a selector may select.
	index classIndex
	// keys are the topology keys counted; their index is the one of
	// podClass.domains and of classRecord.values. lastUse is each key's
	// last query (clock counts the queries).
	keys    []string
	lastUse []uint64
	clock   uint64
	// maxKeys, if set, replaces maxCountedKeys (tests of eviction).
	maxKeys int
}

// classID encodes a pod's namespace and labels so that pods of one class,
// and only they, encode alike (length-prefixed, labels in key order).
func classID(buf []byte, pod *v1.Pod) []byte {
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	str(pod.Namespace)
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		str(k)
		str(pod.Labels[k])
	}
	return buf
}

// ref returns the class with encoding id of pod, made if new, with one
// more reference.
func (ct *classTable) ref(id []byte, pod *v1.Pod) *podClass {
	c := ct.byID[string(id)]
	if c == nil {
		if ct.byID == nil {
			ct.byID = map[string]*podClass{}
		}
		c = &podClass{id: string(id), pos: len(ct.list),
			pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Labels: maps.Clone(pod.Labels)}}}
		ct.byID[c.id] = c
		ct.list = append(ct.list, c)
		ct.index.add(c)
	}
	c.refs++
	return c
}

// unref drops one reference to c, and c itself with the last one.
func (ct *classTable) unref(c *podClass) {
	if c.refs--; c.refs > 0 {
		return
	}
	last := ct.list[len(ct.list)-1]
	ct.list[c.pos], last.pos = last, c.pos
	ct.list[len(ct.list)-1] = nil
	ct.list = ct.list[:len(ct.list)-1]
	delete(ct.byID, c.id)
	ct.index.remove(c)
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

// add adds n pods to c's domain value of key index i.
func (c *podClass) add(i int, value string, n int64) {
	for len(c.domains) <= i {
		c.domains = append(c.domains, nil)
	}
	m := c.domains[i]
	if m == nil {
		m = map[string]int64{}
		c.domains[i] = m
	}
	if v := m[value] + n; v != 0 {
		m[value] = v
	} else {
		delete(m, value)
	}
}

// domainsOf returns c's pods per value of key index i (nil: none).
func (c *podClass) domainsOf(i int) map[string]int64 {
	if i < 0 || i >= len(c.domains) {
		return nil
	}
	return c.domains[i]
}

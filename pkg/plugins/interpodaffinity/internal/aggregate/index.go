package aggregate

// This file holds the label indexes that keep a query from matching every
// distinct term and every class: with one Deployment's terms and labels
// per workload, a cluster running a thousand workloads holds thousands of
// both, and an incoming pod matches only its own few.

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// labelPair is a label: a key and its value.
type labelPair struct{ key, value string }

// filing is a selector's one requirement that a labelled object must meet
// by holding one of its values (key = value, key == value, key in
// (values)); ok is false for a selector without one (empty, or only
// !=, notin, exists, !): any labels may match it. Of several, the one with
// the fewest values; values distinct.
func filing(sel labels.Selector) (key string, values []string, ok bool) {
	if sel == nil {
		return "", nil, false
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", nil, false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		// ValuesUnsorted is a copy: sorted and compacted in place, no
		// set per query (classIndex.each files a selector every cycle).
		vs := r.ValuesUnsorted()
		slices.Sort(vs)
		vs = slices.Compact(vs)
		if !ok || len(vs) < len(values) {
			key, values, ok = r.Key(), vs, true
		}
	}
	return key, values, ok
}

// termIndex files distinct terms by their selector's filing: a pod can be
// selected only by the terms filed under one of its labels and those filed
// under none.
type termIndex struct {
	byLabel map[labelPair][]*termEntry
	any     []*termEntry
}

func (ix *termIndex) add(e *termEntry) {
	key, values, ok := filing(e.term.Selector)
	if !ok {
		ix.any = append(ix.any, e)
		return
	}
	if ix.byLabel == nil {
		ix.byLabel = map[labelPair][]*termEntry{}
	}
	for _, v := range values {
		p := labelPair{key, v}
		ix.byLabel[p] = append(ix.byLabel[p], e)
	}
}

func (ix *termIndex) remove(e *termEntry) {
	key, values, ok := filing(e.term.Selector)
	if !ok {
		ix.any = without(ix.any, e)
		return
	}
	for _, v := range values {
		p := labelPair{key, v}
		if rest := without(ix.byLabel[p], e); len(rest) > 0 {
			ix.byLabel[p] = rest
		} else {
			delete(ix.byLabel, p)
		}
	}
}

// each calls fn for every term that may select a pod with podLabels, each
// once (a pod has one value per key).
func (ix *termIndex) each(podLabels map[string]string, fn func(*termEntry)) {
	for _, e := range ix.any {
		fn(e)
	}
	if len(ix.byLabel) == 0 {
		return
	}
	for k, v := range podLabels {
		for _, e := range ix.byLabel[labelPair{k, v}] {
			fn(e)
		}
	}
}

// classIndex files classes by each of their labels: a selector with a
// filing can select only the classes filed under one of its values.
type classIndex struct {
	byLabel map[labelPair][]*podClass
}

func (ix *classIndex) add(c *podClass) {
	if ix.byLabel == nil {
		ix.byLabel = map[labelPair][]*podClass{}
	}
	for k, v := range c.pod.Labels {
		p := labelPair{k, v}
		ix.byLabel[p] = append(ix.byLabel[p], c)
	}
}

func (ix *classIndex) remove(c *podClass) {
	for k, v := range c.pod.Labels {
		p := labelPair{k, v}
		if rest := without(ix.byLabel[p], c); len(rest) > 0 {
			ix.byLabel[p] = rest
		} else {
			delete(ix.byLabel, p)
		}
	}
}

// each calls fn for every class of all that sel may select, each once.
func (ix *classIndex) each(all []*podClass, sel labels.Selector, fn func(*podClass)) {
	key, values, ok := filing(sel)
	if !ok {
		for _, c := range all {
			fn(c)
		}
		return
	}
	for _, v := range values {
		for _, c := range ix.byLabel[labelPair{key, v}] {
			fn(c)
		}
	}
}

// without is s without e (at most once in it), in place.
func without[E comparable](s []E, e E) []E {
	if i := slices.Index(s, e); i >= 0 {
		last := len(s) - 1
		s[i] = s[last]
		var zero E
		s[last] = zero
		return s[:last]
	}
	return s
}

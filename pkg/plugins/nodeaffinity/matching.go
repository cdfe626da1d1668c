package nodeaffinity

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Node selector terms, parsed once per cycle (or once at start-up for the
// args' added affinity) into a form whose per-node match allocates nothing.
//
// component-helpers' matchers, which upstream calls per node, build a
// fields.Set map for metadata.name on every call (two heap allocations per
// node in Filter and Score); Filter and Score run once per node of a cycle,
// so that is the hot path. Parsing stays component-helpers' rules exactly:
// every label requirement is a labels.NewRequirement with the same operator
// and values (so Gt/Lt parsing, value validation and Matches are
// apimachinery's own), a field requirement is In or NotIn with exactly one
// value, any other operator or value count makes the term a parse error, and
// a term with neither expressions nor fields is dropped. What a parse error
// means is the caller's: a required term that fails to parse never matches
// (upstream discards the error in Filter); a preferred term that fails to
// parse fails PreScore, whose error text the caller takes from
// component-helpers itself. The equivalence suite compares the results with
// upstream's on generated and hostile terms.

// matchTerm is one parsed NodeSelectorTerm: its requirements are ANDed.
type matchTerm struct {
	labels []labels.Requirement
	fields []fieldRequirement
	// weight is a preferred term's weight (0 for a required term).
	weight int64
}

// fieldRequirement is one matchFields requirement: the node's field key
// equals (In) or differs from (NotIn) value. Only metadata.name is a node
// field; any other key reads as "", as in a fields.Set without it.
type fieldRequirement struct {
	key, value string
	in         bool
}

// selectionOp maps a node selector operator to the label selector
// operator; known is false for any other, which is a parse error.
func selectionOp(op v1.NodeSelectorOperator) (_ selection.Operator, known bool) {
	switch op {
	case v1.NodeSelectorOpIn:
		return selection.In, true
	case v1.NodeSelectorOpNotIn:
		return selection.NotIn, true
	case v1.NodeSelectorOpExists:
		return selection.Exists, true
	case v1.NodeSelectorOpDoesNotExist:
		return selection.DoesNotExist, true
	case v1.NodeSelectorOpGt:
		return selection.GreaterThan, true
	case v1.NodeSelectorOpLt:
		return selection.LessThan, true
	}
	return "", false
}

// isEmptyTerm: a term without requirements, which the parser drops.
func isEmptyTerm(t *v1.NodeSelectorTerm) bool {
	return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
}

// parseTerm parses a non-empty term; ok is false on a parse error.
func parseTerm(t *v1.NodeSelectorTerm) (out matchTerm, ok bool) {
	if n := len(t.MatchExpressions); n > 0 {
		out.labels = make([]labels.Requirement, 0, n)
		for _, e := range t.MatchExpressions {
			op, known := selectionOp(e.Operator)
			if !known {
				return matchTerm{}, false
			}
			r, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return matchTerm{}, false
			}
			out.labels = append(out.labels, *r)
		}
	}
	if n := len(t.MatchFields); n > 0 {
		out.fields = make([]fieldRequirement, 0, n)
		for _, f := range t.MatchFields {
			if (f.Operator != v1.NodeSelectorOpIn && f.Operator != v1.NodeSelectorOpNotIn) || len(f.Values) != 1 {
				return matchTerm{}, false
			}
			out.fields = append(out.fields, fieldRequirement{key: f.Key, value: f.Values[0], in: f.Operator == v1.NodeSelectorOpIn})
		}
	}
	return out, true
}

// match reports whether node satisfies every requirement of t. As in
// component-helpers, field requirements are not checked at all for a node
// without a name (its fields.Set is empty).
func (t *matchTerm) match(node *v1.Node) bool {
	if len(t.labels) > 0 {
		ls := labels.Set(node.Labels)
		for i := range t.labels {
			if !t.labels[i].Matches(ls) {
				return false
			}
		}
	}
	if len(t.fields) > 0 && node.Name != "" {
		for _, f := range t.fields {
			var got string
			if f.key == metav1.ObjectNameField {
				got = node.Name
			}
			if (got == f.value) != f.in {
				return false
			}
		}
	}
	return true
}

// requiredSelector is a NodeSelector's terms (ORed) with the empty and
// unparsable ones dropped: those never match. No terms left matches no node.
type requiredSelector struct {
	terms []matchTerm
}

func newRequiredSelector(ns *v1.NodeSelector) *requiredSelector {
	s := &requiredSelector{terms: make([]matchTerm, 0, len(ns.NodeSelectorTerms))}
	for i := range ns.NodeSelectorTerms {
		t := &ns.NodeSelectorTerms[i]
		if isEmptyTerm(t) {
			continue
		}
		if mt, ok := parseTerm(t); ok {
			s.terms = append(s.terms, mt)
		}
	}
	return s
}

func (s *requiredSelector) match(node *v1.Node) bool {
	if node == nil {
		return false
	}
	for i := range s.terms {
		if s.terms[i].match(node) {
			return true
		}
	}
	return false
}

// preferredTerms is a list of preferred terms with weight 0 and empty
// preferences dropped (the parser drops them before parsing, so their
// errors never surface).
type preferredTerms struct {
	terms []matchTerm
}

// newPreferredTerms parses terms; ok is false if any kept term fails to
// parse (the caller then asks component-helpers for the error).
func newPreferredTerms(terms []v1.PreferredSchedulingTerm) (p *preferredTerms, ok bool) {
	p = &preferredTerms{terms: make([]matchTerm, 0, len(terms))}
	for i := range terms {
		t := &terms[i]
		if t.Weight == 0 || isEmptyTerm(&t.Preference) {
			continue
		}
		mt, ok := parseTerm(&t.Preference)
		if !ok {
			return nil, false
		}
		mt.weight = int64(t.Weight)
		p.terms = append(p.terms, mt)
	}
	return p, true
}

// score is the sum of the weights of the terms node matches.
func (p *preferredTerms) score(node *v1.Node) int64 {
	var sum int64
	for i := range p.terms {
		if p.terms[i].match(node) {
			sum += p.terms[i].weight
		}
	}
	return sum
}

// podSelector is the pod's spec.nodeSelector AND its required node affinity,
// as component-helpers' RequiredNodeAffinity: either part may be absent.
type podSelector struct {
	nodeSelector labels.Selector   // nil: no (or an empty) nodeSelector
	required     *requiredSelector // nil: no required node affinity
}

func newPodSelector(pod *v1.Pod) podSelector {
	var s podSelector
	if len(pod.Spec.NodeSelector) > 0 {
		s.nodeSelector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if req := requiredTerms(pod); req != nil {
		s.required = newRequiredSelector(req)
	}
	return s
}

func (s *podSelector) match(node *v1.Node) bool {
	if s.nodeSelector != nil && !s.nodeSelector.Matches(labels.Set(node.Labels)) {
		return false
	}
	return s.required == nil || s.required.match(node)
}

package testutil

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Inter-pod affinity fixtures and the few extra node/pod setters the
// equivalence generator needs. Kept next to builders.go so every test builds
// these objects the same way.

// Selector builds a label selector from matchLabels and matchExpressions.
// Selector(nil) yields the empty selector {}, which matches everything; pass a
// nil *metav1.LabelSelector where "no selector" (matches nothing) is wanted.
func Selector(matchLabels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: exprs}
}

// SelectorExpr is shorthand for a label selector requirement.
func SelectorExpr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

// AffinityTerm builds a pod (anti-)affinity term over the owner pod's own
// namespace (no namespaces, no namespaceSelector).
func AffinityTerm(topologyKey string, selector *metav1.LabelSelector) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: selector}
}

// Weighted wraps a pod affinity term for the preferred lists.
func Weighted(weight int32, term v1.PodAffinityTerm) v1.WeightedPodAffinityTerm {
	return v1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term}
}

func (p *PodWrapper) podAffinity() *v1.PodAffinity {
	a := p.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	return a.PodAffinity
}

func (p *PodWrapper) podAntiAffinity() *v1.PodAntiAffinity {
	a := p.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	return a.PodAntiAffinity
}

// RequiredPodAffinity appends required pod affinity terms.
func (p *PodWrapper) RequiredPodAffinity(terms ...v1.PodAffinityTerm) *PodWrapper {
	pa := p.podAffinity()
	pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// PreferredPodAffinity appends preferred pod affinity terms.
func (p *PodWrapper) PreferredPodAffinity(terms ...v1.WeightedPodAffinityTerm) *PodWrapper {
	pa := p.podAffinity()
	pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// RequiredPodAntiAffinity appends required pod anti-affinity terms.
func (p *PodWrapper) RequiredPodAntiAffinity(terms ...v1.PodAffinityTerm) *PodWrapper {
	pa := p.podAntiAffinity()
	pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// PreferredPodAntiAffinity appends preferred pod anti-affinity terms.
func (p *PodWrapper) PreferredPodAntiAffinity(terms ...v1.WeightedPodAffinityTerm) *PodWrapper {
	pa := p.podAntiAffinity()
	pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
	return p
}

// NominatedNodeName sets status.nominatedNodeName (a pod nominated by preemption).
func (p *PodWrapper) NominatedNodeName(n string) *PodWrapper {
	p.Status.NominatedNodeName = n
	return p
}

// Priority sets spec.priority.
func (p *PodWrapper) Priority(prio int32) *PodWrapper {
	p.Spec.Priority = &prio
	return p
}

// Unlabel removes one label (e.g. the hostname label MakeNode sets).
func (n *NodeWrapper) Unlabel(k string) *NodeWrapper {
	delete(n.ObjectMeta.Labels, k)
	return n
}

// InNamespaces returns term with its namespaces list set (an explicit list
// replaces the owner pod's namespace).
func InNamespaces(term v1.PodAffinityTerm, namespaces ...string) v1.PodAffinityTerm {
	term.Namespaces = namespaces
	return term
}

// WithNamespaceSelector returns term with its namespaceSelector set: nil
// selects no namespace, Selector(nil) ({}) every namespace.
func WithNamespaceSelector(term v1.PodAffinityTerm, sel *metav1.LabelSelector) v1.PodAffinityTerm {
	term.NamespaceSelector = sel
	return term
}

// WithMatchLabelKeys returns term with matchLabelKeys set. The apiserver
// merges them into the label selector on create; in-process pods keep them
// unmerged, as the scheduler would never see them.
func WithMatchLabelKeys(term v1.PodAffinityTerm, keys ...string) v1.PodAffinityTerm {
	term.MatchLabelKeys = keys
	return term
}

// WithMismatchLabelKeys returns term with mismatchLabelKeys set (merged as
// NotIn by the apiserver on create).
func WithMismatchLabelKeys(term v1.PodAffinityTerm, keys ...string) v1.PodAffinityTerm {
	term.MismatchLabelKeys = keys
	return term
}

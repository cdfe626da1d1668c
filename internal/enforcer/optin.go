package enforcer

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// Annotation is the pod annotation that opts a pod in to enforcement (set it
// on the pod template). Its value is "all", "none", or a comma-separated list
// of rule kinds ("node-affinity,pod-anti-affinity"). "none" opts a pod out of
// an enforcement its namespace opted it in to.
const Annotation = "placement-scheduler.io/enforce"

// RuleSet is a set of rule kinds.
type RuleSet uint8

func ruleBit(r enforcerv1alpha1.Rule) RuleSet {
	switch r {
	case enforcerv1alpha1.NodeAffinity:
		return 1
	case enforcerv1alpha1.PodAffinity:
		return 2
	case enforcerv1alpha1.PodAntiAffinity:
		return 4
	}
	return 0
}

// Has reports whether r is in the set.
func (s RuleSet) Has(r enforcerv1alpha1.Rule) bool { return s&ruleBit(r) != 0 }

// Empty reports whether no rule is in the set.
func (s RuleSet) Empty() bool { return s == 0 }

// String lists the set's rules, comma-separated, in judging order.
func (s RuleSet) String() string {
	var out []string
	for _, r := range enforcerv1alpha1.Rules() {
		if s.Has(r) {
			out = append(out, string(r))
		}
	}
	return strings.Join(out, ",")
}

// AllRules is the set of every rule kind.
const AllRules RuleSet = 7

// ParseRules parses an annotation value or a config list: "all", "none", or
// rule kinds separated by commas (spaces allowed). An unknown kind is an
// error naming it and the valid ones.
func ParseRules(value string) (RuleSet, error) {
	all, kinds, err := enforcerv1alpha1.ParseRuleList(value)
	if err != nil {
		return 0, err
	}
	if all {
		return AllRules, nil
	}
	var s RuleSet
	for _, r := range kinds {
		s |= ruleBit(r)
	}
	return s, nil
}

// OptIn decides which rules a pod is held to: its annotation when present
// (including "none"), otherwise the namespace default (nsRules, empty when
// the namespace is not selected by the config). A malformed annotation
// enforces nothing and returns the error so it can be reported on the pod.
func OptIn(pod *v1.Pod, nsRules RuleSet) (RuleSet, error) {
	value, ok := pod.Annotations[Annotation]
	if !ok {
		return nsRules, nil
	}
	s, err := ParseRules(value)
	if err != nil {
		return 0, fmt.Errorf("annotation %s=%q: %w", Annotation, value, err)
	}
	return s, nil
}

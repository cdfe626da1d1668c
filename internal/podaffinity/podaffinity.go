// Package podaffinity answers the two questions about a pod's inter-pod
// affinity that both the scheduler's plugin (pkg/plugins/interpodaffinity)
// and the enforcer ask, so that they cannot come to mean two things.
package podaffinity

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
)

// HasTerms reports whether pod has any pod affinity or anti-affinity term,
// required or preferred. Without one there is nothing for
// framework.NewPodInfo to parse, so it cannot fail, and no rule to judge.
func HasTerms(pod *v1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	if pa := a.PodAffinity; pa != nil &&
		(len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || len(pa.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
		return true
	}
	if pa := a.PodAntiAffinity; pa != nil &&
		(len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 || len(pa.PreferredDuringSchedulingIgnoredDuringExecution) > 0) {
		return true
	}
	return false
}

// MatchesAll reports whether pod matches every term, and false when there
// are none: required pod affinity asks for a single pod that satisfies all
// its terms. nsLabels are the labels of pod's namespace, for terms whose
// namespaceSelector is still to be evaluated; nil when the selectors are
// already expanded into namespace names (the incoming pod's terms after
// PreFilter) or, as upstream's queueing hints do, not consulted.
func MatchesAll(terms []fwk.AffinityTerm, pod *v1.Pod, nsLabels labels.Set) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nsLabels) {
			return false
		}
	}
	return true
}

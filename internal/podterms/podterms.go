// Package podterms walks the pod (anti-)affinity terms of an Affinity in
// place, for code that rewrites them the way the apiserver or a benchmark
// does (schedutil.GetPodAffinityTerms and friends return copies, which
// cannot be edited).
package podterms

import v1 "k8s.io/api/core/v1"

// Each calls fn with a pointer to every pod affinity and pod anti-affinity
// term of a, required and preferred (the term inside the weighted one), in
// that order; fn may modify the term. A nil a, or nil parts of it, have no
// terms.
func Each(a *v1.Affinity, fn func(*v1.PodAffinityTerm)) {
	if a == nil {
		return
	}
	each := func(required []v1.PodAffinityTerm, preferred []v1.WeightedPodAffinityTerm) {
		for i := range required {
			fn(&required[i])
		}
		for i := range preferred {
			fn(&preferred[i].PodAffinityTerm)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		each(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
}

//go:build k8s1.36

package k8sline

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// Minor is the Kubernetes minor this build's plugins mirror.
const Minor = "1.36"

// SkipsDeferredResize is false: 1.36 has no gate
// InPlacePodVerticalScalingSchedulerPreemption, and its filter plugins judge
// a pod with a deferred resize like any other.
func SkipsDeferredResize(feature.Features) bool { return false }

// HostnameFastPath is false: 1.36 has no gate InterPodAffinityHostnameFastPath
// and counts every term cluster-wide.
func HostnameFastPath(feature.Features) bool { return false }

// GenericWorkload reports gate GenericWorkload (pod groups, alpha in 1.36).
func GenericWorkload(fts feature.Features) bool {
	return fts.EnableGenericWorkload
}

// PodGroupCycle reports whether cs belongs to a pod group's scheduling cycle.
func PodGroupCycle(cs fwk.CycleState) bool {
	return cs.IsPodGroupSchedulingCycle()
}

// NodesWithNonHostScopedAntiAffinity: 1.36's lister has only the list of all
// nodes with required anti-affinity. It is reached only on the hostname fast
// path, which 1.36 does not have.
func NodesWithNonHostScopedAntiAffinity(l fwk.NodeInfoLister) ([]fwk.NodeInfo, error) {
	return l.HavePodsWithRequiredAntiAffinityList()
}

// ResourceRequestsOptions is NodeResourcesFit's request options for fts.
func ResourceRequestsOptions(fts feature.Features) noderesources.ResourceRequestsOptions {
	return noderesources.ResourceRequestsOptions{
		EnablePodLevelResources:           fts.EnablePodLevelResources,
		EnableDRAExtendedResource:         fts.EnableDRAExtendedResource,
		EnableDRANodeAllocatableResources: fts.EnableDRANodeAllocatableResources,
	}
}

// NewCache is a scheduler cache with no API dispatcher, for a component that
// keeps its own copy of the cluster (assumed pods never expire);
// genericWorkload is gate GenericWorkload (pod groups). ctx bounds its
// housekeeping goroutine.
func NewCache(ctx context.Context, genericWorkload bool) cache.Cache {
	return cache.New(ctx, nil, genericWorkload)
}

// SkipsAllPostFilter reports whether the cycle's PreFilter asked the
// framework to skip every PostFilter plugin.
func SkipsAllPostFilter(cs fwk.CycleState) bool { return cs.ShouldSkipAllPostFilterPlugins() }

//go:build k8s1.36

package k8sline

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
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

// SchedulerFrameworkOptions wire a framework to kube-scheduler's own cache
// and snapshot as 1.36's scheduler does: the snapshot as its lister (1.36's
// framework has no mutable lister), the cache as its pod-group manager.
func SchedulerFrameworkOptions(c cache.Cache, snap *cache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithPodGroupManager(c),
	}
}

// RemoveAssumedPod is what kube-scheduler does to its cache when a pod it
// assumed is deleted before its binding is seen: 1.36's cache has no call of
// its own for it (1.37 added RemoveAssumedPod); the scheduler drops the pod
// from its pod group, then forgets the assumption.
func RemoveAssumedPod(logger klog.Logger, c cache.Cache, pod *v1.Pod) error {
	c.RemovePodGroupMember(pod)
	return c.ForgetPod(logger, pod)
}

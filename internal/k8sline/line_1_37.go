//go:build !k8s1.35 && !k8s1.36

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
const Minor = "1.37"

// SkipsDeferredResize reports gate InPlacePodVerticalScalingSchedulerPreemption
// (new in 1.37): the filter plugins Skip a pod whose resize is deferred.
func SkipsDeferredResize(fts feature.Features) bool {
	return fts.EnableInPlacePodVerticalScalingSchedulerPreemption
}

// HostnameFastPath reports gate InterPodAffinityHostnameFastPath (new in
// 1.37): InterPodAffinity checks kubernetes.io/hostname terms on the node
// instead of counting them cluster-wide.
func HostnameFastPath(fts feature.Features) bool {
	return fts.EnableInterPodAffinityHostnameFastPath
}

// GenericWorkload reports gate GenericWorkload (pod groups).
func GenericWorkload(fts feature.Features) bool {
	return fts.EnableGenericWorkload
}

// PodGroupCycle reports whether cs belongs to a pod group's scheduling cycle,
// whose pods are assumed and forgotten together.
func PodGroupCycle(cs fwk.CycleState) bool {
	return cs.IsPodGroupSchedulingCycle()
}

// NodesWithNonHostScopedAntiAffinity lists the nodes holding a pod with a
// required anti-affinity term whose topology key is not the hostname (the
// hostname fast path's narrower list).
func NodesWithNonHostScopedAntiAffinity(l fwk.NodeInfoLister) ([]fwk.NodeInfo, error) {
	return l.HavePodsWithRequiredNonHostScopedAntiAffinityList()
}

// ResourceRequestsOptions is NodeResourcesFit's request options for fts.
func ResourceRequestsOptions(fts feature.Features) noderesources.ResourceRequestsOptions {
	return noderesources.ResourceRequestsOptions{
		EnablePodLevelResources:                            fts.EnablePodLevelResources,
		EnableDRAExtendedResource:                          fts.EnableDRAExtendedResource,
		EnableDRANodeAllocatableResources:                  fts.EnableDRANodeAllocatableResources,
		EnableInPlacePodVerticalScalingSchedulerPreemption: fts.EnableInPlacePodVerticalScalingSchedulerPreemption,
	}
}

// NewCache is a scheduler cache with no API dispatcher, for a component that
// keeps its own copy of the cluster (assumed pods never expire);
// genericWorkload is gate GenericWorkload (pod groups). ctx bounds its
// housekeeping goroutine.
func NewCache(ctx context.Context, genericWorkload bool) cache.Cache {
	return cache.New(ctx, nil, genericWorkload, false)
}

// SkipsAllPostFilter reports whether the cycle's PreFilter asked the
// framework to skip every PostFilter plugin.
func SkipsAllPostFilter(cs fwk.CycleState) bool { return cs.ShouldSkipAllPostFilterPlugins() }

// SchedulerFrameworkOptions wire a framework to kube-scheduler's own cache
// and snapshot as 1.37's scheduler does: the snapshot as its lister and its
// mutable lister (the preemption dry run's), the cache as its pod-group
// manager.
func SchedulerFrameworkOptions(c cache.Cache, snap *cache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithMutableSnapshotLister(snap),
		frameworkruntime.WithPodGroupManager(c),
	}
}

// RemoveAssumedPod is what kube-scheduler does to its cache when a pod it
// assumed is deleted before its binding is seen: 1.37's cache has a call of
// its own for it, which also drops the pod from its pod group (ForgetPod
// would keep it there as unscheduled).
func RemoveAssumedPod(logger klog.Logger, c cache.Cache, pod *v1.Pod) error {
	return c.RemoveAssumedPod(logger, pod)
}

//go:build k8s1.35

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
const Minor = "1.35"

// SkipsDeferredResize is false: 1.35 has no gate
// InPlacePodVerticalScalingSchedulerPreemption.
func SkipsDeferredResize(feature.Features) bool { return false }

// HostnameFastPath is false: 1.35 has no gate InterPodAffinityHostnameFastPath.
func HostnameFastPath(feature.Features) bool { return false }

// GenericWorkload is false: 1.35's plugins do not see gate GenericWorkload
// (its feature set has no such field) and have no pod group cycles.
func GenericWorkload(feature.Features) bool { return false }

// PodGroupCycle is false: 1.35's framework has no pod group cycles.
func PodGroupCycle(fwk.CycleState) bool { return false }

// NodesWithNonHostScopedAntiAffinity: 1.35's lister has only the list of all
// nodes with required anti-affinity; reached only on the hostname fast path,
// which 1.35 does not have.
func NodesWithNonHostScopedAntiAffinity(l fwk.NodeInfoLister) ([]fwk.NodeInfo, error) {
	return l.HavePodsWithRequiredAntiAffinityList()
}

// ResourceRequestsOptions is NodeResourcesFit's request options for fts.
func ResourceRequestsOptions(fts feature.Features) noderesources.ResourceRequestsOptions {
	return noderesources.ResourceRequestsOptions{
		EnablePodLevelResources:   fts.EnablePodLevelResources,
		EnableDRAExtendedResource: fts.EnableDRAExtendedResource,
	}
}

// NewCache is a scheduler cache with no API dispatcher, for a component that
// keeps its own copy of the cluster (assumed pods never expire);
// genericWorkload is gate GenericWorkload (pod groups), which 1.35's cache
// does not know. ctx bounds its housekeeping goroutine.
func NewCache(ctx context.Context, _ bool) cache.Cache {
	return cache.New(ctx, 0, nil)
}

// SkipsAllPostFilter is false: 1.35's cycle state cannot ask to skip every
// PostFilter plugin.
func SkipsAllPostFilter(fwk.CycleState) bool { return false }

// SchedulerFrameworkOptions wire a framework to kube-scheduler's own cache
// and snapshot as 1.35's scheduler does: the snapshot as its lister. 1.35's
// framework has no mutable lister, and its cache no pod groups to manage.
func SchedulerFrameworkOptions(_ cache.Cache, snap *cache.Snapshot) []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(snap)}
}

// RemoveAssumedPod is what kube-scheduler does to its cache when a pod it
// assumed is deleted before its binding is seen: 1.35's cache has no call of
// its own for it (1.37 added RemoveAssumedPod); the scheduler forgets the
// assumption.
func RemoveAssumedPod(logger klog.Logger, c cache.Cache, pod *v1.Pod) error {
	return c.ForgetPod(logger, pod)
}

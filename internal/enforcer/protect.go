package enforcer

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/scheduling"
)

// Why a violating pod is never evicted. Each is reported on the pod.
const (
	SkipDaemonSet    = "daemonset"       // pinned to its node by design
	SkipMirror       = "mirror-pod"      // a static pod's mirror: the API cannot evict it
	SkipBare         = "no-controller"   // nothing would re-create it
	SkipCritical     = "system-critical" // system-node-critical / system-cluster-critical
	SkipTerminating  = "terminating"     // already on its way out
	SkipNodeNotReady = "node-not-ready"  // its deletion would hang; the node lifecycle controller decides
	SkipLocalStorage = "local-storage"   // an emptyDir or hostPath volume: its data stays behind
)

// protection returns why pod must never be evicted, or "" when it may be.
// node is the pod's node (nil when unknown). evictLocalStorage is the
// config's consent to lose emptyDir and hostPath data (the descheduler's
// evictLocalStoragePods: off by default there too).
func protection(pod *v1.Pod, node *v1.Node, evictLocalStorage bool) string {
	switch {
	case pod.DeletionTimestamp != nil:
		return SkipTerminating
	case pod.Annotations[v1.MirrorPodAnnotationKey] != "":
		return SkipMirror
	}
	owner := metav1.GetControllerOf(pod)
	switch {
	case owner == nil:
		return SkipBare
	case owner.Kind == "DaemonSet" && owner.APIVersion == "apps/v1":
		return SkipDaemonSet
	case pod.Spec.PriorityClassName == scheduling.SystemNodeCritical || pod.Spec.PriorityClassName == scheduling.SystemClusterCritical,
		pod.Spec.Priority != nil && *pod.Spec.Priority >= scheduling.SystemCriticalPriority:
		return SkipCritical
	case !nodeReady(node):
		return SkipNodeNotReady
	case !evictLocalStorage && hasLocalStorage(pod):
		return SkipLocalStorage
	}
	return ""
}

// hasLocalStorage: the pod keeps data on its node that an eviction would
// lose (an emptyDir of any medium, or a hostPath).
func hasLocalStorage(pod *v1.Pod) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.EmptyDir != nil || vol.HostPath != nil {
			return true
		}
	}
	return false
}

// nodeReady: the node's Ready condition is True and it carries neither the
// not-ready nor the unreachable taint.
func nodeReady(node *v1.Node) bool {
	if node == nil {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady || t.Key == v1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

package enforcer

import (
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/scheduling"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
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
	SkipJob          = "job"             // runs to completion: an eviction can fail its Job
)

// protection returns why pod must never be evicted, or "" when it may be.
// node is the pod's node (nil when unknown). cfg.EvictLocalStoragePods is
// the consent to lose emptyDir and hostPath data (the descheduler's
// evictLocalStoragePods: off by default there too); cfg.EvictJobPods the
// consent to evict a Job's pods, which job (the pod's Job, nil when
// unknown) must also give (jobTolerates).
func protection(pod *v1.Pod, node *v1.Node, cfg *enforcerv1alpha1.EnforcerConfiguration, job *batchv1.Job) string {
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
	case runsToCompletion(pod) && !(cfg.EvictJobPods && isJob(owner) && jobTolerates(job)):
		return SkipJob
	case pod.Spec.PriorityClassName == scheduling.SystemNodeCritical || pod.Spec.PriorityClassName == scheduling.SystemClusterCritical,
		pod.Spec.Priority != nil && *pod.Spec.Priority >= scheduling.SystemCriticalPriority:
		return SkipCritical
	case !nodeReady(node):
		return SkipNodeNotReady
	case !cfg.EvictLocalStoragePods && hasLocalStorage(pod):
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

// runsToCompletion: the pod belongs to a Job (a CronJob's pods do, through
// the Job it creates), or to any controller of pods that run to
// completion (restartPolicy Never or OnFailure). An eviction does not
// move such a pod: it fails it, and its controller may count the failure
// (a Job's backoffLimit) instead of replacing it.
func runsToCompletion(pod *v1.Pod) bool {
	if o := metav1.GetControllerOf(pod); o != nil && isJob(o) {
		return true
	}
	return pod.Spec.RestartPolicy == v1.RestartPolicyNever || pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure
}

func isJob(o *metav1.OwnerReference) bool {
	return o.Kind == "Job" && o.APIVersion == batchv1.SchemeGroupVersion.String()
}

// jobTolerates: the Job's podFailurePolicy ignores the failure of a pod
// evicted through the API: the first of its rules that can match such a
// pod is an Ignore rule on the DisruptionTarget condition (which the
// Eviction API sets). Rules on exit codes before it could match first (an
// evicted container exits 143 or 137), so they make it false; without the
// rule, an evicted pod counts against the Job's backoffLimit, and with
// backoffLimit 0 fails the whole Job.
func jobTolerates(job *batchv1.Job) bool {
	if job == nil || job.Spec.PodFailurePolicy == nil {
		return false
	}
	for _, r := range job.Spec.PodFailurePolicy.Rules {
		if r.OnExitCodes != nil {
			return false
		}
		for _, c := range r.OnPodConditions {
			if c.Type == v1.DisruptionTarget && (c.Status == "" || c.Status == v1.ConditionTrue) {
				return r.Action == batchv1.PodFailurePolicyActionIgnore
			}
		}
	}
	return false
}

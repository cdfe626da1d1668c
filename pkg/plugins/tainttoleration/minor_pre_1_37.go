//go:build k8s1.35 || k8s1.36

package tainttoleration

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// 1.35 and 1.36's TaintToleration has no PreFilter, and registers toleration
// updates of any pod (resource Pod): its hint queues only when the updated
// pod is the pending pod itself.

// ownTolerationChange registers toleration updates of any pod.
func ownTolerationChange(pl *TaintToleration) fwk.ClusterEventWithHint {
	return fwk.ClusterEventWithHint{
		Event:          fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.UpdatePodToleration},
		QueueingHintFn: pl.isSchedulableAfterPodTolerationChange,
	}
}

// isSchedulableAfterPodTolerationChange queues when the updated pod is the
// pending one: another pod's tolerations change nothing for it.
func (pl *TaintToleration) isSchedulableAfterPodTolerationChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	_, updated, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if updated.UID == pod.UID {
		logger.V(5).Info("the pod's tolerations changed, which may make it schedulable", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	logger.V(5).Info("another pod's tolerations changed, which does not change this pod's verdict", "pod", klog.KObj(pod), "updatedPod", klog.KObj(updated))
	return fwk.QueueSkip, nil
}

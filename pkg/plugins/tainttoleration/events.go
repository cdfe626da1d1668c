package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// EventsToRegister lists the events that can turn a Filter rejection into
// success: a node gaining/losing taints or appearing, and the pod itself
// gaining tolerations (ownTolerationChange: how the pod's own update is
// registered differs between minors).
func (pl *TaintToleration) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeTaint}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
		ownTolerationChange(pl),
	}, nil
}

// isSchedulableAfterNodeChange queues the pod only when the node flips from
// rejecting it (or not existing) to accepting it under Filter's rule.
func (pl *TaintToleration) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	// A newly added node counts as previously rejecting.
	wasRejected := oldNode == nil || pl.firstUntoleratedTaint(logger, oldNode.Spec.Taints, pod.Spec.Tolerations) != nil
	isRejected := pl.firstUntoleratedTaint(logger, newNode.Spec.Taints, pod.Spec.Tolerations) != nil
	if wasRejected && !isRejected {
		logger.V(5).Info("node was added or its taints changed so that the pod now tolerates them", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	logger.V(5).Info("node was added or its taints changed, but the pod's taint verdict did not improve", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.QueueSkip, nil
}

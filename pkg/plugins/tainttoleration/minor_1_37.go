//go:build !k8s1.35 && !k8s1.36

package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// What 1.37's TaintToleration has that 1.35 and 1.36's do not: a PreFilter
// (it exists to Skip deferred-resize pods), and the pod's own toleration
// update registered on the TargetPod resource, whose events are the pending
// pod's own updates only.

var _ fwk.PreFilterPlugin = &TaintToleration{}

// PreFilter writes no state: Filter needs nothing beyond the pod and node.
// It Skips only deferred-resize pods so that Filter is not even called.
func (pl *TaintToleration) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.resizeDeferred(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return nil, nil
}

// PreFilterExtensions returns nil: the verdict does not depend on other pods.
func (pl *TaintToleration) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// ownTolerationChange registers the pending pod's own toleration updates.
func ownTolerationChange(pl *TaintToleration) fwk.ClusterEventWithHint {
	return fwk.ClusterEventWithHint{
		Event:          fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodToleration},
		QueueingHintFn: pl.isSchedulableAfterPodTolerationChange,
	}
}

// isSchedulableAfterPodTolerationChange always queues: the event fires only
// for the pending pod's own toleration update, and checking which nodes it
// now fits is what a scheduling attempt does anyway.
func (pl *TaintToleration) isSchedulableAfterPodTolerationChange(logger klog.Logger, pod *v1.Pod, _, _ any) (fwk.QueueingHint, error) {
	logger.V(5).Info("the pod's tolerations changed, which may make it schedulable", "pod", klog.KObj(pod))
	return fwk.Queue, nil
}

package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// errReasonUntolerated is the fixed Filter reason of upstream v1.37.2; it
// deliberately names no taint.
const errReasonUntolerated = "node(s) had untolerated taint(s)"

// Filter rejects the node if one of its NoSchedule/NoExecute taints is
// tolerated by none of the pod's tolerations.
func (pl *TaintToleration) Filter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if pl.resizeDeferred(pod) {
		return nil
	}
	node := nodeInfo.Node()
	// Most nodes carry no taints; they pass without even a logger lookup.
	if len(node.Spec.Taints) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	taint := pl.firstUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations)
	if taint == nil {
		return nil
	}
	// Rejections are common on tainted clusters: build the log arguments
	// (interface boxing of the refs and the taint) only when V(4) is on.
	if v := logger.V(4); v.Enabled() {
		v.Info("node had untolerated taints", "node", klog.KObj(node), "pod", klog.KObj(pod), "untoleratedTaint", taint)
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, errReasonUntolerated)
}

// firstUntoleratedTaint returns the first NoSchedule/NoExecute taint, in node
// order, that no toleration tolerates, or nil. It walks the node's slice in
// place instead of building a filtered copy per node as
// FindMatchingUntoleratedTaint does; the result is the same taint.
func (pl *TaintToleration) firstUntoleratedTaint(logger klog.Logger, taints []v1.Taint, tolerations []v1.Toleration) *v1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !v1helper.TolerationsTolerateTaint(logger, tolerations, t, pl.comparisonOperators) {
			return t
		}
	}
	return nil
}

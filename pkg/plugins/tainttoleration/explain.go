package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// ExplainFilter lists every NoSchedule/NoExecute taint of the node that the
// pod does not tolerate (Filter stops at the first). Only tooling calls it.
func (pl *TaintToleration) ExplainFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []explanation.Cause {
	node := nodeInfo.Node()
	if node == nil || pl.resizeDeferred(pod) {
		return nil
	}
	logger := klog.FromContext(ctx)
	var out []explanation.Cause
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if v1helper.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, t, pl.comparisonOperators) {
			continue
		}
		out = append(out, explanation.Cause{
			Message: fmt.Sprintf("taint %s is not tolerated", t.ToString()),
			Fix:     "tolerating " + t.ToString(),
		})
	}
	return out
}

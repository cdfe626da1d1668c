package nodename

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// ExplainFilter says which node spec.nodeName pins the pod to. Only tooling
// calls it.
func (pl *NodeName) ExplainFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []explanation.Cause {
	if nodeInfo.Node() == nil || fits(pod, nodeInfo) {
		return nil
	}
	return []explanation.Cause{{
		Message: fmt.Sprintf("spec.nodeName is %q, not this node (%s)", pod.Spec.NodeName, nodeInfo.Node().Name),
	}}
}

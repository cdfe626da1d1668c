package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Filter rejects every node but spec.nodeName.
func (pl *NodeName) Filter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if fits(pod, nodeInfo) {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, errReason)
}

// fits reports whether pod may run on nodeInfo's node as far as spec.nodeName
// is concerned: always when the pod names no node.
func fits(pod *v1.Pod, nodeInfo fwk.NodeInfo) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == nodeInfo.Node().Name
}

package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// PreFilter narrows the candidate set to spec.nodeName when it is set, so the
// other nodes are reported UnschedulableAndUnresolvable by the framework
// without running Filter (and are never preemption targets). It never Skips
// and keeps no state.
func (pl *NodeName) PreFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(pod.Spec.NodeName)}, nil
}

// PreFilterExtensions returns nil: nothing computed in PreFilter depends on
// other pods.
func (pl *NodeName) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

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

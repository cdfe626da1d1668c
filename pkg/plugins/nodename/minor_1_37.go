//go:build !k8s1.35 && !k8s1.36

package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
)

// Since 1.37 upstream's NodeName has a PreFilter (kubernetes/kubernetes
// PR "NodeName: PreFilter returns spec.nodeName as PreFilterResult"); 1.35
// and 1.36 have Filter only, so this file is built for the 1.37 line alone.
var _ fwk.PreFilterPlugin = &NodeName{}

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

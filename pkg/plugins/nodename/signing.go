package nodename

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// SignPod says the plugin's verdict depends only on spec.nodeName. Using the
// shared fragment key keeps batching identical to a profile running the
// in-tree NodeName plugin.
func (pl *NodeName) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: fwk.NodeNameSignerName, Value: pod.Spec.NodeName}}, nil
}

package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// SignPod says the plugin's verdicts depend only on the pod's node affinity
// and nodeSelector (the added affinity is the same for every pod). The
// fragment keys and values come from the framework's shared signers, so a
// profile with this plugin batches exactly like one with upstream's.
func (pl *NodeAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	affinity, err := fwk.NodeAffinitySigner(pod)
	if err != nil {
		return nil, fwk.AsStatus(err)
	}
	return []fwk.SignFragment{
		{Key: fwk.NodeAffinitySignerName, Value: affinity},
		{Key: fwk.NodeSelectorSignerName, Value: pod.Spec.NodeSelector},
	}, nil
}

package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// SignPod reports the only pod input the plugin reads, the tolerations, with
// the shared signer so that pods differing only in toleration order batch
// together exactly as with upstream.
func (pl *TaintToleration) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{
		{Key: fwk.TolerationsSignerName, Value: fwk.TolerationsSigner(pod)},
	}, nil
}

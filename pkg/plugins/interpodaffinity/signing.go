package interpodaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// SignPod: whether a pod with pod (anti-)affinity fits depends on where other
// pods are, so such pods cannot share a signature. For the others the labels
// matter, because existing pods' terms select on them, unless existing pods'
// preferred terms are ignored, in which case nothing pod-specific is read.
func (pl *InterPodAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return nil, fwk.NewStatus(fwk.Unschedulable, "pods with InterPodAffinity are not signable")
	}
	if pl.args.ignorePreferredTermsOfExistingPods {
		return nil, nil
	}
	return []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: pod.Labels}}, nil
}

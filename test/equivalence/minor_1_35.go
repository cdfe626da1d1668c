//go:build k8s1.35

package equivalence

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// setSchedulingGroup: 1.35's pods have no scheduling group (and the
// sequence harness runs a group cycle as its first pod's own cycle).
func setSchedulingGroup(*v1.Pod, string) {}

// markPodGroupCycle: 1.35 has no pod group cycles.
func markPodGroupCycle(*framework.CycleState) {}

// signPod is the framework's batching signature of pod (1.35 asks whether
// to record plugin stats: it does not here).
func signPod(ctx context.Context, fw framework.Framework, pod *v1.Pod) fwk.PodSignature {
	return fw.SignPod(ctx, pod, false)
}

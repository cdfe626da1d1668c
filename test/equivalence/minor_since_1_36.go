//go:build !k8s1.35

package equivalence

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// setSchedulingGroup makes pod a member of pod group group (1.36 and newer).
func setSchedulingGroup(pod *v1.Pod, group string) {
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
}

// markPodGroupCycle marks st as a pod group's scheduling cycle, as
// kube-scheduler does by handing it the group's own state.
func markPodGroupCycle(st *framework.CycleState) {
	st.SetPodGroupSchedulingCycle(framework.NewCycleState())
}

// signPod is the framework's batching signature of pod.
func signPod(ctx context.Context, fw framework.Framework, pod *v1.Pod) fwk.PodSignature {
	return fw.SignPod(ctx, pod)
}

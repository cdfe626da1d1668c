//go:build k8s1.35 || k8s1.36

package equivalence

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// What the harness does differently on the 1.35 and 1.36 lines: their
// plugins read none of the scenario's 1.37 gates, their queue files every
// pod event under resource Pod, and they have no pre-queueing hints.

// namespaceInformer is client-go's namespace informer interface.
type namespaceInformer = corev1informers.NamespaceInformer

const (
	assignedPodResource = fwk.Pod
	targetPodResource   = fwk.Pod
)

// setLineGates: the scenario's gates (InPlacePodVerticalScalingSchedulerPreemption,
// InterPodAffinityHostnameFastPath) are 1.37's; this minor has neither, so
// both sides run without them.
func setLineGates(*feature.Features, Gates) {}

// setProcessGates refuses a reproducer that needs a gate this minor lacks.
func setProcessGates(t *testing.T, g Gates) {
	if g.InterPodAffinityHostnameFastPath {
		t.Fatal("the reproducer sets InterPodAffinityHostnameFastPath, a 1.37 gate; replay it on the 1.37 line")
	}
}

func podResource(*v1.Pod) fwk.EventResource { return fwk.Pod }

// podPropertiesChange is the queue's events for a pod update.
func podPropertiesChange(newPod, oldPod *v1.Pod, _ bool) []fwk.ClusterEvent {
	return framework.PodSchedulingPropertiesChange(newPod, oldPod)
}

func hasPreHint(fwk.ClusterEventWithHint) bool { return false }

func runPreHint(klog.Logger, fwk.ClusterEventWithHint, *v1.Pod, any, any) string {
	return "AllPods (no pre-hint fn)"
}

// lineCorners: 1.35 and 1.36 have no corner of their own; NodeName and
// TaintToleration have no PreFilter there.
var lineCorners []string

// lineLacksMutant says why a mutant cannot be planted on these minors: the
// mutant wrapper has a PreFilter, which 1.35 and 1.36's NodeName and
// TaintToleration do not, so it would differ from upstream by shape alone.
func lineLacksMutant(name string) string {
	switch name {
	case "NodeName PreFilter ignores nodeName", "TaintToleration Gt not strict", "TaintToleration reverse normalization of all-zero":
		return "the plugin has no PreFilter on this minor; the mutant wrapper would differ by its extension points, not by the planted bug"
	}
	return ""
}

//go:build !k8s1.35 && !k8s1.36

package equivalence

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1informers "k8s.io/client-go/informers/core/v1"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// What the harness does differently on the 1.37 line: the gates only 1.37
// has, the pod event resources the 1.37 queue derives (AssignedPod,
// UnscheduledPod, TargetPod), pre-queueing hints, and the namespace
// informer's typed interface.

// namespaceInformer is client-go's namespace informer interface.
type namespaceInformer = corev1informers.TypedNamespaceInformer

const (
	assignedPodResource = fwk.AssignedPod
	targetPodResource   = fwk.TargetPod
)

// setLineGates copies the scenario's gates of this minor into fts.
func setLineGates(fts *feature.Features, g Gates) {
	fts.EnableInPlacePodVerticalScalingSchedulerPreemption = g.InPlacePodVerticalScalingSchedulerPreemption
	fts.EnableInterPodAffinityHostnameFastPath = g.InterPodAffinityHostnameFastPath
}

// setProcessGates sets, for the test, the scenario's gates that the
// snapshot reads process-wide.
func setProcessGates(t *testing.T, g Gates) {
	if g.InterPodAffinityHostnameFastPath {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, true)
	}
}

// podResource is the resource the queue files a pod's add or delete under.
func podResource(p *v1.Pod) fwk.EventResource {
	if p.Spec.NodeName != "" {
		return fwk.AssignedPod
	}
	return fwk.UnscheduledPod
}

// podPropertiesChange is the queue's events for a pod update.
func podPropertiesChange(newPod, oldPod *v1.Pod, target bool) []fwk.ClusterEvent {
	return framework.PodSchedulingPropertiesChange(newPod, oldPod, target)
}

func hasPreHint(e fwk.ClusterEventWithHint) bool { return e.PreQueueingHintFn != nil }

// runPreHint runs e's pre-queueing hint: does it keep pod among the pods the
// queue evaluates?
func runPreHint(logger klog.Logger, e fwk.ClusterEventWithHint, pod *v1.Pod, oldObj, newObj any) string {
	if e.PreQueueingHintFn == nil {
		return "AllPods (no pre-hint fn)"
	}
	res, err := e.PreQueueingHintFn(logger, oldObj, newObj)
	if err != nil || res.AllPods {
		return "AllPods"
	}
	for _, p := range res.Pods {
		if p.Namespace == pod.Namespace && p.Name == pod.Name {
			return "AllPods" // the target pod is evaluated either way
		}
	}
	return "pod excluded"
}

// TestEquivalenceHostnameFastPath runs a batch with the alpha gate
// InterPodAffinityHostnameFastPath on, process-wide (the snapshot's NodeInfo
// indices follow the global gate) and in the plugins' feature.Features.
func TestEquivalenceHostnameFastPath(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, true)
	seed := envUint("EQUIVALENCE_SEED", defaultSeed) + 1
	def := uint64(defaultScenarios / 6)
	if testing.Short() {
		def = 500
	}
	n := envUint("EQUIVALENCE_SCENARIOS", def*6) / 6
	profileEvery := envUint("EQUIVALENCE_PROFILE_EVERY", 4)
	generate := func(seed, index uint64) *Scenario {
		sc := Generate(seed, index)
		sc.Gates.InterPodAffinityHostnameFastPath = true
		return sc
	}
	cmp := defaultComparator(profileEvery)
	res := runBatchWith(t, seed, n, nil, generate, cmp, 50)
	t.Logf("seed=%d scenarios=%d wall=%v", seed, res.ran, res.elapsed.Round(time.Millisecond))
	if len(res.findings) > 0 {
		t.Errorf("equivalence mismatches with InterPodAffinityHostnameFastPath on:\n%s", report(t, res, cmp))
	}
}

// HavePodsWithRequiredNonHostScopedAntiAffinityList is the 1.37 lister's
// list for the hostname fast path, restricted to the view.
func (v *viewNodeInfos) HavePodsWithRequiredNonHostScopedAntiAffinityList() ([]fwk.NodeInfo, error) {
	real, err := v.SharedLister.NodeInfos().HavePodsWithRequiredNonHostScopedAntiAffinityList()
	if err != nil || len(real) == 0 {
		return real, err
	}
	names := map[string]bool{}
	for _, ni := range real {
		names[ni.Node().Name] = true
	}
	return v.filtered(func(ni fwk.NodeInfo) bool { return names[ni.Node().Name] })
}

// lineCorners are the contract corners only 1.37's plugins have (NodeName's
// and TaintToleration's PreFilter).
var lineCorners = []string{
	lit(`NodeName/PreFilter: Success NodeNames[`),
	lit(`TaintToleration/PreFilter: Skip`),
	lit(`Profile/PreFilter: UnschedulableAndUnresolvable "node(s) didn't satisfy plugin(s) [NodeAffinity NodeName] simultaneously"`),
}

// lineLacksMutant: every mutant applies on 1.37.
func lineLacksMutant(string) string { return "" }

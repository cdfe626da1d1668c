package plugins

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestRegistryHoldsOurFourPlugins(t *testing.T) {
	var got []string
	for name := range Registry() {
		got = append(got, name)
	}
	slices.Sort(got)
	want := []string{InterPodAffinityName, NodeAffinityName, NodeNameName, TaintTolerationName}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Registry() names = %v, want %v", got, want)
	}
	r1 := Registry()
	delete(r1, NodeNameName)
	if _, ok := Registry()[NodeNameName]; !ok {
		t.Error("Registry() must return a fresh map each call: deleting from one changed the next")
	}
}

// The binary builds the registry before cobra parses --feature-gates, so a
// factory must read the gates when the framework calls it, not before.
func TestFactoriesReadFeatureGatesLate(t *testing.T) {
	factory := Registry()[TaintTolerationName] // built while the gate is off
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.TaintTolerationComparisonOperators, true)

	pl, err := factory(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := testutil.MakeNode("n").Taint("gpu-mem", "10", v1.TaintEffectNoSchedule).Obj()
	pod := testutil.MakePod("ns", "p").Toleration(testutil.Tol("gpu-mem", v1.TolerationOperator("Gt"), "5", v1.TaintEffectNoSchedule)).Obj()
	st := pl.(fwk.FilterPlugin).Filter(context.Background(), framework.NewCycleState(), pod, testutil.NodeInfo(node))
	if !st.IsSuccess() {
		t.Errorf("with the gate enabled after Registry(), Gt toleration should tolerate taint 10 > 5; got %v", st)
	}
}

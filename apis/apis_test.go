package apis_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
)

// TestKinds: each package registers its kind under the apiVersion and
// kind its files and outputs carry, so a scheme-based decoder or printer
// names them as the documents do.
func TestKinds(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{enforcerv1alpha1.AddToScheme, explainv1alpha1.AddToScheme, simulatev1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		obj              runtime.Object
		apiVersion, kind string
	}{
		{&enforcerv1alpha1.EnforcerConfiguration{}, enforcerv1alpha1.ConfigAPIVersion, enforcerv1alpha1.ConfigKind},
		{&explainv1alpha1.PlacementExplanation{}, explainv1alpha1.APIVersion, explainv1alpha1.Kind},
		{&simulatev1alpha1.PlacementSimulation{}, simulatev1alpha1.APIVersion, simulatev1alpha1.Kind},
	} {
		gvks, _, err := scheme.ObjectKinds(tc.obj)
		if err != nil {
			t.Fatalf("%T: %v", tc.obj, err)
		}
		gv, err := schema.ParseGroupVersion(tc.apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		if want := gv.WithKind(tc.kind); len(gvks) != 1 || gvks[0] != want {
			t.Errorf("%T registered as %v, want %v", tc.obj, gvks, want)
		}
	}
}

// TestDeepCopyIsDeep: a copy shares nothing with its original, down to
// the nested types (a shallow copy would see the original's change).
func TestDeepCopyIsDeep(t *testing.T) {
	sim := &simulatev1alpha1.PlacementSimulation{
		Replicas: []simulatev1alpha1.ReplicaResult{{Pod: "p", Preempts: []string{"v"}}},
		Reasons: []simulatev1alpha1.PendingReason{{Reason: "r", Explanation: &explainv1alpha1.PlacementExplanation{
			NodeResults: []explainv1alpha1.NodeResult{{Node: "a", Filters: []explainv1alpha1.PluginVerdict{{Plugin: "f", Causes: []explainv1alpha1.Cause{{Message: "m"}}}}}},
		}}},
		Drain:      &simulatev1alpha1.DrainReport{PDBs: []simulatev1alpha1.PDBReport{{PDB: "b", Evicting: []string{"x"}}}},
		Comparison: &simulatev1alpha1.Comparison{Result: &simulatev1alpha1.PlacementSimulation{Profile: "b"}},
	}
	cp := sim.DeepCopyObject().(*simulatev1alpha1.PlacementSimulation)
	cp.Replicas[0].Preempts[0] = "changed"
	cp.Reasons[0].Explanation.NodeResults[0].Filters[0].Causes[0].Message = "changed"
	cp.Drain.PDBs[0].Evicting[0] = "changed"
	cp.Comparison.Result.Profile = "changed"
	if sim.Replicas[0].Preempts[0] != "v" || sim.Reasons[0].Explanation.NodeResults[0].Filters[0].Causes[0].Message != "m" ||
		sim.Drain.PDBs[0].Evicting[0] != "x" || sim.Comparison.Result.Profile != "b" {
		t.Errorf("the copy shares data with the original: %+v", sim)
	}

	cfg := &enforcerv1alpha1.EnforcerConfiguration{Namespaces: &enforcerv1alpha1.NamespaceOptIn{Rules: []string{"all"}}}
	cc := cfg.DeepCopyObject().(*enforcerv1alpha1.EnforcerConfiguration)
	cc.Namespaces.Rules[0] = "changed"
	if cfg.Namespaces.Rules[0] != "all" {
		t.Errorf("the configuration's copy shares its rules")
	}
}

package plugins

import (
	"context"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	plugintesting "k8s.io/kubernetes/pkg/scheduler/framework/plugins/testing"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

func TestRegistryHoldsTheSet(t *testing.T) {
	var got, want []string
	for name := range Registry() {
		got = append(got, name)
	}
	for _, p := range Set() {
		want = append(want, p.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) != 4 {
		t.Errorf("Registry() names = %v, want the four of Set() %v", got, want)
	}
	r1 := Registry()
	delete(r1, nodename.Name)
	if _, ok := Registry()[nodename.Name]; !ok {
		t.Error("Registry() must return a fresh map each call: deleting from one changed the next")
	}
}

// Each row's plugin reports the row's name, and the row's in-tree name and
// weight are upstream's: its default profile (from the defaulting code, not
// a copy) enables Replaces with Weight at multiPoint, in Set's order.
func TestSetMatchesUpstreamDefaults(t *testing.T) {
	schedmetrics.Register() // the framework's parallelizer reports a metric
	_, ctx := ktesting.NewTestContext(t)
	var cfg configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&cfg)
	weights := map[string]int32{}
	var order []string
	for _, p := range cfg.Profiles[0].Plugins.MultiPoint.Enabled {
		weights[p.Name] = ptr.Deref(p.Weight, 0)
		order = append(order, p.Name)
	}
	last := -1
	for _, p := range Set() {
		idx := slices.Index(order, p.Replaces)
		if idx < 0 {
			t.Errorf("%s replaces %q, which upstream's default profile does not enable", p.Name, p.Replaces)
			continue
		}
		if idx < last {
			t.Errorf("%s is out of upstream's order %v", p.Name, order)
		}
		last = idx
		if weights[p.Replaces] != p.Weight {
			t.Errorf("%s: weight %d, upstream's default for %s is %d", p.Name, p.Weight, p.Replaces, weights[p.Replaces])
		}
		pl := plugintesting.SetupPluginWithInformers(ctx, t, Registry()[p.Name], nil, cache.NewEmptySnapshot(), nil)
		if pl.Name() != p.Name {
			t.Errorf("row %s builds a plugin named %s", p.Name, pl.Name())
		}
	}
}

// The binary builds the registry before cobra parses --feature-gates, so a
// factory must read the gates when the framework calls it, not before.
func TestFactoriesReadFeatureGatesLate(t *testing.T) {
	factory := Registry()[tainttoleration.Name] // built while the gate is off
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.TaintTolerationComparisonOperators, true)

	pl, err := factory(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := testutil.MakeNode("n").Taint("gpu-mem", "10", v1.TaintEffectNoSchedule).Obj()
	pod := testutil.MakePod("ns", "p").Toleration(testutil.Tol("gpu-mem", v1.TolerationOperator("Gt"), "5", v1.TaintEffectNoSchedule)).Obj()
	st := pl.(fwk.FilterPlugin).Filter(context.Background(), framework.NewCycleState(), pod, testutil.NodeInfo(node))
	// With the gate enabled after Registry(), Gt 5 tolerates taint value 10.
	testutil.CheckStatus(t, "Filter", st, fwk.Success, "")
}

// The opt-in plugins stay out of Registry (the replacement set) but the
// binary registers them: All holds both, and no name is in both.
func TestAllHoldsRegistryAndOptIn(t *testing.T) {
	all, reg, opt := All(), Registry(), OptIn()
	if len(all) != len(reg)+len(opt) {
		t.Errorf("All() has %d plugins, want Registry()'s %d + OptIn()'s %d", len(all), len(reg), len(opt))
	}
	if _, ok := reg[DiagnosisName]; ok {
		t.Errorf("%s is in Registry(); it replaces nothing and belongs in OptIn()", DiagnosisName)
	}
	if _, ok := all[DiagnosisName]; !ok {
		t.Errorf("%s missing from All()", DiagnosisName)
	}
}

// Every list of the plugin set derives from Set, and each row agrees with
// upstream: InTree builds the plugin named Replaces with upstream's
// extension points (ours adds only FilterExplainer); Args is the type of
// the args upstream's default profile configures for Replaces, nil exactly
// when it configures none; and OptIn's PlacementDiagnosis explains every
// row's rejections.
func TestSetRowsAgreeWithUpstream(t *testing.T) {
	schedmetrics.Register()
	_, ctx := ktesting.NewTestContext(t)
	var cfg configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&cfg)
	defaultArgs := map[string]runtime.Object{}
	for _, pc := range cfg.Profiles[0].PluginConfig {
		defaultArgs[pc.Name] = pc.Args.Object
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	for _, p := range Set() {
		if want := defaultArgs[p.Replaces]; reflect.TypeOf(p.Args) != reflect.TypeOf(want) {
			t.Errorf("%s: Args is %T, upstream's default profile configures %s with %T", p.Name, p.Args, p.Replaces, want)
		}
		inTree := plugintesting.SetupPluginWithInformers(ctx, t, func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return p.NewInTree(ctx, nil, h, fts)
		}, nil, cache.NewEmptySnapshot(), nil)
		if inTree.Name() != p.Replaces {
			t.Errorf("%s: InTree builds %s, want %s", p.Name, inTree.Name(), p.Replaces)
		}
		ours := plugintesting.SetupPluginWithInformers(ctx, t, withGates(p.New), nil, cache.NewEmptySnapshot(), nil)
		want := append(Interfaces(inTree), "FilterExplainer")
		if got := Interfaces(ours); !slices.Equal(got, want) {
			t.Errorf("%s implements %v; %s implements %v (ours adds FilterExplainer only)", p.Name, got, p.Replaces, want[:len(want)-1])
		}
		if _, err := p.NewInTree(ctx, &configv1.DefaultPreemptionArgs{}, nil, fts); err == nil {
			t.Errorf("%s: NewInTree accepted args of another plugin", p.Name)
		}
	}
	diag := plugintesting.SetupPluginWithInformers(ctx, t, OptIn()[DiagnosisName], nil, cache.NewEmptySnapshot(), nil)
	explains := diag.(interface{ Explains() []string }).Explains()
	if got, want := explains, rowNames(Set()); !slices.Equal(got, want) {
		t.Errorf("%s explains %v, want every row of Set() %v", DiagnosisName, got, want)
	}
}

func rowNames(set []Plugin) []string {
	var out []string
	for _, p := range set {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

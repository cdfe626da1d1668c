// Package plugins is placement-scheduler's plugin set, written down once:
// Set lists, for each plugin we ship, the in-tree plugin it replaces, our
// registered name, its factory, its default score weight, and the in-tree
// plugin's own factory and args type. Registry, OptIn's PlacementDiagnosis,
// the shipped-config drift test, the equivalence suite, the plugin
// benchmarks, the bench report and every tool derive from Set, so adding a
// plugin is one row here (and its package below this one).
package plugins

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	intreeinterpodaffinity "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	intreenodeaffinity "k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	intreenodename "k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodename"
	intreetainttoleration "k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// Plugin is one row of the set.
type Plugin struct {
	// Name is the name ours is registered under. The in-tree names are taken
	// by kube-scheduler's own registry, and Registry.Merge refuses
	// duplicates, so ours carry a prefix.
	Name string
	// Replaces is the in-tree plugin ours decides exactly as, and whose slot
	// it takes in a profile.
	Replaces string
	// Weight is the score weight upstream's default profile gives Replaces,
	// and the shipped profile gives ours; 0 for a plugin that does not score.
	Weight int32
	// New is the plugin package's factory. Like upstream's, it takes the
	// scheduler feature set explicitly, so tests can pin gates without
	// touching global state; Registry adapts it to read the gates late.
	New Factory
	// InTree is Replaces' own factory (the in-tree package's New), which
	// takes Args converted to the internal type; NewInTree builds it as
	// kube-scheduler's config loader would. Only comparisons with upstream
	// use it (the equivalence suite, the plugin benchmarks); it adds nothing
	// to a binary, since every binary that links this package links
	// kube-scheduler's in-tree registry, and so these packages, already.
	InTree Factory
	// Args is a zero value of the versioned (k8s.io/kube-scheduler/config/v1)
	// args type Replaces reads and ours decodes, upstream's schema; nil for a
	// plugin that takes no args.
	Args runtime.Object
}

// Factory is the shape of every plugin package's New, ours and in-tree:
// upstream's, which takes the scheduler feature set explicitly.
type Factory = func(ctx context.Context, args runtime.Object, h fwk.Handle, fts plfeature.Features) (fwk.Plugin, error)

// Set returns every plugin we ship, in the order upstream's default profile
// runs the ones they replace. A fresh slice each call.
func Set() []Plugin {
	return []Plugin{
		{Name: nodename.Name, Replaces: names.NodeName, New: nodename.New,
			InTree: intreenodename.New},
		{Name: tainttoleration.Name, Replaces: names.TaintToleration, Weight: 3, New: tainttoleration.New,
			InTree: intreetainttoleration.New},
		{Name: nodeaffinity.Name, Replaces: names.NodeAffinity, Weight: 2, New: nodeaffinity.New,
			InTree: intreenodeaffinity.New, Args: &configv1.NodeAffinityArgs{}},
		{Name: interpodaffinity.Name, Replaces: names.InterPodAffinity, Weight: 2, New: interpodaffinity.New,
			InTree: intreeinterpodaffinity.New, Args: &configv1.InterPodAffinityArgs{}},
	}
}

// NewInTree builds the in-tree plugin p replaces the way kube-scheduler's
// config loader hands it args: versioned (nil: none configured) defaulted
// and converted to the internal type by InternalArgs.
func (p Plugin) NewInTree(ctx context.Context, versioned runtime.Object, h fwk.Handle, fts plfeature.Features) (fwk.Plugin, error) {
	args, err := p.InternalArgs(versioned)
	if err != nil {
		return nil, err
	}
	return p.InTree(ctx, args, h, fts)
}

// InternalArgs is versioned, a value of p.Args' type (nil: none configured,
// that is p.Args' zero value), defaulted and converted to the internal type
// the in-tree plugin takes, as the config loader does; nil if p takes no
// args. versioned is not modified.
func (p Plugin) InternalArgs(versioned runtime.Object) (runtime.Object, error) {
	if p.Args == nil {
		if versioned != nil {
			return nil, fmt.Errorf("%s takes no args, got %T", p.Replaces, versioned)
		}
		return nil, nil
	}
	if versioned == nil || reflect.ValueOf(versioned).IsNil() {
		versioned = p.Args
	}
	if reflect.TypeOf(versioned) != reflect.TypeOf(p.Args) {
		return nil, fmt.Errorf("%s takes %T args, got %T", p.Replaces, p.Args, versioned)
	}
	in := versioned.DeepCopyObject()
	scheme.Scheme.Default(in)
	out, err := scheme.Scheme.ConvertToVersion(in, config.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("converting %T for %s: %w", in, p.Replaces, err)
	}
	return out, nil
}

// Registry returns a fresh registry holding every plugin in Set, keyed by its
// registered name, for app.WithPlugin and frameworkruntime. A new map is
// returned on each call so callers may extend it. Each plugin is wrapped by
// Contain: a panic in it fails one pod's cycle, not the scheduler.
func Registry() frameworkruntime.Registry {
	return RegistryOf(Set())
}

// RegistryOf is Registry for the given rows, e.g. Set() with one factory
// swapped (the panic-containment test injects a faulty plugin this way, in
// its own test binary, so production builds carry no fault hook).
func RegistryOf(set []Plugin) frameworkruntime.Registry {
	r := frameworkruntime.Registry{}
	for _, p := range set {
		r[p.Name] = contained(withGates(p.New))
	}
	return r
}

// contained wraps what f builds with Contain.
func contained(f frameworkruntime.PluginFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := f(ctx, args, h)
		if err != nil {
			return nil, err
		}
		return Contain(p)
	}
}

// withGates adapts a plugin's New to a PluginFactory that reads the feature
// gates when the framework instantiates the plugin, not when the registry is
// built: main builds the registry before cobra parses --feature-gates, so
// reading them eagerly would silently ignore the flag.
func withGates(f Factory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return f(ctx, args, h, plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	}
}

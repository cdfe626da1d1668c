// Package plugins is placement-scheduler's plugin set, written down once:
// Set lists, for each plugin we ship, the in-tree plugin it replaces, our
// registered name, its factory and its default score weight. Registry, the
// shipped-config drift test, the equivalence suite, the bench report and
// every tool derive from Set, so adding a plugin is one row here (and its
// package below this one).
package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
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
	New func(ctx context.Context, args runtime.Object, h fwk.Handle, fts plfeature.Features) (fwk.Plugin, error)
}

// Set returns every plugin we ship, in the order upstream's default profile
// runs the ones they replace. A fresh slice each call.
func Set() []Plugin {
	return []Plugin{
		{Name: nodename.Name, Replaces: names.NodeName, New: nodename.New},
		{Name: tainttoleration.Name, Replaces: names.TaintToleration, Weight: 3, New: tainttoleration.New},
		{Name: nodeaffinity.Name, Replaces: names.NodeAffinity, Weight: 2, New: nodeaffinity.New},
		{Name: interpodaffinity.Name, Replaces: names.InterPodAffinity, Weight: 2, New: interpodaffinity.New},
	}
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
func withGates(f func(context.Context, runtime.Object, fwk.Handle, plfeature.Features) (fwk.Plugin, error)) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return f(ctx, args, h, plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	}
}

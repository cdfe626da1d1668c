// Package plugins assembles placement-scheduler's plugin set. The binary, the
// tests, the benchmarks and every tool take the set from Registry, so there is
// exactly one list of what we ship.
package plugins

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// Registered plugin names. The in-tree names (NodeAffinity, InterPodAffinity,
// TaintToleration, NodeName) are already taken by kube-scheduler's own
// registry, and Registry.Merge refuses duplicates, so ours carry a prefix.
// Each plugin package declares its own Name; these re-export them.
const (
	TaintTolerationName  = tainttoleration.Name
	NodeAffinityName     = nodeaffinity.Name
	NodeNameName         = nodename.Name
	InterPodAffinityName = interpodaffinity.Name
)

// Registry returns a fresh registry holding every plugin we ship, keyed by its
// registered name. A new map is returned on each call so callers may extend it.
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		tainttoleration.Name:  withGates(tainttoleration.New),
		nodeaffinity.Name:     withGates(nodeaffinity.New),
		nodename.Name:         withGates(nodename.New),
		interpodaffinity.Name: withGates(interpodaffinity.New),
	}
}

// featureFactory is the signature of our plugins' New functions: like
// upstream's, they take the scheduler feature set explicitly so tests can pin
// gates without touching global state.
type featureFactory func(ctx context.Context, args runtime.Object, h fwk.Handle, fts plfeature.Features) (fwk.Plugin, error)

// withGates adapts a featureFactory to a PluginFactory that reads the feature
// gates when the framework instantiates the plugin, not when the registry is
// built: main builds the registry before cobra parses --feature-gates, so
// reading them eagerly would silently ignore the flag.
func withGates(f featureFactory) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return f(ctx, args, h, plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
	}
}

package testutil

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodename"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
)

// UpstreamPlugin builds the in-tree plugin called name (the Replaces of a
// pkg/plugins.Set() row) the way kube-scheduler's config loader would hand it
// args: the versioned args (nil means none configured) defaulted and
// converted to the internal type. It is the upstream side of every
// ours-vs-upstream comparison that needs no per-scenario args handling.
func UpstreamPlugin(ctx context.Context, name string, versionedArgs runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	switch name {
	case nodename.Name:
		return nodename.New(ctx, nil, h, fts)
	case tainttoleration.Name:
		return tainttoleration.New(ctx, nil, h, fts)
	case nodeaffinity.Name:
		in, ok := versionedArgs.(*configv1.NodeAffinityArgs)
		if versionedArgs != nil && !ok {
			return nil, fmt.Errorf("testutil.UpstreamPlugin: %s takes *v1.NodeAffinityArgs, got %T", name, versionedArgs)
		}
		if in == nil {
			in = &configv1.NodeAffinityArgs{}
		}
		out := &config.NodeAffinityArgs{}
		if err := internalArgs(in.DeepCopy(), out); err != nil {
			return nil, err
		}
		return nodeaffinity.New(ctx, out, h, fts)
	case interpodaffinity.Name:
		in, ok := versionedArgs.(*configv1.InterPodAffinityArgs)
		if versionedArgs != nil && !ok {
			return nil, fmt.Errorf("testutil.UpstreamPlugin: %s takes *v1.InterPodAffinityArgs, got %T", name, versionedArgs)
		}
		if in == nil {
			in = &configv1.InterPodAffinityArgs{}
		}
		out := &config.InterPodAffinityArgs{}
		if err := internalArgs(in.DeepCopy(), out); err != nil {
			return nil, err
		}
		return interpodaffinity.New(ctx, out, h, fts)
	}
	return nil, fmt.Errorf("testutil.UpstreamPlugin: no in-tree plugin %q: add it here when pkg/plugins.Set() grows", name)
}

// internalArgs defaults in and converts it into out, as the config loader does.
func internalArgs(in, out runtime.Object) error {
	scheme.Scheme.Default(in)
	if err := scheme.Scheme.Convert(in, out, nil); err != nil {
		return fmt.Errorf("converting %T: %w", in, err)
	}
	return nil
}

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
		args, err := InternalNodeAffinityArgs(in)
		if err != nil {
			return nil, err
		}
		return nodeaffinity.New(ctx, args, h, fts)
	case interpodaffinity.Name:
		in, ok := versionedArgs.(*configv1.InterPodAffinityArgs)
		if versionedArgs != nil && !ok {
			return nil, fmt.Errorf("testutil.UpstreamPlugin: %s takes *v1.InterPodAffinityArgs, got %T", name, versionedArgs)
		}
		args, err := InternalInterPodAffinityArgs(in)
		if err != nil {
			return nil, err
		}
		return interpodaffinity.New(ctx, args, h, fts)
	}
	return nil, fmt.Errorf("testutil.UpstreamPlugin: no in-tree plugin %q: add it here when pkg/plugins.Set() grows", name)
}

// InternalNodeAffinityArgs is in (nil: none configured) defaulted and
// converted to the internal type upstream's NodeAffinity takes, as the
// config loader does. in is not modified.
func InternalNodeAffinityArgs(in *configv1.NodeAffinityArgs) (*config.NodeAffinityArgs, error) {
	if in == nil {
		in = &configv1.NodeAffinityArgs{}
	}
	out := &config.NodeAffinityArgs{}
	return out, internalArgs(in.DeepCopy(), out)
}

// InternalInterPodAffinityArgs is InternalNodeAffinityArgs for InterPodAffinity.
func InternalInterPodAffinityArgs(in *configv1.InterPodAffinityArgs) (*config.InterPodAffinityArgs, error) {
	if in == nil {
		in = &configv1.InterPodAffinityArgs{}
	}
	out := &config.InterPodAffinityArgs{}
	return out, internalArgs(in.DeepCopy(), out)
}

// internalArgs defaults in and converts it into out.
func internalArgs(in, out runtime.Object) error {
	scheme.Scheme.Default(in)
	if err := scheme.Scheme.Convert(in, out, nil); err != nil {
		return fmt.Errorf("converting %T: %w", in, err)
	}
	return nil
}

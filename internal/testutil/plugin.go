package testutil

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// PluginFactory is the factory signature every plugin of ours exports as New.
type PluginFactory func(ctx context.Context, args runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error)

// NewPlugin builds a plugin through its public factory, without a framework
// handle, and returns it as its concrete type P (e.g. *nodename.NodeName).
// args is what kube-scheduler would pass: nil, or RawArgs/ArgsOf. Plugins
// that need a handle (informers, snapshot) are set up with the upstream
// plugin testing helpers instead.
func NewPlugin[P fwk.Plugin](t testing.TB, factory PluginFactory, args runtime.Object, fts feature.Features) P {
	t.Helper()
	p, err := factory(context.Background(), args, nil, fts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	typed, ok := p.(P)
	if !ok {
		t.Fatalf("New returned %T, want %T", p, typed)
	}
	return typed
}

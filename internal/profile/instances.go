package profile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Instances remembers the plugin each factory of a registry built. A built
// framework only runs its plugins all together (and stops at the first
// failure); tools that ask one plugin on its own (explain, the enforcer's
// judge) call the instance the framework built, with its handle and args.
type Instances struct {
	mu sync.Mutex
	m  map[string]fwk.Plugin
}

// Record wraps every factory of reg, in place, to remember what it builds.
func Record(reg frameworkruntime.Registry) *Instances {
	in := &Instances{m: map[string]fwk.Plugin{}}
	for name, f := range reg {
		reg[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := f(ctx, args, h)
			if err == nil {
				in.mu.Lock()
				in.m[name] = p
				in.mu.Unlock()
			}
			return p, err
		}
	}
	return in
}

// Get returns the instance built under name, or nil.
func (in *Instances) Get(name string) fwk.Plugin {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.m[name]
}

// All returns every instance by name, once the framework is built.
func (in *Instances) All() map[string]fwk.Plugin {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.m
}

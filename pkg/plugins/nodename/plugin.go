// Package nodename implements PlacementNodeName, our re-implementation of
// kube-scheduler's in-tree NodeName plugin (k8s.io/kubernetes v1.37.2): a pod
// that names a node in spec.nodeName may only be placed on that node. The
// contract is docs/behavior.md §4.
package nodename

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
)

const (
	// Name is the name the plugin is registered under. The in-tree name
	// "NodeName" is taken by kube-scheduler's own registry.
	Name = "PlacementNodeName"

	// errReason is the Filter reason for a node other than spec.nodeName. It
	// is upstream's text verbatim: users and tooling match on it.
	errReason = "node(s) didn't match the requested node name"
)

// NodeName restricts a pod that sets spec.nodeName to that node. It is
// stateless.
type NodeName struct{}

var (
	_ fwk.FilterPlugin      = &NodeName{}
	_ fwk.EnqueueExtensions = &NodeName{}
	_ fwk.SignPlugin        = &NodeName{}
)

// New builds the plugin. It takes no args: a pluginConfig entry with any is
// refused (upstream ignores them; a user who wrote some expects an effect).
// The feature set is deliberately unused: unlike NodeAffinity, upstream's
// NodeName ignores the deferred-resize gate, because narrowing to
// spec.nodeName is exactly what a deferred-resize pod (already bound) needs.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle, _ feature.Features) (fwk.Plugin, error) {
	if err := pluginargs.DecodeNone(obj); err != nil {
		return nil, err
	}
	return &NodeName{}, nil
}

// Name returns the registered plugin name.
func (pl *NodeName) Name() string { return Name }

// Package tainttoleration implements PlacementTaintToleration, our
// re-implementation of kube-scheduler's in-tree TaintToleration plugin
// (v1.37.2). It must produce the same statuses, scores, queueing hints and
// signatures as upstream; see docs/behavior.md §5.
package tainttoleration

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
)

const (
	// Name is the name under which the plugin is registered. The in-tree name
	// "TaintToleration" is taken by kube-scheduler's own registry.
	Name = "PlacementTaintToleration"
)

// TaintToleration keeps pods off nodes whose NoSchedule/NoExecute taints they
// do not tolerate and prefers nodes with fewer untolerated PreferNoSchedule
// taints.
type TaintToleration struct {
	// comparisonOperators enables the Gt/Lt toleration operators
	// (gate TaintTolerationComparisonOperators).
	comparisonOperators bool
	// skipDeferredResize makes PreFilter Skip and Filter pass for pods whose
	// in-place resize is deferred
	// (gate InPlacePodVerticalScalingSchedulerPreemption).
	skipDeferredResize bool
	// noTolerations is the PreScore state of a pod with no toleration that
	// can match a PreferNoSchedule taint, shared by every such cycle (the
	// state is read-only; Clone returns it).
	noTolerations *preScoreState
}

var (
	_ fwk.FilterPlugin      = &TaintToleration{}
	_ fwk.PreScorePlugin    = &TaintToleration{}
	_ fwk.ScorePlugin       = &TaintToleration{}
	_ fwk.ScoreExtensions   = &TaintToleration{}
	_ fwk.EnqueueExtensions = &TaintToleration{}
	_ fwk.SignPlugin        = &TaintToleration{}
)

// New builds the plugin. It takes no args: a pluginConfig entry with any is
// refused (upstream ignores them; a user who wrote some expects an effect).
func New(_ context.Context, obj runtime.Object, _ fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	if err := pluginargs.DecodeNone(obj); err != nil {
		return nil, err
	}
	return &TaintToleration{
		comparisonOperators: fts.EnableTaintTolerationComparisonOperators,
		skipDeferredResize:  k8sline.SkipsDeferredResize(fts),
		noTolerations:       &preScoreState{},
	}, nil
}

// Name returns the registered plugin name.
func (pl *TaintToleration) Name() string { return Name }

// resizeDeferred reports whether the pod is a deferred in-place resize that
// the scheduler is evaluating for preemption only; taints do not apply to it
// because it is already bound.
func (pl *TaintToleration) resizeDeferred(pod *v1.Pod) bool {
	return pl.skipDeferredResize && resource.IsPodResizeDeferred(pod)
}

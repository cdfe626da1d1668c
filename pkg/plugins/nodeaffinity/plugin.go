// Package nodeaffinity implements PlacementNodeAffinity, our re-implementation
// of kube-scheduler's in-tree NodeAffinity plugin (k8s.io/kubernetes v1.37.2).
//
// It filters nodes by the pod's spec.nodeSelector and required node affinity,
// plus a scheduler-enforced "added" affinity from the plugin args, and scores
// them by the weights of the matching preferred terms. Statuses, Skip
// decisions, PreFilterResult, scores and queueing hints are those of upstream.
// Upstream matches terms with k8s.io/component-helpers/scheduling/corev1/
// nodeaffinity, which allocates on every node; ours parses each term once
// into apimachinery label requirements with component-helpers' rules
// (matching.go, checked against component-helpers by matching_test.go and
// the equivalence suite) and matches without allocating. Error texts (a bad
// preferred term in PreScore, bad args) still come from component-helpers.
// The contract is docs/behavior.md §6.
package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

const (
	// Name is the name the plugin is registered under. The in-tree name
	// "NodeAffinity" is taken by kube-scheduler's own registry.
	Name = "PlacementNodeAffinity"

	// errReasonPod is the Filter reason when the pod's nodeSelector or required
	// node affinity rejects a node. The reason strings are upstream's
	// verbatim: they surface in events and FitError messages.
	errReasonPod = "node(s) didn't match Pod's node affinity/selector"

	// errReasonEnforced is the Filter reason when the args' addedAffinity
	// rejects a node.
	errReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"

	// errReasonConflict is the PreFilter reason when the pod's required terms
	// pin it to metadata.name sets with an empty union.
	errReasonConflict = "pod affinity terms conflict"

	// CycleState keys: upstream's, per the policy in package cyclestate.
	preFilterStateKey fwk.StateKey = "PreFilterNodeAffinity"
	preScoreStateKey  fwk.StateKey = "PreScoreNodeAffinity"
)

// NodeAffinity is the plugin. It is immutable after New, so one instance is
// safely shared by the parallel Filter/Score calls.
type NodeAffinity struct {
	// addedNodeSelector is the args' addedAffinity required selector; nil
	// when the args set none (every node passes).
	addedNodeSelector *requiredSelector
	// addedPrefSchedTerms is the args' addedAffinity preferred terms; nil
	// when the args list none. Non-nil but empty (all weights 0) is kept
	// distinct because it disables PreScore's Skip, as upstream.
	addedPrefSchedTerms *preferredTerms
	// skipDeferredResize mirrors the InPlacePodVerticalScalingSchedulerPreemption
	// gate: pods whose in-place resize is deferred are already bound, so
	// PreFilter Skips them and Filter passes them.
	skipDeferredResize bool
	// addedRequiredTerms are the args' addedAffinity required terms as
	// written, kept only so ExplainFilter can name the one that failed.
	addedRequiredTerms []v1.NodeSelectorTerm
}

var (
	_ fwk.PreFilterPlugin   = &NodeAffinity{}
	_ fwk.FilterPlugin      = &NodeAffinity{}
	_ fwk.PreScorePlugin    = &NodeAffinity{}
	_ fwk.ScorePlugin       = &NodeAffinity{}
	_ fwk.ScoreExtensions   = &NodeAffinity{}
	_ fwk.EnqueueExtensions = &NodeAffinity{}
	_ fwk.SignPlugin        = &NodeAffinity{}
)

// New builds the plugin from its pluginConfig args (a *runtime.Unknown, or nil
// for none). Invalid args fail construction, so a bad profile fails at
// start-up rather than at scheduling time.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	args, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	added, err := compileAddedAffinity(args)
	if err != nil {
		return nil, err
	}
	var addedTerms []v1.NodeSelectorTerm
	if a := args.AddedAffinity; a != nil && a.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		addedTerms = a.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	return &NodeAffinity{
		addedRequiredTerms:  addedTerms,
		addedNodeSelector:   added.required,
		addedPrefSchedTerms: added.preferred,
		skipDeferredResize:  k8sline.SkipsDeferredResize(fts),
	}, nil
}

// Name returns the registered plugin name.
func (pl *NodeAffinity) Name() string { return Name }

// resizeDeferred reports whether pod is exempt from this plugin because
// the gate is on and its in-place resize is deferred: such a pod is already
// bound, and re-checking affinity against its own node must not fail it.
func (pl *NodeAffinity) resizeDeferred(pod *v1.Pod) bool {
	return pl.skipDeferredResize && resource.IsPodResizeDeferred(pod)
}

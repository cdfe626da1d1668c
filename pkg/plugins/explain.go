package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// Cause is one concrete reason a plugin rejected a node (see package
// explanation, which the plugin packages can import without a cycle).
type Cause = explanation.Cause

// FilterExplainer is optionally implemented by our filter plugins. Tooling
// (kubectl placement explain) calls it after Filter rejected a node, with the
// same cycle state, to learn exactly which term, taint or existing pod
// decided. The scheduler never calls it: Filter does not compute or keep
// anything for it, so the scheduling path pays nothing.
type FilterExplainer interface {
	fwk.FilterPlugin
	// ExplainFilter returns the causes of the rejection of nodeInfo, every
	// one of them, not only the first Filter stopped at. It may return nil
	// when the node is not rejected or the plugin cannot say more than its
	// Filter status.
	ExplainFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []Cause
}

// Each of our filter plugins explains its rejections.
var (
	_ FilterExplainer = &nodename.NodeName{}
	_ FilterExplainer = &tainttoleration.TaintToleration{}
	_ FilterExplainer = &nodeaffinity.NodeAffinity{}
	_ FilterExplainer = &interpodaffinity.InterPodAffinity{}
)

// Package explanation holds the value our plugins return when asked why
// Filter rejected a node. It is a leaf package so that the plugin packages
// can return it without importing pkg/plugins (which imports them).
package explanation

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
)

// FilterExplainer is optionally implemented by our filter plugins. Tooling
// (kubectl placement explain, the PlacementDiagnosis plugin) calls it after
// Filter rejected a node, with the same cycle state, to learn exactly which
// term, taint or existing pod decided. Filter does not compute or keep
// anything for it, so scheduling a pod that fits pays nothing.
type FilterExplainer interface {
	fwk.FilterPlugin
	// ExplainFilter returns the causes of the rejection of nodeInfo, every
	// one of them, not only the first Filter stopped at. It may return nil
	// when the node is not rejected or the plugin cannot say more than its
	// Filter status.
	ExplainFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []Cause
}

// Cause is one concrete reason a plugin rejected a node.
type Cause struct {
	// Message names the term, taint or pod that decided and what the node
	// (or the existing pod) actually has, in one line.
	Message string `json:"message"`
	// Fix, when set, is one change to the incoming pod that removes this
	// cause, phrased so that "<Fix> would make N more nodes feasible" reads
	// well (e.g. "tolerating dedicated=gpu:NoSchedule"). Empty when there is
	// no single obvious change.
	Fix string `json:"fix,omitempty"`
}

// Requirement renders a node selector requirement as "key Op [v1 v2]".
func Requirement(r v1.NodeSelectorRequirement) string {
	if len(r.Values) == 0 {
		return fmt.Sprintf("%s %s", r.Key, r.Operator)
	}
	return fmt.Sprintf("%s %s [%s]", r.Key, r.Operator, strings.Join(r.Values, " "))
}

// NodeLabel renders what a node has for key: "key=value", or "no label key".
func NodeLabel(node *v1.Node, key string) string {
	if v, ok := node.Labels[key]; ok {
		return fmt.Sprintf("%s=%s", key, v)
	}
	return "no label " + key
}

// Selector renders a label selector the way kubectl does, "<everything>" for
// an empty one.
func Selector(s labels.Selector) string {
	if s == nil || s.Empty() {
		return "<everything>"
	}
	return s.String()
}

// Package explanation holds the value our plugins return when asked why
// Filter rejected a node. It is a leaf package so that the plugin packages
// can return it without importing pkg/plugins (which imports them).
package explanation

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

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

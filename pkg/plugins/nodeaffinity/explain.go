package nodeaffinity

import (
	"context"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// ExplainFilter names, for a node Filter rejects, the added-affinity term,
// nodeSelector entry or required node affinity expression that failed and
// the node's actual label. Only tooling calls it; Filter is unchanged.
func (pl *NodeAffinity) ExplainFilter(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []explanation.Cause {
	node := nodeInfo.Node()
	if node == nil || pl.resizeDeferred(pod) {
		return nil
	}
	var out []explanation.Cause
	if pl.addedNodeSelector != nil && !pl.addedNodeSelector.match(node) {
		for _, f := range failedTerms(pl.addedRequiredTerms, node) {
			out = append(out, explanation.Cause{Message: "scheduler-enforced addedAffinity (profile args): " + f.String()})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		want := pod.Spec.NodeSelector[k]
		if got, ok := node.Labels[k]; !ok || got != want {
			out = append(out, explanation.Cause{
				Message: fmt.Sprintf("nodeSelector %s=%s: node has %s", k, want, explanation.NodeLabel(node, k)),
				Fix:     fmt.Sprintf("removing nodeSelector %s=%s", k, want),
			})
		}
	}
	if req := requiredTerms(pod); req != nil {
		if sel, err := nodeaffinity.NewNodeSelector(req); err != nil || !sel.Match(node) {
			failed := failedTerms(req.NodeSelectorTerms, node)
			for _, f := range failed {
				c := explanation.Cause{Message: "required node affinity: " + f.String()}
				// Terms are ORed: dropping one expression only admits the
				// node when it is the only thing failing.
				if len(failed) == 1 && len(req.NodeSelectorTerms) == 1 && f.what != "" {
					c.Fix = "dropping required node affinity " + f.what
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// failure is one requirement that does not match a node.
type failure struct {
	// what names the requirement ("term 0 matchExpressions[1] (zone In [a])");
	// empty for a term that cannot match any node at all.
	what string
	// got is what the node has instead, or why nothing matches.
	got string
}

func (f failure) String() string {
	if f.what == "" {
		return f.got
	}
	return f.what + ": " + f.got
}

// failedTerms explains why each of the ORed terms fails on node: for every
// term, every requirement that does not match, with the node's value.
// Requirements are evaluated one at a time through the same helper Filter
// uses, so Gt/Lt parsing and field selectors behave identically.
func failedTerms(terms []v1.NodeSelectorTerm, node *v1.Node) []failure {
	if len(terms) == 0 {
		return []failure{{got: "no nodeSelectorTerms: matches no node"}}
	}
	var out []failure
	for i, t := range terms {
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			out = append(out, failure{got: fmt.Sprintf("term %d is empty: matches no node", i)})
			continue
		}
		for j, r := range t.MatchExpressions {
			if !matchOne(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{r}}, node) {
				out = append(out, failure{
					what: fmt.Sprintf("term %d matchExpressions[%d] (%s)", i, j, explanation.Requirement(r)),
					got:  "node has " + explanation.NodeLabel(node, r.Key),
				})
			}
		}
		for j, r := range t.MatchFields {
			if !matchOne(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{r}}, node) {
				got := "node is " + node.Name
				if r.Key != metav1.ObjectNameField {
					got = "unsupported field " + r.Key
				}
				out = append(out, failure{what: fmt.Sprintf("term %d matchFields[%d] (%s)", i, j, explanation.Requirement(r)), got: got})
			}
		}
	}
	return out
}

// matchOne evaluates a single-requirement term; a parse error is "no match",
// as in Filter.
func matchOne(t v1.NodeSelectorTerm, node *v1.Node) bool {
	sel, err := nodeaffinity.NewNodeSelector(&v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{t}})
	return err == nil && sel.Match(node)
}

// ErrReasonEnforced is the Filter reason for the profile's addedAffinity:
// tools that explain with an instance built without the profile's args
// recognise it and keep the reason rather than guess the term.
const ErrReasonEnforced = errReasonEnforced

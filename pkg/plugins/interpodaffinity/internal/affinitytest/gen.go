// Package affinitytest builds pods and nodes for the tests of the
// PlacementInterPodAffinity plugin and of its speed machinery: fixed ones
// (helpers.go) and random ones (Gen). Imported by tests only.
package affinitytest

import (
	"fmt"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Gen draws random pods, labels and terms over a few keys and
// values, so that selectors often do and often do not match.
type Gen struct{ R *rand.Rand }

var (
	summaryKeys   = []string{"app", "tier", "env", "hash"}
	summaryValues = []string{"a", "b", "c", "d", "e"}
)

func (g Gen) P(pct int) bool { return g.R.IntN(100) < pct }

func (g Gen) Pick(s []string) string { return s[g.R.IntN(len(s))] }

func (g Gen) Values() []string {
	vs := []string{g.Pick(summaryValues)}
	for g.P(40) {
		vs = append(vs, g.Pick(summaryValues))
	}
	return vs
}

// Selector covers every shape the summaries treat apart: nil (matches
// nothing), {} (everything), matchLabels, In with one and several values,
// Exists, and NotIn and DoesNotExist alone (no positive requirement).
func (g Gen) Selector() *metav1.LabelSelector {
	switch x := g.R.IntN(100); {
	case x < 6:
		return nil
	case x < 12:
		return &metav1.LabelSelector{}
	case x < 20:
		// Negative requirements only.
		sel := &metav1.LabelSelector{}
		for range 1 + g.R.IntN(2) {
			if g.P(50) {
				sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(g.Pick(summaryKeys), metav1.LabelSelectorOpNotIn, g.Values()...))
			} else {
				sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(g.Pick(summaryKeys), metav1.LabelSelectorOpDoesNotExist))
			}
		}
		return sel
	}
	sel := &metav1.LabelSelector{}
	if g.P(50) {
		sel.MatchLabels = map[string]string{g.Pick(summaryKeys): g.Pick(summaryValues)}
	}
	for range g.R.IntN(3) {
		k := g.Pick(summaryKeys)
		switch x := g.R.IntN(4); x {
		case 0:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpIn, g.Values()...))
		case 1:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpNotIn, g.Values()...))
		case 2:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpExists))
		default:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpDoesNotExist))
		}
	}
	if sel.MatchLabels == nil && len(sel.MatchExpressions) == 0 {
		sel.MatchLabels = map[string]string{g.Pick(summaryKeys): g.Pick(summaryValues)}
	}
	return sel
}

func (g Gen) Term() v1.PodAffinityTerm {
	key := Zone
	if g.P(50) {
		key = Host
	}
	return tu.AffinityTerm(key, g.Selector())
}

// Pod is a pod with random labels and, sometimes, terms of every kind.
func (g Gen) Pod(name, node string) *v1.Pod {
	w := Placed("default", name, node)
	if node == "" {
		w = Incoming("default")
	}
	for _, k := range summaryKeys {
		if g.P(45) {
			w.Label(k, g.Pick(summaryValues))
		}
	}
	for range g.R.IntN(2) {
		w.RequiredPodAffinity(g.Term())
	}
	for range g.R.IntN(2) {
		w.RequiredPodAntiAffinity(g.Term())
	}
	for range g.R.IntN(2) {
		w.PreferredPodAffinity(tu.Weighted(int32(1+g.R.IntN(10)), g.Term()))
	}
	for range g.R.IntN(2) {
		w.PreferredPodAntiAffinity(tu.Weighted(int32(1+g.R.IntN(10)), g.Term()))
	}
	return w.Obj()
}

// Node is a node named name holding pods random pods.
func (g Gen) Node(name string, pods int) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(tu.MakeNode(name).Label(Host, name).Label(Zone, g.Pick([]string{"z1", "z2"})).Obj())
	for j := range pods {
		ni.AddPod(g.Pod(fmt.Sprintf("%s-p%d", name, j), name))
	}
	return ni
}

// Nodes are n nodes holding up to 3 random pods each.
func (g Gen) Nodes(n int) []fwk.NodeInfo {
	var nodes []fwk.NodeInfo
	for i := range n {
		nodes = append(nodes, g.Node(fmt.Sprintf("n%d", i), g.R.IntN(4)))
	}
	return nodes
}

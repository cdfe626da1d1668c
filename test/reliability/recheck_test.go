package reliability

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// The final-cluster re-check must be able to fail: bindings that break
// each kind of constraint the streams use are caught, by the plugin that
// forbids them, and legal ones pass. No scheduler or apiserver involved.
func TestRecheckCatchesForbiddenBindings(t *testing.T) {
	const ns = "recheck"
	nodes := fleet(ns, 8) // n007 is the tainted, dedicated one
	bind := func(p *v1.Pod, node string) *v1.Pod { p.Spec.NodeName = ns + "-" + node; return p }
	anti := func(i int) *v1.Pod { return mixedPod(ns, 3+6*i, len(nodes)) } // kind 3, one group
	pods := []*v1.Pod{
		bind(mixedPod(ns, 0, len(nodes)), "n000"), // no constraint: fine
		bind(mixedPod(ns, 2, len(nodes)), "n000"), // nodeSelector dedicated=infra on an ordinary node
		bind(mixedPod(ns, 6, len(nodes)), "n007"), // no toleration on the tainted node
		bind(mixedPod(ns, 1, len(nodes)), "n001"), // disk In ssd on an hdd node
		bind(anti(0), "n002"),                     // two of one anti-affinity group on one node
		bind(anti(1), "n002"),
		bind(anti(2), "n004"), // the group's third, alone: fine
	}
	want := map[string]string{
		pods[0].Name: "",
		pods[1].Name: "PlacementNodeAffinity",
		pods[2].Name: "PlacementTaintToleration",
		pods[3].Name: "PlacementNodeAffinity",
		pods[4].Name: "PlacementInterPodAffinity",
		pods[5].Name: "PlacementInterPodAffinity",
		pods[6].Name: "",
	}
	c := &explain.Cluster{Nodes: nodes, Pods: pods, Namespaces: []*v1.Namespace{testutil.MakeNamespace(ns, nil)}}
	r := newRechecker(t)
	for _, p := range pods {
		got := r.check(context.Background(), p, c)
		switch w := want[p.Name]; {
		case w == "" && got != "":
			t.Errorf("%s on %s: rejected (%s), want accepted", p.Name, p.Spec.NodeName, got)
		case w != "" && !strings.Contains(got, w):
			t.Errorf("%s on %s: %q, want a rejection by %s", p.Name, p.Spec.NodeName, got, w)
		}
	}
}

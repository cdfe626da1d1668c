package pluginbench

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// TestShapes checks the benchmarks' setup, quickly (it runs in make test):
// each workload loads from upstream's files at both sizes with the objects
// upstream's workload creates, the pods the default scheduler would have
// placed without violating their own required anti-affinity; and, on the
// 500-node size, the Filter/Score tables the benchmarks use agree with what
// upstream's plugins (and ours) decide, and a step changes exactly one node.
func TestShapes(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.Name, func(t *testing.T) {
			for _, nodes := range []int{500, 5000} {
				s := loadShape(t, w, nodes)
				checkShape(t, s, nodes)
			}
			c := newCluster(t, loadShape(t, w, 500))
			for _, name := range []string{ipa, na, tt, nn} {
				for _, im := range impls(t, name) {
					checkReaches(t, c, w, name, im)
				}
			}
			checkStep(t, c)
		})
	}
}

func checkShape(t *testing.T, s *Shape, nodes int) {
	t.Helper()
	where := fmt.Sprintf("%s/%s", s.Case, s.Workload)
	if len(s.Nodes) != nodes {
		t.Errorf("%s: %d nodes, want %d", where, len(s.Nodes), nodes)
	}
	if s.InitPods == 0 || s.MeasurePods == 0 || len(s.Pods) != s.InitPods+s.MeasurePods/2 {
		t.Errorf("%s: %d pods bound, want init %d + half of measured %d", where, len(s.Pods), s.InitPods, s.MeasurePods)
	}
	names := map[string]*v1.Node{}
	for _, n := range s.Nodes {
		if n.Labels[v1.LabelHostname] != n.Name || names[n.Name] != nil {
			t.Fatalf("%s: node %s: hostname label %q, or name not unique", where, n.Name, n.Labels[v1.LabelHostname])
		}
		names[n.Name] = n
	}
	nss := map[string]bool{}
	for _, ns := range s.Namespaces {
		nss[ns.Name] = true
	}
	// Required anti-affinity: the default scheduler never placed two pods
	// that repel each other on one node (hostname is the only key the
	// workloads use).
	seen := map[string]map[string]bool{}
	for _, p := range append(s.Pods, s.Incoming) {
		if !nss[p.Namespace] {
			t.Fatalf("%s: pod %s/%s in a namespace the shape does not create", where, p.Namespace, p.Name)
		}
		if p == s.Incoming {
			if p.Spec.NodeName != "" {
				t.Fatalf("%s: incoming pod is bound", where)
			}
			continue
		}
		if names[p.Spec.NodeName] == nil {
			t.Fatalf("%s: pod %s on unknown node %q", where, p.Name, p.Spec.NodeName)
		}
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			for k, v := range p.Labels {
				key := k + "=" + v
				if seen[p.Spec.NodeName][key] {
					t.Fatalf("%s: two pods labelled %s with required anti-affinity on %s", where, key, p.Spec.NodeName)
				}
				if seen[p.Spec.NodeName] == nil {
					seen[p.Spec.NodeName] = map[string]bool{}
				}
				seen[p.Spec.NodeName][key] = true
			}
		}
	}
}

// checkReaches: PreFilter Skips exactly when the workload's Filter table
// says the framework will not call Filter, PreScore likewise for Score.
func checkReaches(t *testing.T, c *cluster, w workload, name string, im impl) {
	t.Helper()
	pl := c.newPlugin(t, im)
	all := c.all(t)
	cs := framework.NewCycleState()
	st := preFilter(c.ctx, pl, cs, c.shape.Incoming, all)
	if got := st.IsSuccess(); got != w.Filter[name] {
		t.Errorf("%s %s: PreFilter = %q, but the workload table says Filter reached = %v", name, im.Name, tu.StatusString(st), w.Filter[name])
	}
	ps, ok := pl.(fwk.PreScorePlugin)
	if !ok {
		return
	}
	if st := ps.PreScore(c.ctx, cs, c.shape.Incoming, all); st.IsSuccess() != w.Score[name] {
		t.Errorf("%s %s: PreScore = %q, but the workload table says Score reached = %v", name, im.Name, tu.StatusString(st), w.Score[name])
	}
}

// checkStep: a step moves the generation of exactly one NodeInfo, and two
// steps leave the cluster's pods as they were.
func checkStep(t *testing.T, c *cluster) {
	t.Helper()
	gens := func() map[string]int64 {
		m := map[string]int64{}
		for _, ni := range c.all(t) {
			m[ni.Node().Name] = ni.GetGeneration()
		}
		return m
	}
	pods := func() int {
		n := 0
		for _, ni := range c.all(t) {
			n += len(ni.GetPods())
		}
		return n
	}
	before, podsBefore := gens(), pods()
	for i := range 2 {
		prev := gens()
		c.step(t)
		changed := 0
		for n, g := range gens() {
			if prev[n] != g {
				changed++
			}
		}
		if changed != 1 {
			t.Errorf("step %d changed %d nodes' generation, want 1", i, changed)
		}
	}
	if len(gens()) != len(before) || pods() != podsBefore {
		t.Errorf("after two steps: %d nodes, %d pods; want %d, %d", len(gens()), pods(), len(before), podsBefore)
	}
}

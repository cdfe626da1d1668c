//go:build !k8s1.35

// Pod-group cycles exist from Kubernetes 1.36 on.

package topology

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// TestTopologyTablePodGroupCycle: a pod-group cycle gets no view, even
// from a primed table.
func TestTopologyTablePodGroupCycle(t *testing.T) {
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1")}
	on := Table{primed: true}
	group := framework.NewCycleState()
	group.SetPodGroupSchedulingCycle(framework.NewCycleState())
	called := false
	if v := on.Sync(group, nodes, []string{at.Zone}, func(g []int64, v *View) { called = g == nil && v == nil }); v != nil || !called {
		t.Errorf("pod-group cycle: view %v, use called with nil: %v", v, called)
	}
}

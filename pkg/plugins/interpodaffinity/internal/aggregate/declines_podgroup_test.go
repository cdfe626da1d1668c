//go:build !k8s1.35

// Pod-group cycles exist from Kubernetes 1.36 on.

package aggregate

import (
	"maps"
	"testing"

	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// TestSitsOutPodGroupCycles: a pod-group cycle assumes its members on
// the snapshot and keeps the nodes' generations, so the table answers
// none of its questions and records nothing of what it sees; once the
// members are forgotten, the table's records are right again.
func TestSitsOutPodGroupCycles(t *testing.T) {
	guard := at.Placed("default", "guard", "a").Label("app", "web").
		RequiredPodAntiAffinity(tu.AffinityTerm(at.Zone, at.Sel("app", "web"))).Obj()
	ni := at.ZoneNode("a", "z1")
	ni.AddPod(guard)
	nodes := []fwk.NodeInfo{ni}
	incoming := Incoming{Pod: at.Incoming("default").Label("app", "web").Obj()}
	aff := IncomingTerms{AntiAffinity: mustTerms(t, tu.AffinityTerm(at.Zone, at.Sel("app", "web")))}
	table := &Table{}
	if _, ok := table.ExistingAnti(framework.NewCycleState(), nodes, incoming); !ok {
		t.Fatal("a plain cycle was not answered")
	}
	if _, ok := table.Incoming(framework.NewCycleState(), nodes, nil, aff); !ok {
		t.Fatal("a plain cycle was not answered")
	}

	// As Snapshot.AssumePod does: one more pod, same generation.
	gen := ni.Generation
	member := at.Placed("default", "member", "a").Label("app", "web").
		RequiredPodAntiAffinity(tu.AffinityTerm(at.Zone, at.Sel("app", "web"))).Obj()
	ni.AddPod(member)
	ni.Generation = gen
	group := framework.NewCycleState()
	group.SetPodGroupSchedulingCycle(framework.NewCycleState())
	if _, ok := table.ExistingAnti(group, nodes, incoming); ok {
		t.Error("ExistingAnti answered in a pod-group cycle")
	}
	if _, ok := table.Incoming(group, nodes, nil, aff); ok {
		t.Error("Incoming answered in a pod-group cycle")
	}
	if _, ok := table.Score(group, nodes, nil, ScoreQuery{Pod: incoming.Pod}); ok {
		t.Error("Score answered in a pod-group cycle")
	}
	// As Snapshot.ForgetPod does.
	if err := ni.RemovePod(klog.Background(), member); err != nil {
		t.Fatal(err)
	}
	ni.Generation = gen
	sum, ok := table.ExistingAnti(framework.NewCycleState(), nodes, incoming)
	if want := map[topology.Pair]int64{{Key: at.Zone, Value: "z1"}: 1}; !ok || !maps.Equal(sum.Counts.ToMap(), want) {
		t.Errorf("after the group: %v (answered: %v), want %v", sum, ok, want)
	}
	in, ok := table.Incoming(framework.NewCycleState(), nodes, nil, aff)
	if want := map[topology.Pair]int64{{Key: at.Zone, Value: "z1"}: 1}; !ok || !maps.Equal(in.AntiAffinity.ToMap(), want) {
		t.Errorf("after the group: %v (answered: %v), want %v", in, ok, want)
	}
}

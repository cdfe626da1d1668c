package aggregate

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// TestDeclinesListsWithoutNames: a list the table cannot record by node
// name (a name twice, a NodeInfo without a node) is not answered, and
// the next list is answered right.
func TestDeclinesListsWithoutNames(t *testing.T) {
	guard := at.Placed("default", "guard", "a").Label("app", "web").
		RequiredPodAntiAffinity(tu.AffinityTerm(at.Zone, at.Sel("app", "web"))).Obj()
	a := at.ZoneNode("a", "z1")
	a.AddPod(guard)
	b := at.ZoneNode("b", "z2")
	incoming := Incoming{Pod: at.Incoming("default").Label("app", "web").Obj()}
	table := &Table{}
	if _, ok := table.ExistingAnti(framework.NewCycleState(), []fwk.NodeInfo{a, a}, incoming); ok {
		t.Error("a list naming a node twice was answered")
	}
	if _, ok := table.ExistingAnti(framework.NewCycleState(), []fwk.NodeInfo{a, framework.NewNodeInfo()}, incoming); ok {
		t.Error("a list with a NodeInfo without a node was answered")
	}
	sum, ok := table.ExistingAnti(framework.NewCycleState(), []fwk.NodeInfo{b, a}, incoming)
	if want := map[topology.Pair]int64{{Key: at.Zone, Value: "z1"}: 1}; !ok || !maps.Equal(sum.Counts.ToMap(), want) {
		t.Errorf("then: %v (answered: %v), want %v", sum, ok, want)
	}
}

// mustTerms parses required terms as an incoming pod's.
func mustTerms(t *testing.T, terms ...v1.PodAffinityTerm) []fwk.AffinityTerm {
	t.Helper()
	pi, err := framework.NewPodInfo(at.Incoming("default").RequiredPodAntiAffinity(terms...).Obj())
	if err != nil {
		t.Fatal(err)
	}
	return pi.GetRequiredAntiAffinityTerms()
}

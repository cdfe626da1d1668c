package explain

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// TestPlacerReservesAcrossABatch: three pods leave node "old" for pool=a,
// where one node has room for two pods and another for none: the first two
// are promised the free slots, the third gets nothing, and no answer is
// ever the pod's own node.
func TestPlacerReservesAcrossABatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := profile.LoadConfig(manifests.SchedulerConfig(), "shipped config")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string, pods int64) *v1.Node {
		return tu.MakeNode(name).Label("pool", "a").Capacity("4", "8Gi", pods).Ready().Obj()
	}
	var pods []*v1.Pod
	for _, name := range []string{"p1", "p2", "p3"} {
		pods = append(pods, tu.MakePod("ns", name).UID("uid-"+name).Placement().NodeName("old").
			NodeSelector(map[string]string{"pool": "a"}).Request("100m", "100Mi").Obj())
	}
	c := &Cluster{
		Nodes: []*v1.Node{node("old", 10), node("roomy", 2), node("full", 0)},
		Pods:  pods,
	}
	p, err := NewPlacer(ctx, c, &cfg.Profiles[0])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pod := range pods {
		n, err := p.Place(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if want := []string{"roomy", "roomy", ""}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("placements %q, want %q", got, want)
	}
}

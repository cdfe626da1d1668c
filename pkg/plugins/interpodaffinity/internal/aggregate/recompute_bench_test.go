package aggregate

import (
	"fmt"
	"testing"

	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// packedPod is replica i of Deployment d: its own label set, a required
// hostname anti-affinity term and a preferred zone affinity term, both
// selecting its Deployment.
func packedPod(d, i int, node string) *framework.PodInfo {
	app := fmt.Sprint("web-", d)
	sel := at.Sel("app", app)
	pod := at.Placed("default", fmt.Sprint(app, "-", i), node).Label("app", app).
		RequiredPodAntiAffinity(tu.AffinityTerm(at.Host, sel)).
		PreferredPodAffinity(tu.Weighted(50, tu.AffinityTerm(at.Zone, sel))).Obj()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		panic(err)
	}
	return pi
}

// BenchmarkPackedNodeChanges measures what the sweeps cost when the
// node that changed holds many pods: 40 replicas of 4 Deployments packed
// on one node of 1000, as preferred hostname affinity packs them, and
// one pod bound to it and one removed between cycles, each cycle sweeping
// the classes (PreFilter's incoming counts), the holders of required
// anti-affinity (PreFilter's existing counts) and the scored terms
// (PreScore's).
//
//	go test ./pkg/plugins/interpodaffinity/internal/aggregate -run '^$' -bench PackedNodeChanges
func BenchmarkPackedNodeChanges(b *testing.B) {
	nodes := make([]fwk.NodeInfo, 1000)
	for i := range nodes {
		nodes[i] = at.ZoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%3))
	}
	packed := nodes[0].(*framework.NodeInfo)
	for i := range 40 {
		packed.AddPodInfo(packedPod(i%4, i, "n0"))
	}
	incoming := at.Incoming("default").Label("app", "web-0").Obj()
	ts := IncomingTerms{Affinity: []fwk.AffinityTerm{packedPod(0, -1, "").GetPreferredAffinityTerms()[0].AffinityTerm}}
	table := &Table{}
	table.score.scoring = true
	cycle := func() {
		cs := framework.NewCycleState()
		if _, ok := table.Incoming(cs, nodes, nil, ts); !ok {
			b.Fatal("no incoming counts")
		}
		if _, ok := table.ExistingAnti(cs, nodes, Incoming{Pod: incoming}); !ok {
			b.Fatal("no existing counts")
		}
		var swept bool
		table.reads.With(cs, nodes, func(gens []int64) { swept = table.score.sweep(nodes, gens, nil) })
		if !swept {
			b.Fatal("no scored terms")
		}
	}
	cycle()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		packed.AddPodInfo(packedPod(i%4, 1000+i, "n0"))
		cycle()
		if err := packed.RemovePod(klog.Background(), packed.GetPods()[i%40].GetPod()); err != nil {
			b.Fatal(err)
		}
		cycle()
	}
}

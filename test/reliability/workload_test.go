package reliability

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The fake fleet: plain Node objects (nothing here needs a kubelet: binding
// only needs the node to exist), in zones, half with ssd disks, every
// eighth one tainted for a dedicated pool.
const (
	zoneKey      = v1.LabelTopologyZone
	diskKey      = "disk"
	dedicatedKey = "dedicated"
	zones        = 4
)

// fleet returns n nodes for the test owning ns.
func fleet(ns string, n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range n {
		w := framework.SchedulableNode(ns, fmt.Sprintf("n%03d", i)).
			Label(zoneKey, fmt.Sprintf("z%d", i%zones)).
			Label(diskKey, map[bool]string{true: "ssd", false: "hdd"}[i%2 == 0])
		if dedicated(i) {
			w = w.Label(dedicatedKey, "infra").Taint(dedicatedKey, "infra", v1.TaintEffectNoSchedule)
		}
		nodes[i] = w.Obj()
	}
	return nodes
}

func dedicated(i int) bool { return i%8 == 7 }

// untainted counts fleet(ns, n)'s nodes without the dedicated taint.
func untainted(n int) int {
	c := 0
	for i := range n {
		if !dedicated(i) {
			c++
		}
	}
	return c
}

// mixedPod is pod i of a stream mixing every constraint our plugins decide,
// each kind one in six, all satisfiable on fleet(ns, nodes) at any moment
// (so every pod must end bound):
//
//	0 none
//	1 required node affinity (disk In ssd) and a preferred zone
//	2 a toleration of the dedicated taint and a nodeSelector for that pool
//	3 required pod anti-affinity per hostname within a group of at most
//	  half the untainted nodes
//	4 required pod affinity per zone within a group of 20, preferred
//	  anti-affinity per hostname
//	5 a toleration (Exists) of the dedicated taint and NotIn one zone
//
// Nothing is ever deleted while such a stream runs, so each constraint is
// static and can be re-checked on the final cluster.
func mixedPod(ns string, i, nodes int) *v1.Pod {
	kind := i % 6
	p := testutil.MakePod(ns, fmt.Sprintf("p-%05d", i)).Placement().Label("kind", fmt.Sprint(kind))
	switch kind {
	case 1:
		p.RequiredNodeTerms(testutil.Term(testutil.Expr(diskKey, v1.NodeSelectorOpIn, "ssd"))).
			PreferredNodeTerm(10, testutil.Term(testutil.Expr(zoneKey, v1.NodeSelectorOpIn, "z0")))
	case 2:
		p.Toleration(testutil.Tol(dedicatedKey, v1.TolerationOpEqual, "infra", v1.TaintEffectNoSchedule)).
			NodeSelector(map[string]string{dedicatedKey: "infra"})
	case 3:
		size := max(1, min(10, untainted(nodes)/2))
		g := fmt.Sprintf("a%d", i/6/size)
		p.Label("anti", g).RequiredPodAntiAffinity(testutil.AffinityTerm(v1.LabelHostname, testutil.Selector(map[string]string{"anti": g})))
	case 4:
		g := fmt.Sprintf("f%d", i/6/20)
		p.Label("aff", g).RequiredPodAffinity(testutil.AffinityTerm(zoneKey, testutil.Selector(map[string]string{"aff": g}))).
			PreferredPodAntiAffinity(testutil.Weighted(5, testutil.AffinityTerm(v1.LabelHostname, testutil.Selector(map[string]string{"aff": g}))))
	case 5:
		p.Toleration(testutil.Tol(dedicatedKey, v1.TolerationOpExists, "", "")).
			RequiredNodeTerms(testutil.Term(testutil.Expr(zoneKey, v1.NodeSelectorOpNotIn, fmt.Sprintf("z%d", zones-1))))
	}
	return p.Obj()
}

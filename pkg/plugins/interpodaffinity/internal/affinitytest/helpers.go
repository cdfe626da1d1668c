package affinitytest

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Topology keys used throughout the tests.
const (
	Zone = v1.LabelTopologyZone
	Rack = "example.com/rack"
	Host = v1.LabelHostname
)

// Sel is a selector of matchLabels given as key, value, key, value...
func Sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return tu.Selector(m)
}

// Placed builds an existing pod bound to node.
func Placed(ns, name, node string) *tu.PodWrapper {
	return tu.MakePod(ns, name).UID(ns + "/" + name).NodeName(node)
}

// Incoming builds the pod being scheduled.
func Incoming(ns string) *tu.PodWrapper {
	return tu.MakePod(ns, "incoming").UID("incoming")
}

// Generations are the nodes' generations as they are now, by position.
func Generations(nodes []fwk.NodeInfo) []int64 {
	out := make([]int64, len(nodes))
	for i, ni := range nodes {
		out[i] = ni.GetGeneration()
	}
	return out
}

// ZoneNode is a node in zone z holding pods of the given names.
func ZoneNode(name, z string, pods ...string) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(tu.MakeNode(name).Label(Zone, z).Obj())
	for _, p := range pods {
		ni.AddPod(Placed("default", p, name).Obj())
	}
	return ni
}

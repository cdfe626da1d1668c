package testutil

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// NodeInfo wraps node (and optionally pods already bound to it) in the
// framework's real NodeInfo, as the scheduler cache would.
func NodeInfo(node *v1.Node, pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

// NodeInfos wraps each node in a NodeInfo, keeping the order.
func NodeInfos(nodes ...*v1.Node) []fwk.NodeInfo {
	out := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = NodeInfo(n)
	}
	return out
}

// RawArgs wraps raw JSON the way kube-scheduler hands pluginConfig args to an
// out-of-tree plugin: as an undecoded *runtime.Unknown.
func RawArgs(rawJSON string) *runtime.Unknown {
	return &runtime.Unknown{Raw: []byte(rawJSON), ContentType: runtime.ContentTypeJSON}
}

// ArgsOf marshals a typed args struct (e.g. configv1.NodeAffinityArgs) to JSON
// and wraps it as RawArgs does, so tests exercise the real decoding path.
func ArgsOf(args any) *runtime.Unknown {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("testutil.ArgsOf: marshalling %T: %v", args, err))
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

package simulate

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// stateTaints are the taints that say what state a node is in rather than
// what it is for: the node lifecycle controller's condition taints and the
// cordon's (it keeps them in step with conditions and spec.unschedulable),
// the out-of-service taint an operator puts on a node that is shut down,
// and the cloud provider's until its controller has initialized the node.
// A new node that is Ready and schedulable carries none of them.
var stateTaints = []string{
	v1.TaintNodeNotReady,
	v1.TaintNodeUnreachable,
	v1.TaintNodeUnschedulable,
	v1.TaintNodeMemoryPressure,
	v1.TaintNodeDiskPressure,
	v1.TaintNodePIDPressure,
	v1.TaintNodeNetworkUnavailable,
	v1.TaintNodeOutOfService,
	cloudproviderapi.TaintExternalCloudProvider,
}

// copyNode is a new, empty node like n named name, as it is once it has
// joined and is Ready: n's labels (hostname its own), operator taints,
// capacity and images; no cordon, no state taint, the conditions of a
// healthy node, no volumes in use. It returns the taints it cleared.
func copyNode(n *v1.Node, name string) (*v1.Node, []v1.Taint) {
	cp := n.DeepCopy()
	cp.Name = name
	cp.UID = types.UID("simulate-node-" + name)
	cp.ResourceVersion = ""
	cp.Spec.Unschedulable = false
	cp.Spec.ProviderID = ""
	cp.Spec.PodCIDR, cp.Spec.PodCIDRs = "", nil
	if cp.Labels == nil {
		cp.Labels = map[string]string{}
	}
	cp.Labels[v1.LabelHostname] = name
	var cleared []v1.Taint
	cp.Spec.Taints = slices.DeleteFunc(cp.Spec.Taints, func(t v1.Taint) bool {
		if slices.Contains(stateTaints, t.Key) {
			cleared = append(cleared, t)
			return true
		}
		return false
	})
	cp.Status.Conditions = healthyConditions(n.Status.Conditions)
	cp.Status.VolumesInUse, cp.Status.VolumesAttached = nil, nil
	return cp, cleared
}

// healthyConditions are the conditions of a Ready node without pressure,
// of the types the kubelet reports (and NetworkUnavailable when the node
// had it, which network plugins and cloud providers set).
func healthyConditions(had []v1.NodeCondition) []v1.NodeCondition {
	out := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse},
		{Type: v1.NodeReady, Status: v1.ConditionTrue},
	}
	for _, c := range had {
		if c.Type == v1.NodeNetworkUnavailable {
			out = append(out, v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse})
		}
	}
	return out
}

// bindDaemonPods adds to c, bound and running, the pods the DaemonSet
// controller creates on each node named (those still in c): one for every
// DaemonSet of c whose pods should run there, as Workloads decides for a
// DaemonSet of -f. A new node gets them first, before anything else is
// placed, and they hold its room. It returns, per node, the DaemonSets
// that run a pod there.
func bindDaemonPods(c *explain.Cluster, nodes []string) (map[string][]string, error) {
	var sets []runtime.Object
	for _, o := range c.Others {
		if _, ok := o.(*appsv1.DaemonSet); ok {
			sets = append(sets, o)
		}
	}
	out := map[string][]string{}
	if len(sets) == 0 {
		return out, nil
	}
	pods := slices.Clip(c.Pods)
	for _, name := range nodes {
		node := find(c.Nodes, name)
		if node == nil {
			continue // removed by a later edit
		}
		for _, ds := range sets {
			one := &explain.Cluster{Nodes: []*v1.Node{node}, Namespaces: c.Namespaces, Others: c.Others}
			replicas, _, err := Workloads([]runtime.Object{ds}, "", one)
			if err != nil {
				return nil, fmt.Errorf("DaemonSet pods for the new node %s: %w", name, err)
			}
			for _, r := range replicas {
				r.Pod.Spec.NodeName = name
				r.Pod.Status.Phase = v1.PodRunning
				pods = append(pods, r.Pod)
				out[name] = append(out[name], r.Pod.Namespace+"/"+strings.TrimPrefix(r.Workload, "DaemonSet/"))
			}
		}
	}
	c.Pods = pods
	return out, nil
}

// describeCopies says what the copies of like got besides like's shape:
// the state taints cleared, the operator's taints kept, and the DaemonSet
// pods bound to them.
func describeCopies(like *v1.Node, cleared []v1.Taint, added []string, daemons map[string][]string) string {
	var parts []string
	var what []string
	if like.Spec.Unschedulable {
		what = append(what, "the cordon")
	}
	for _, t := range cleared {
		what = append(what, t.ToString())
	}
	if len(what) > 0 {
		parts = append(parts, "cleared "+strings.Join(what, ", "))
	}
	var kept []string
	for _, t := range like.Spec.Taints {
		if !slices.Contains(stateTaints, t.Key) {
			kept = append(kept, t.ToString())
		}
	}
	if len(kept) > 0 {
		parts = append(parts, "kept taint(s) "+strings.Join(kept, ", "))
	}
	same := true
	for _, n := range added[1:] {
		if !slices.Equal(daemons[n], daemons[added[0]]) {
			same = false
		}
	}
	switch {
	case same && len(daemons[added[0]]) == 0:
		parts = append(parts, "no DaemonSet pod on them")
	case same:
		parts = append(parts, fmt.Sprintf("%d DaemonSet pod(s) on each: %s", len(daemons[added[0]]), strings.Join(daemons[added[0]], ", ")))
	default:
		for _, n := range added {
			parts = append(parts, fmt.Sprintf("DaemonSet pods on %s: %s", n, orNone(daemons[n])))
		}
	}
	return strings.Join(parts, "; ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

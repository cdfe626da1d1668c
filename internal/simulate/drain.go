package simulate

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// DrainReport is what draining the nodes does besides placing the pods.
type DrainReport struct {
	Nodes []string `json:"nodes"`
	// Evicted counts the pods drain evicts and their controllers re-create.
	Evicted int `json:"evicted"`
	// Staying are the pods drain leaves, or deletes for good, and why.
	Staying []StayingPod `json:"staying,omitempty"`
	// PDBs are the PodDisruptionBudgets covering evicted pods.
	PDBs []PDBReport `json:"pdbs,omitempty"`
}

// StayingPod is a pod on a drained node that is not re-created elsewhere.
type StayingPod struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Kind is daemonset, mirror or bare.
	Kind string `json:"kind"`
	Why  string `json:"why"`
}

// PDBReport is one PodDisruptionBudget as the drain meets it.
type PDBReport struct {
	PDB string `json:"pdb"`
	// Allowed is status.disruptionsAllowed now: how many evictions it
	// lets through before replacements become ready.
	Allowed int32 `json:"allowed"`
	// Evicting counts the drained pods it covers.
	Evicting int `json:"evicting"`
	// Blocks is set when Evicting > Allowed: drain waits (the eviction API
	// refuses) until replacements are ready, or forever if they stay Pending.
	Blocks bool `json:"blocks,omitempty"`
}

// Kinds of pods a drain does not re-create.
const (
	StayDaemonSet = "daemonset"
	StayMirror    = "mirror"
	StayBare      = "bare"
)

// Drain returns c as it is once the nodes named (names, or every node
// selector matches) are cordoned and their pods evicted, the replacements
// their controllers create (to be placed), and the report. Pods that are
// finished or already terminating are left out; DaemonSet, mirror and
// bare pods stay where they are and are listed.
func Drain(c *explain.Cluster, names []string, selector string) (*explain.Cluster, []Replica, *DrainReport, error) {
	drained := map[string]bool{}
	for _, name := range names {
		if find(c.Nodes, name) == nil {
			return nil, nil, nil, fmt.Errorf("--drain %s: no such node in the cluster: check the name with kubectl get nodes", name)
		}
		drained[name] = true
	}
	if selector != "" {
		hit, err := match(c.Nodes, "--selector", selector)
		if err != nil {
			return nil, nil, nil, err
		}
		for n := range hit {
			drained[n] = true
		}
	}
	out := *c
	out.Nodes = make([]*v1.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		if drained[n.Name] {
			n = n.DeepCopy()
			n.Spec.Unschedulable = true // kubectl drain cordons first
		}
		out.Nodes[i] = n
	}
	rep := &DrainReport{Nodes: sortedKeys(drained)}
	var evicted []*v1.Pod
	out.Pods = make([]*v1.Pod, 0, len(c.Pods))
	for _, p := range c.Pods {
		if !drained[p.Spec.NodeName] || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed || p.DeletionTimestamp != nil {
			out.Pods = append(out.Pods, p)
			continue
		}
		if kind, why := stays(p); kind != "" {
			rep.Staying = append(rep.Staying, StayingPod{Pod: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Kind: kind, Why: why})
			out.Pods = append(out.Pods, p)
			continue
		}
		evicted = append(evicted, p)
	}
	rep.Evicted = len(evicted)
	sort.Slice(evicted, func(i, j int) bool {
		a, b := evicted[i], evicted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	replicas := make([]Replica, 0, len(evicted))
	for _, p := range evicted {
		owner := metav1.GetControllerOf(p)
		repl := p.DeepCopy()
		repl.UID = types.UID("simulate-replacement-" + string(p.UID))
		repl.Spec.NodeName = ""
		repl.Status = v1.PodStatus{Phase: v1.PodPending}
		replicas = append(replicas, Replica{Pod: repl, Workload: owner.Kind + "/" + owner.Name, From: p.Spec.NodeName})
	}
	rep.PDBs = pdbs(c, evicted)
	return &out, replicas, rep, nil
}

// stays says why drain does not hand p to a controller to re-create.
func stays(p *v1.Pod) (string, string) {
	if p.Annotations[v1.MirrorPodAnnotationKey] != "" {
		return StayMirror, "a static pod's mirror: the kubelet runs it, drain skips it"
	}
	owner := metav1.GetControllerOf(p)
	switch {
	case owner == nil:
		return StayBare, "no controller re-creates it: kubectl drain refuses without --force, which deletes it for good"
	case owner.Kind == "DaemonSet":
		return StayDaemonSet, "a DaemonSet pod: kubectl drain --ignore-daemonsets leaves it; the node is its only place"
	}
	return "", ""
}

// pdbs reports every PodDisruptionBudget covering evicted pods.
func pdbs(c *explain.Cluster, evicted []*v1.Pod) []PDBReport {
	var out []PDBReport
	for _, o := range c.Others {
		pdb, ok := o.(*policyv1.PodDisruptionBudget)
		if !ok {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			continue // the disruption controller ignores it too
		}
		n := 0
		for _, p := range evicted {
			if p.Namespace == pdb.Namespace && sel.Matches(labels.Set(p.Labels)) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		allowed := pdb.Status.DisruptionsAllowed
		out = append(out, PDBReport{PDB: pdb.Namespace + "/" + pdb.Name, Allowed: allowed, Evicting: n, Blocks: int32(n) > allowed})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PDB < out[j].PDB })
	return out
}

// PendingPods returns c without its Pending pods (unbound, not finished,
// not terminating, not held by a scheduling gate) and those pods as
// replicas to place: what the scheduler's queue holds.
func PendingPods(c *explain.Cluster) (*explain.Cluster, []Replica) {
	out := *c
	out.Pods = make([]*v1.Pod, 0, len(c.Pods))
	var replicas []Replica
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed ||
			p.DeletionTimestamp != nil || len(p.Spec.SchedulingGates) > 0 {
			out.Pods = append(out.Pods, p)
			continue
		}
		what := "Pod/" + p.Name
		if owner := metav1.GetControllerOf(p); owner != nil {
			what = owner.Kind + "/" + owner.Name
		}
		pod := p.DeepCopy()
		if pod.UID == "" {
			pod.UID = types.UID("simulate-" + p.Namespace + "-" + p.Name)
		}
		pod.Status.NominatedNodeName = ""
		replicas = append(replicas, Replica{Pod: pod, Workload: what})
	}
	return &out, replicas
}

package simulate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// DrainOptions name the nodes to drain and the kubectl drain flags to
// judge the drain with. --ignore-daemonsets is always assumed: without it
// kubectl drain refuses every node that runs a DaemonSet pod.
type DrainOptions struct {
	// Nodes are drained in the order given, then the nodes Selector
	// matches by name, as kubectl drain visits them.
	Nodes    []string
	Selector string
	// DeleteEmptyDirData and Force mean what kubectl drain's flags of
	// the same names mean.
	DeleteEmptyDirData bool
	Force              bool
}

// kubectl drain's flags, and the refusals of its pod filters as it words
// them ("cannot delete " + refusal + ": " + pods).
const (
	flagIgnoreDaemonSets   = "--ignore-daemonsets"
	flagDeleteEmptyDirData = "--delete-emptydir-data"
	flagForce              = "--force"

	refuseLocalStorage = "Pods with local storage (use --delete-emptydir-data to override)"
	refuseUnmanaged    = "Pods that declare no controller (use --force to override)"
)

// Drain returns c as it is once the nodes o names are cordoned and their
// pods evicted as kubectl drain evicts them, the replacements their
// controllers create (to be placed, in the order the evictions happen),
// and the report (ConcludeDrain completes it once the replacements are placed).
//
// The pods of each node are judged by kubectl drain's filters in its
// order: DaemonSet pods stay (--ignore-daemonsets), mirror pods are
// skipped, pods with emptyDir volumes need --delete-emptydir-data and pods
// without a controller --force (evicted for good), finished pods are
// deleted. Then the Eviction API: a pod under more than one
// PodDisruptionBudget is never evicted; a running pod under one is evicted
// while the budget allows, and the rest wait for replacements.
func Drain(c *explain.Cluster, o DrainOptions) (*explain.Cluster, []Replica, *simulatev1alpha1.DrainReport, error) {
	order, err := drainOrder(c.Nodes, o)
	if err != nil {
		return nil, nil, nil, err
	}
	drained := map[string]bool{}
	for _, n := range order {
		drained[n] = true
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
	rep := &simulatev1alpha1.DrainReport{Nodes: order, Flags: []string{flagIgnoreDaemonSets}}
	if o.DeleteEmptyDirData {
		rep.Flags = append(rep.Flags, flagDeleteEmptyDirData)
	}
	if o.Force {
		rep.Flags = append(rep.Flags, flagForce)
	}
	onNode := map[string][]*v1.Pod{}
	out.Pods = make([]*v1.Pod, 0, len(c.Pods))
	for _, p := range c.Pods {
		if drained[p.Spec.NodeName] {
			onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p)
		}
		out.Pods = append(out.Pods, p)
	}
	budgets := pdbsOf(c)
	left := map[*policyv1.PodDisruptionBudget]int32{}
	reports := map[*policyv1.PodDisruptionBudget]*simulatev1alpha1.PDBReport{}
	allow := map[string]bool{}
	evicted := map[*v1.Pod]bool{}
	var replicas []Replica
	for _, node := range order {
		pods := onNode[node]
		// The apiserver lists pods by namespace and name; kubectl drain
		// evicts them in that order, all at once.
		sort.Slice(pods, func(i, j int) bool { return podKey(pods[i]) < podKey(pods[j]) })
		var refusals []simulatev1alpha1.Refusal
		var now, later []*v1.Pod
		for _, p := range pods {
			stay, refusal, needs := filterPod(p, o)
			if refusal != "" {
				refusals = refuse(refusals, node, refusal, podKey(p))
			}
			for _, f := range needs {
				allow[f] = true
			}
			blocked := false
			if stay == "" {
				stay, blocked = evictPod(p, budgets, left, reports)
			}
			if stay != "" {
				rep.Staying = append(rep.Staying, simulatev1alpha1.StayingPod{Pod: podKey(p), Node: node, Kind: stay, Why: stayWhy(p, stay, budgets)})
				continue
			}
			evicted[p] = true
			if metav1.GetControllerOf(p) == nil {
				rep.Staying = append(rep.Staying, simulatev1alpha1.StayingPod{Pod: podKey(p), Node: node, Kind: simulatev1alpha1.StayBare, Why: stayWhy(p, simulatev1alpha1.StayBare, budgets)})
				continue
			}
			if blocked {
				later = append(later, p)
			} else {
				now = append(now, p)
			}
		}
		rep.Refused = append(rep.Refused, refusals...)
		for _, p := range append(now, later...) {
			owner := metav1.GetControllerOf(p)
			repl := p.DeepCopy()
			repl.UID = types.UID("simulate-replacement-" + string(p.UID))
			repl.Spec.NodeName = ""
			repl.Status = v1.PodStatus{Phase: v1.PodPending}
			replicas = append(replicas, Replica{Pod: repl, Workload: owner.Kind + "/" + owner.Name, From: node})
		}
	}
	// The evicted pods are gone; the rest stay where they are.
	kept := out.Pods[:0]
	for _, p := range out.Pods {
		if !evicted[p] {
			kept = append(kept, p)
		}
	}
	out.Pods = kept
	rep.Evicted = len(replicas)
	for _, f := range []string{flagDeleteEmptyDirData, flagForce} {
		if allow[f] {
			rep.Allow = append(rep.Allow, f)
		}
	}
	for _, r := range reports {
		rep.PDBs = append(rep.PDBs, *r)
	}
	sort.Slice(rep.PDBs, func(i, j int) bool { return rep.PDBs[i].PDB < rep.PDBs[j].PDB })
	rep.Status = drainStatus(rep)
	return &out, replicas, rep, nil
}

// drainOrder is the nodes o names: the names in order, then the nodes
// the selector matches, by name.
func drainOrder(nodes []*v1.Node, o DrainOptions) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	for _, name := range o.Nodes {
		if find(nodes, name) == nil {
			return nil, fmt.Errorf("--drain %s: no such node in the cluster: check the name with kubectl get nodes", name)
		}
		if !seen[name] {
			seen[name] = true
			order = append(order, name)
		}
	}
	if o.Selector != "" {
		hit, err := match(nodes, "--selector", o.Selector)
		if err != nil {
			return nil, err
		}
		for _, name := range sortedKeys(hit) {
			if !seen[name] {
				seen[name] = true
				order = append(order, name)
			}
		}
	}
	return order, nil
}

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// filterPod is kubectl drain's pod filters, in its order, with
// --ignore-daemonsets: why p stays (daemonset, mirror) or "" if it goes;
// the refusal kubectl reports for it with o's flags (only the first
// filter's: the others do not run); and every flag p needs to go.
func filterPod(p *v1.Pod, o DrainOptions) (stay, refusal string, needs []string) {
	finished := p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	owner := metav1.GetControllerOf(p)
	if owner != nil && owner.Kind == "DaemonSet" && owner.APIVersion == "apps/v1" && !finished {
		return simulatev1alpha1.StayDaemonSet, "", nil
	}
	if _, ok := p.Annotations[v1.MirrorPodAnnotationKey]; ok {
		return simulatev1alpha1.StayMirror, "", nil
	}
	if finished {
		return simulatev1alpha1.StayFinished, "", nil
	}
	if hasEmptyDir(p) && !o.DeleteEmptyDirData {
		refusal, needs = refuseLocalStorage, append(needs, flagDeleteEmptyDirData)
	}
	if owner == nil && !o.Force {
		if refusal == "" {
			refusal = refuseUnmanaged
		}
		needs = append(needs, flagForce)
	}
	return "", refusal, needs
}

func hasEmptyDir(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// refuse adds pod to the node's refusal for reason, kubectl's way: one
// error per reason, naming its pods.
func refuse(rs []simulatev1alpha1.Refusal, node, reason, pod string) []simulatev1alpha1.Refusal {
	flag := flagForce
	if reason == refuseLocalStorage {
		flag = flagDeleteEmptyDirData
	}
	for i := range rs {
		if rs[i].Flag == flag {
			rs[i].Pods = append(rs[i].Pods, pod)
			rs[i].Message = "cannot delete " + reason + ": " + strings.Join(rs[i].Pods, ", ")
			return rs
		}
	}
	return append(rs, simulatev1alpha1.Refusal{Node: node, Message: "cannot delete " + reason + ": " + pod, Flag: flag, Pods: []string{pod}})
}

// pdbsOf returns c's PodDisruptionBudgets.
func pdbsOf(c *explain.Cluster) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, o := range c.Others {
		if pdb, ok := o.(*policyv1.PodDisruptionBudget); ok {
			out = append(out, pdb)
		}
	}
	return out
}

// covering returns the budgets the Eviction API finds for p: those of its
// namespace whose selector matches its labels (a missing selector matches
// nothing, an empty one everything).
func covering(p *v1.Pod, budgets []*policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range budgets {
		if pdb.Namespace != p.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

// evictPod is the Eviction API's answer for p: "" when it evicts it (the
// budget that decides is charged, and the pod recorded in its report;
// blocked when the budget is spent), terminating when p is going already,
// pdbs when it never evicts it.
func evictPod(p *v1.Pod, budgets []*policyv1.PodDisruptionBudget, left map[*policyv1.PodDisruptionBudget]int32, reports map[*policyv1.PodDisruptionBudget]*simulatev1alpha1.PDBReport) (stay string, blocked bool) {
	if p.DeletionTimestamp != nil {
		return simulatev1alpha1.StayTerminating, false
	}
	if p.Status.Phase == v1.PodPending {
		return "", false // not started: evicted without asking a budget
	}
	pdbs := covering(p, budgets)
	switch {
	case len(pdbs) > 1:
		return simulatev1alpha1.StayPDBs, false
	case len(pdbs) == 0:
		return "", false
	}
	pdb := pdbs[0]
	if !ready(p) {
		// An unhealthy pod goes without using the budget when the policy
		// says so, or when the budget is met without it.
		if pol := pdb.Spec.UnhealthyPodEvictionPolicy; pol != nil && *pol == policyv1.AlwaysAllow ||
			pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return "", false
		}
	}
	r := reports[pdb]
	if r == nil {
		r = &simulatev1alpha1.PDBReport{PDB: pdb.Namespace + "/" + pdb.Name, Allowed: pdb.Status.DisruptionsAllowed, Evicting: []string{}}
		reports[pdb] = r
		left[pdb] = pdb.Status.DisruptionsAllowed
	}
	r.Evicting = append(r.Evicting, podKey(p))
	if left[pdb] > 0 {
		left[pdb]--
		return "", false
	}
	r.Blocks = append(r.Blocks, podKey(p))
	return "", true
}

// ready is the pod's Ready condition; a snapshot that leaves conditions
// out (hand-written) is taken as ready.
func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return true
}

// stayWhy says what happens to a pod that is not re-created elsewhere.
func stayWhy(p *v1.Pod, kind string, budgets []*policyv1.PodDisruptionBudget) string {
	switch kind {
	case simulatev1alpha1.StayDaemonSet:
		return "a DaemonSet pod: kubectl drain --ignore-daemonsets leaves it; the node is its only place"
	case simulatev1alpha1.StayMirror:
		return "a static pod's mirror: the kubelet runs it, drain skips it"
	case simulatev1alpha1.StayFinished:
		return "finished: drain deletes it, nothing re-creates it"
	case simulatev1alpha1.StayTerminating:
		return "already terminating: drain waits for it to go; its controller has created its replacement already"
	case simulatev1alpha1.StayPDBs:
		var names []string
		for _, pdb := range covering(p, budgets) {
			names = append(names, pdb.Name)
		}
		return fmt.Sprintf("under PodDisruptionBudgets %s: the Eviction API refuses it (500: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.), so it stays and kubectl drain fails", strings.Join(names, ", "))
	default:
		return "no controller re-creates it: kubectl drain --force evicts it for good"
	}
}

func drainStatus(d *simulatev1alpha1.DrainReport) string {
	switch {
	case len(d.Refused) > 0:
		return simulatev1alpha1.DrainRefused
	case slices.ContainsFunc(d.Staying, func(s simulatev1alpha1.StayingPod) bool { return s.Kind == simulatev1alpha1.StayPDBs }):
		return simulatev1alpha1.DrainFails
	case slices.ContainsFunc(d.PDBs, func(p simulatev1alpha1.PDBReport) bool { return len(p.Forever) > 0 }):
		return simulatev1alpha1.DrainStuck
	case slices.ContainsFunc(d.PDBs, func(p simulatev1alpha1.PDBReport) bool { return len(p.Blocks) > 0 }):
		return simulatev1alpha1.DrainWaits
	}
	return simulatev1alpha1.DrainCompletes
}

// ConcludeDrain completes the report d of a drain once the replacements are placed: a pod
// a budget blocks is evicted when a replacement under the same budget
// becomes ready, so each replacement placed frees one more eviction; the
// pods left when none is freed wait forever (kubectl drain until its
// --timeout).
func ConcludeDrain(d *simulatev1alpha1.DrainReport, res *simulatev1alpha1.PlacementSimulation) {
	placed := map[string]bool{}
	for _, r := range res.Replicas {
		if r.From != "" && r.Node != "" {
			placed[r.Pod] = true
		}
	}
	for i := range d.PDBs {
		p := &d.PDBs[i]
		p.Forever = nil
		budget := p.Allowed
		for _, pod := range p.Evicting {
			if budget <= 0 {
				p.Forever = append(p.Forever, pod)
				continue
			}
			budget--
			if placed[pod] {
				budget++
			}
		}
	}
	d.Status = drainStatus(d)
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

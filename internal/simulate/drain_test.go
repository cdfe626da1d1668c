package simulate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// drainPod is a running pod of app on node, owned by a controller of kind
// (none when kind is empty).
func drainPod(name, node, app, kind string) *v1.Pod {
	p := tu.MakePod("default", name).UID(name).Placement().Label("app", app).NodeName(node).Request("100m", "64Mi").Obj()
	p.Status.Phase = v1.PodRunning
	if kind != "" {
		yes := true
		api := "apps/v1"
		if kind == "Job" {
			api = "batch/v1"
		}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: api, Kind: kind, Name: app, UID: types.UID("o-" + app), Controller: &yes}}
	}
	return p
}

func budget(name string, allowed int32, sel map[string]string) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 3, DesiredHealthy: 3}}
}

func withEmptyDir(p *v1.Pod) *v1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	return p
}

// kubectl drain's filters, in its order and with its words: without
// --delete-emptydir-data and --force the node is refused for the emptyDir
// pod and the bare pod (the bare pod with emptyDir only for its emptyDir,
// as kubectl stops at the first refusing filter), and the report goes on
// with those flags added; DaemonSet and mirror pods stay, a finished pod
// is deleted, a terminating one only waited for.
func TestDrainFiltersAsKubectl(t *testing.T) {
	finished := drainPod("done", "n1", "batch", "Job")
	finished.Status.Phase = v1.PodSucceeded
	finished = withEmptyDir(finished) // finished: its emptyDir is no reason to refuse
	going := drainPod("going", "n1", "web", "ReplicaSet")
	going.DeletionTimestamp = &metav1.Time{}
	mirror := drainPod("static", "n1", "etcd", "")
	mirror.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("n1", "z1", 110), zoned("n2", "z1", 110)},
		Pods: []*v1.Pod{
			drainPod("web-b", "n1", "web", "ReplicaSet"),
			withEmptyDir(drainPod("cache", "n1", "cache", "StatefulSet")),
			drainPod("debug", "n1", "debug", ""),
			withEmptyDir(drainPod("scratch", "n1", "scratch", "")),
			drainPod("agent", "n1", "agent", "DaemonSet"),
			mirror, finished, going,
			drainPod("web-a", "n1", "web", "ReplicaSet"),
			drainPod("elsewhere", "n2", "web", "ReplicaSet"),
		}}
	out, replicas, rep, err := Drain(c, DrainOptions{Nodes: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused := []simulatev1alpha1.Refusal{
		{Node: "n1", Message: "cannot delete Pods with local storage (use --delete-emptydir-data to override): default/cache, default/scratch", Flag: "--delete-emptydir-data", Pods: []string{"default/cache", "default/scratch"}},
		{Node: "n1", Message: "cannot delete Pods that declare no controller (use --force to override): default/debug", Flag: "--force", Pods: []string{"default/debug"}},
	}
	if !reflect.DeepEqual(rep.Refused, wantRefused) {
		t.Errorf("refused %+v,\nwant %+v", rep.Refused, wantRefused)
	}
	if rep.Status != simulatev1alpha1.DrainRefused || !reflect.DeepEqual(rep.Allow, []string{"--delete-emptydir-data", "--force"}) || !reflect.DeepEqual(rep.Flags, []string{"--ignore-daemonsets"}) {
		t.Errorf("status %q allow %v flags %v: want refused, both flags to allow, --ignore-daemonsets judged", rep.Status, rep.Allow, rep.Flags)
	}
	// Evicted in the apiserver's list order (namespace, name), as kubectl
	// evicts them.
	var names []string
	for _, r := range replicas {
		names = append(names, r.Pod.Name)
	}
	if want := []string{"cache", "web-a", "web-b"}; !reflect.DeepEqual(names, want) {
		t.Errorf("replacements %v, want %v", names, want)
	}
	kinds := map[string]string{}
	for _, s := range rep.Staying {
		kinds[s.Pod] = s.Kind
	}
	wantKinds := map[string]string{"default/agent": simulatev1alpha1.StayDaemonSet, "default/static": simulatev1alpha1.StayMirror, "default/done": simulatev1alpha1.StayFinished,
		"default/going": simulatev1alpha1.StayTerminating, "default/debug": simulatev1alpha1.StayBare, "default/scratch": simulatev1alpha1.StayBare}
	if !reflect.DeepEqual(kinds, wantKinds) {
		t.Errorf("staying %v,\nwant %v", kinds, wantKinds)
	}
	// The evicted and the bare pods are gone from the cluster; the rest
	// (and n2's pod) are still there, n1 cordoned.
	left := map[string]bool{}
	for _, p := range out.Pods {
		left[p.Name] = true
	}
	for _, name := range []string{"agent", "static", "done", "going", "elsewhere"} {
		if !left[name] {
			t.Errorf("%s left the cluster", name)
		}
	}
	for _, name := range []string{"web-a", "web-b", "cache", "debug", "scratch"} {
		if left[name] {
			t.Errorf("%s is still in the cluster", name)
		}
	}
	if !out.Nodes[0].Spec.Unschedulable || c.Nodes[0].Spec.Unschedulable {
		t.Error("n1 not cordoned in the result, or cordoned in the input")
	}

	// With the flags kubectl asked for, it drains: nothing refused.
	_, _, rep, err = Drain(c, DrainOptions{Nodes: []string{"n1"}, DeleteEmptyDirData: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != simulatev1alpha1.DrainCompletes || len(rep.Refused) != 0 || len(rep.Allow) != 0 {
		t.Errorf("with both flags: status %q, refused %+v, allow %v: want it to complete", rep.Status, rep.Refused, rep.Allow)
	}
	// With --delete-emptydir-data only, the bare pod with emptyDir is
	// refused for having no controller.
	_, _, rep, _ = Drain(c, DrainOptions{Nodes: []string{"n1"}, DeleteEmptyDirData: true})
	if len(rep.Refused) != 1 || !reflect.DeepEqual(rep.Refused[0].Pods, []string{"default/debug", "default/scratch"}) {
		t.Errorf("with --delete-emptydir-data: refused %+v, want debug and scratch for --force", rep.Refused)
	}
}

// The Eviction API: a pod under two budgets is never evicted (500) and the
// drain fails; a budget lets through as many as it allows, in eviction
// order, and holds the rest until replacements are ready: forever when the
// replacement that would free it stays Pending. Pods not started and
// unhealthy pods when the budget is met go without asking it.
func TestDrainBudgets(t *testing.T) {
	notReady := drainPod("web-d", "n1", "web", "ReplicaSet")
	notReady.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}}
	notStarted := drainPod("web-e", "n1", "web", "ReplicaSet")
	notStarted.Status.Phase = v1.PodPending
	twice := drainPod("both", "n1", "both", "ReplicaSet")
	twice.Labels["tier"] = "front"
	c := &explain.Cluster{Namespaces: ns(),
		// n2 has room for one replacement only.
		Nodes: []*v1.Node{zoned("n1", "z1", 110), zoned("n2", "z1", 1)},
		Pods: []*v1.Pod{drainPod("web-a", "n1", "web", "ReplicaSet"), drainPod("web-b", "n1", "web", "ReplicaSet"),
			drainPod("web-c", "n1", "web", "ReplicaSet"), notReady, notStarted, twice},
		Others: []runtime.Object{budget("web", 1, map[string]string{"app": "web"}), budget("both-a", 5, map[string]string{"app": "both"}),
			budget("both-b", 5, map[string]string{"tier": "front"})}}
	out, replicas, rep, err := Drain(c, DrainOptions{Nodes: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []simulatev1alpha1.PDBReport{{PDB: "default/web", Allowed: 1, Evicting: []string{"default/web-a", "default/web-b", "default/web-c"}, Blocks: []string{"default/web-b", "default/web-c"}}}
	if !reflect.DeepEqual(rep.PDBs, want) {
		t.Errorf("PDBs %+v,\nwant %+v", rep.PDBs, want)
	}
	if rep.Status != simulatev1alpha1.DrainFails || len(rep.Staying) != 1 || rep.Staying[0].Kind != simulatev1alpha1.StayPDBs || !strings.Contains(rep.Staying[0].Why, "both-a, both-b") {
		t.Errorf("status %q staying %+v: want fails, both under two budgets", rep.Status, rep.Staying)
	}
	// The evictions the budget lets through now come first, then the held
	// ones, each group in list order.
	var names []string
	for _, r := range replicas {
		names = append(names, r.Pod.Name)
	}
	if wantNames := []string{"web-a", "web-d", "web-e", "web-b", "web-c"}; !reflect.DeepEqual(names, wantNames) {
		t.Errorf("replacements %v, want %v", names, wantNames)
	}
	res, err := Run(context.Background(), out, shipped(t), replicas, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replicas[0].Node != "n2" || res.Placed != 1 {
		t.Fatalf("placements %+v: want web-a alone on n2", res.Replicas)
	}
	ConcludeDrain(rep, res)
	// web-a's replacement gets a node: web-b goes once it is ready; web-b's
	// stays Pending, so web-c waits forever.
	if !reflect.DeepEqual(rep.PDBs[0].Forever, []string{"default/web-c"}) || rep.Status != simulatev1alpha1.DrainFails {
		t.Errorf("forever %v status %q: want web-c, and the drain still fails (worse than stuck)", rep.PDBs[0].Forever, rep.Status)
	}
	// Without the pod under two budgets, the drain is stuck on web.
	c.Pods = c.Pods[:5]
	_, _, rep, _ = Drain(c, DrainOptions{Nodes: []string{"n1"}})
	if rep.Status != simulatev1alpha1.DrainWaits {
		t.Errorf("status %q before placing, want waits", rep.Status)
	}
	ConcludeDrain(rep, res)
	if rep.Status != simulatev1alpha1.DrainStuck {
		t.Errorf("status %q, want stuck", rep.Status)
	}
}

// Nodes are drained in the order named, then those the selector matches
// by name; a missing node is an error naming it.
func TestDrainOrder(t *testing.T) {
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z2", 110), zoned("c", "z2", 110)},
		Pods: []*v1.Pod{drainPod("x", "a", "x", "ReplicaSet"), drainPod("y", "c", "y", "ReplicaSet")}}
	_, replicas, rep, err := Drain(c, DrainOptions{Nodes: []string{"c"}, Selector: "topology.kubernetes.io/zone in (z1,z2)"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Nodes, []string{"c", "a", "b"}) || replicas[0].Pod.Name != "y" || replicas[1].Pod.Name != "x" {
		t.Errorf("nodes %v, first replacement %s: want c first, then a and b", rep.Nodes, replicas[0].Pod.Name)
	}
	if _, _, _, err := Drain(c, DrainOptions{Nodes: []string{"gone"}}); err == nil || !strings.Contains(err.Error(), "--drain gone: no such node") {
		t.Errorf("draining a missing node: %v", err)
	}
}

package simulate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

func shipped(t *testing.T) *config.KubeSchedulerProfile {
	t.Helper()
	cfg, err := profile.LoadConfig(manifests.SchedulerConfig(), "shipped config")
	if err != nil {
		t.Fatal(err)
	}
	return &cfg.Profiles[0]
}

func zoned(name, zone string, pods int64) *v1.Node {
	return tu.MakeNode(name).Label(v1.LabelTopologyZone, zone).Capacity("4", "8Gi", pods).Ready().Obj()
}

func ns() []*v1.Namespace { return []*v1.Namespace{tu.MakeNamespace("default", nil)} }

func int32p(n int32) *int32 { return &n }

// podTemplate is a pod template labelled app, for the placement-scheduler.
func podTemplate(app string) v1.PodTemplateSpec {
	p := tu.MakePod("", "").Placement().Label("app", app).Request("100m", "100Mi").Obj()
	return v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels}, Spec: p.Spec}
}

func antiHostname(app string) *v1.Affinity {
	return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: v1.LabelHostname,
	}}}}
}

func deployment(name string, replicas int32, tmpl v1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       appsv1.DeploymentSpec{Replicas: int32p(replicas), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
}

func run(t *testing.T, c *explain.Cluster, objs ...runtime.Object) *simulatev1alpha1.PlacementSimulation {
	t.Helper()
	replicas, _, err := Workloads(objs, "default", c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), c, shipped(t), replicas, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The workload's own anti-affinity counts between its replicas: 5 replicas
// that must not share a host, on 3 nodes, place 3 on distinct nodes and
// leave 2 Pending for one reason, reported once with its breakdown.
func TestReplicasSeeEachOther(t *testing.T) {
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z1", 110), zoned("c", "z2", 110)}}
	tmpl := podTemplate("api")
	tmpl.Spec.Affinity = antiHostname("api")
	res := run(t, c, deployment("api", 5, tmpl))
	if res.Placed != 3 || res.Pending != 2 || res.Preempting != 0 {
		t.Fatalf("placed/pending/preempting %d/%d/%d, want 3/2/0", res.Placed, res.Pending, res.Preempting)
	}
	seen := map[string]bool{}
	for _, r := range res.Replicas[:3] {
		if r.Node == "" || seen[r.Node] {
			t.Errorf("replica %s on %q: want a node of its own", r.Pod, r.Node)
		}
		seen[r.Node] = true
	}
	if len(res.Reasons) != 1 || res.Reasons[0].Replicas != 2 || !strings.Contains(res.Reasons[0].Reason, "didn't match pod anti-affinity rules") {
		t.Fatalf("reasons %+v, want one anti-affinity reason for 2 replicas", res.Reasons)
	}
	if ex := res.Reasons[0].Explanation; ex == nil || ex.Feasible != 0 || len(ex.NodeResults) != 3 {
		t.Errorf("explanation %+v: want the breakdown over 3 nodes, none feasible", ex)
	}
	// c-1 is alone in zone z2; with zone spreading the scheduler's
	// scores prefer it for one of the first two: the zone column shows it.
	zones := map[string]int{}
	for _, r := range res.Replicas {
		zones[r.Topology]++
	}
	if zones["z1"] != 2 || zones["z2"] != 1 {
		t.Errorf("zones %v, want 2 in z1 and 1 in z2", zones)
	}
}

// A replica that does not fit preempts a lower-priority pod when that
// makes room: counted as preempting, with its victim; the room the victim
// leaves is then the snapshot's (the second replica fits in what is left,
// the third finds no victim left to preempt).
func TestPreemptionTakesTheRoom(t *testing.T) {
	low := tu.MakePod("default", "low").UID("low").Placement().NodeName("a").Request("3", "1Gi").Obj()
	low.Spec.Priority = int32p(0)
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110)}, Pods: []*v1.Pod{low}}
	tmpl := podTemplate("hi")
	tmpl.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resourceMust("2")
	tmpl.Spec.Priority = int32p(1000)
	res := run(t, c, deployment("hi", 3, tmpl))
	if res.Placed != 1 || res.Preempting != 1 || res.Pending != 1 {
		t.Fatalf("placed/pending/preempting %d/%d/%d, want 1/1/1:\n%+v", res.Placed, res.Pending, res.Preempting, res.Replicas)
	}
	if got := res.Replicas[0].Preempts; !reflect.DeepEqual(got, []string{"default/low"}) || res.Replicas[0].Node != "a" {
		t.Errorf("first replica %+v: want node a preempting default/low", res.Replicas[0])
	}
	if r := res.Replicas[2]; !strings.Contains(r.Reason, "Insufficient cpu") || !strings.Contains(r.Reason, "No preemption victims found") {
		t.Errorf("third replica's reason %q: want no cpu and no victim left", r.Reason)
	}
}

func TestWorkloadKinds(t *testing.T) {
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{
		zoned("a", "z1", 110),
		tu.MakeNode("gpu").Label("pool", "gpu").Taint("gpu", "true", v1.TaintEffectNoSchedule).Capacity("4", "8Gi", 110).Ready().Obj(),
		tu.MakeNode("other").Label("pool", "other").Capacity("4", "8Gi", 110).Ready().Obj(),
	}}
	sts := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{Replicas: int32p(2), Template: podTemplate("db")}}
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j"},
		Spec: batchv1.JobSpec{Parallelism: int32p(5), Completions: int32p(3), Template: podTemplate("j")}}
	dsTmpl := podTemplate("agent")
	dsTmpl.Spec.NodeSelector = map[string]string{"pool": "other"}
	ds := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Template: dsTmpl}}
	dsAll := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Name: "logs"},
		Spec: appsv1.DaemonSetSpec{Template: podTemplate("logs")}}
	replicas, _, err := Workloads([]runtime.Object{sts, job, ds, dsAll}, "default", c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range replicas {
		names = append(names, r.Pod.Name)
	}
	// The DaemonSet "logs" does not tolerate gpu's taint: no pod there.
	want := []string{"db-0", "db-1", "j-0", "j-1", "j-2", "agent-other", "logs-a", "logs-other"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("replicas %v, want %v", names, want)
	}
	if got := replicas[1].Pod.Labels[appsv1.StatefulSetPodNameLabel]; got != "db-1" {
		t.Errorf("StatefulSet pod label %q, want db-1", got)
	}
	if len(c.Others) != 1 {
		t.Errorf("cluster objects %d, want the StatefulSet recorded for spreading", len(c.Others))
	}
	res, err := Run(context.Background(), c, shipped(t), replicas, Options{TopologyKey: "pool"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Replicas {
		if strings.HasPrefix(r.Pod, "default/logs-") && r.Node != strings.TrimPrefix(r.Pod, "default/logs-") {
			t.Errorf("daemon pod %s placed on %q, want its own node", r.Pod, r.Node)
		}
	}
	if res.Replicas[5].Topology != "other" {
		t.Errorf("agent-other topology %q, want pool=other", res.Replicas[5].Topology)
	}

	for _, bad := range []struct {
		obj  runtime.Object
		want string
	}{
		{&v1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: "s"}}, "kind Service has no pod template"},
		{&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, "Deployment/empty: the pod template has no containers"},
	} {
		if _, _, err := Workloads([]runtime.Object{bad.obj}, "default", c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("error %v, want %q", err, bad.want)
		}
	}
}

func TestEdits(t *testing.T) {
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z2", 110)},
		Pods: []*v1.Pod{tu.MakePod("default", "on-b").NodeName("b").Obj()}}
	e := Edits{AddNodes: 2, Like: "a", Labels: []string{"a-sim-2:disk=ssd", "topology.kubernetes.io/zone=z2:pool=x"},
		Taints: []string{"a:k=v:NoSchedule"}, Cordon: []string{"a-sim-1"}, Remove: []string{"b"}}
	out, done, err := e.Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range out.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"a", "a-sim-1", "a-sim-2"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	copy2 := out.Nodes[2]
	if copy2.Labels[v1.LabelHostname] != "a-sim-2" || copy2.Labels[v1.LabelTopologyZone] != "z1" || copy2.Labels["disk"] != "ssd" {
		t.Errorf("copy labels %v", copy2.Labels)
	}
	if !out.Nodes[1].Spec.Unschedulable || len(out.Nodes[0].Spec.Taints) != 1 || len(out.Nodes[1].Spec.Taints) != 0 {
		t.Errorf("cordon/taint not as asked: %+v %+v", out.Nodes[0].Spec, out.Nodes[1].Spec)
	}
	if len(out.Pods) != 0 || len(done) != 6 {
		t.Errorf("pods %d (want the removed node's gone), edit lines %q", len(out.Pods), done)
	}
	if len(c.Nodes) != 2 || len(c.Nodes[0].Spec.Taints) != 0 || len(c.Pods) != 1 {
		t.Error("Apply changed its input")
	}
	for _, bad := range []struct {
		e    Edits
		want string
	}{
		{Edits{AddNodes: 1, Like: "nope"}, "--like nope: no such node"},
		{Edits{AddNodes: 1}, "--add-nodes N and --like NODE go together"},
		{Edits{Labels: []string{"a"}}, `--label "a": want NODE:k=v`},
		{Edits{Taints: []string{"a:k=v:Sometimes"}}, "effect must be NoSchedule"},
		{Edits{Cordon: []string{"pool=none"}}, "selector pool=none matches no node"},
		{Edits{Remove: []string{"zz"}}, "--remove-node zz: no node named zz"},
	} {
		if _, _, err := bad.e.Apply(c); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want %q", bad.e, err, bad.want)
		}
	}
}

// Draining a node: the ReplicaSet's pods are placed elsewhere with their
// reservations across the batch (one slot left: one lands, one stays
// Pending), the DaemonSet, mirror and bare pods stay and are listed, and
// the PodDisruptionBudget covering both evicted pods allows only one now.
func TestDrain(t *testing.T) {
	yes := true
	owned := func(name, kind string) *v1.Pod {
		p := tu.MakePod("default", name).UID(name).Placement().Label("app", "web").NodeName("old").Request("1", "1Gi").Obj()
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "owner", UID: "o", Controller: &yes}}
		}
		return p
	}
	mirror := owned("static", "")
	mirror.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{IntVal: 1}, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}
	c := &explain.Cluster{Namespaces: ns(),
		Nodes:  []*v1.Node{zoned("old", "z1", 110), zoned("new", "z1", 2)},
		Pods:   []*v1.Pod{owned("w1", "ReplicaSet"), owned("w2", "ReplicaSet"), owned("ds", "DaemonSet"), mirror, owned("bare", ""), owned("busy", "ReplicaSet")},
		Others: []runtime.Object{pdb}}
	c.Pods[4].Labels = map[string]string{"run": "debug"}
	c.Pods[5].Spec.NodeName = "new"
	c.Pods[5].Labels = map[string]string{"app": "busy"}
	drained, replicas, rep, err := Drain(c, DrainOptions{Nodes: []string{"old"}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Evicted != 2 || len(replicas) != 2 || len(rep.Staying) != 3 {
		t.Fatalf("evicted %d, replicas %d, staying %+v: want 2, 2 and the daemonset, mirror and bare pods", rep.Evicted, len(replicas), rep.Staying)
	}
	if want := []simulatev1alpha1.PDBReport{{PDB: "default/web", Allowed: 1, Evicting: []string{"default/w1", "default/w2"}, Blocks: []string{"default/w2"}}}; !reflect.DeepEqual(rep.PDBs, want) {
		t.Errorf("PDBs %+v, want %+v", rep.PDBs, want)
	}
	res, err := Run(context.Background(), drained, shipped(t), replicas, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// "new" holds 2 pods: busy and one replacement; the second finds the
	// first's reservation there (pods limit) and stays Pending.
	if res.Placed != 1 || res.Pending != 1 || res.Replicas[0].Node != "new" || res.Replicas[0].From != "old" {
		t.Fatalf("placed %d pending %d, replicas %+v: want w1 on new, w2 Pending", res.Placed, res.Pending, res.Replicas)
	}
	if !strings.Contains(res.Replicas[1].Reason, "Too many pods") || !strings.Contains(res.Replicas[1].Reason, "unschedulable") {
		t.Errorf("pending reason %q", res.Replicas[1].Reason)
	}
	if _, _, _, err := Drain(c, DrainOptions{Nodes: []string{"gone"}}); err == nil || !strings.Contains(err.Error(), "--drain gone: no such node") {
		t.Errorf("draining a missing node: %v", err)
	}
}

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) }

package simulate

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/ptr"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// Replicas that must not share a host, on five nodes of which one is full
// and one tainted: three more fit, one per free node, and the fourth stays
// Pending on the anti-affinity, with its explanation; the distribution
// says where they went.
func TestMaxReplicasStopsAtTheFilter(t *testing.T) {
	full := tu.MakePod("default", "hog").UID("hog").Placement().NodeName("d").Request("4", "1Gi").Obj()
	c := &explain.Cluster{Namespaces: ns(), Pods: []*v1.Pod{full}, Nodes: []*v1.Node{
		zoned("a", "z1", 110), zoned("b", "z1", 110), zoned("c", "z2", 110), zoned("d", "z2", 110),
		tu.MakeNode("e").Label(v1.LabelTopologyZone, "z2").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Capacity("4", "8Gi", 110).Ready().Obj(),
	}}
	tmpl := podTemplate("api")
	tmpl.Spec.Affinity = antiHostname("api")
	res, _, err := MaxReplicas(context.Background(), c, shipped(t), deployment("api", 1, tmpl), "default", 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	capy := res.Capacity
	if capy.Fits != 3 || capy.Preempting != 0 || capy.StoppedBy != simulatev1alpha1.StoppedUnschedulable || capy.Workload != "Deployment/api" {
		t.Fatalf("capacity %+v: want 3 fit, stopped Unschedulable", capy)
	}
	if len(res.Replicas) != 4 || res.Replicas[3].Node != "" || res.Replicas[3].Pod != "default/api-3" {
		t.Fatalf("replicas %+v: want 3 placed and api-3 Pending", res.Replicas)
	}
	for _, want := range []string{"didn't match pod anti-affinity rules", "Insufficient cpu", "untolerated taint"} {
		if !strings.Contains(capy.Reason, want) {
			t.Errorf("reason %q lacks %q", capy.Reason, want)
		}
	}
	if len(res.Reasons) != 1 || res.Reasons[0].Reason != capy.Reason || res.Reasons[0].Explanation == nil {
		t.Errorf("reasons %+v: want the stopping replica's, explained", res.Reasons)
	}
	if want := []simulatev1alpha1.Share{{Name: "a", Fits: 1}, {Name: "b", Fits: 1}, {Name: "c", Fits: 1}}; !reflect.DeepEqual(capy.ByNode, want) {
		t.Errorf("by node %+v, want %+v", capy.ByNode, want)
	}
	if want := []simulatev1alpha1.Share{{Name: "z1", Fits: 2}, {Name: "z2", Fits: 1}}; !reflect.DeepEqual(capy.ByTopology, want) {
		t.Errorf("by zone %+v, want %+v", capy.ByTopology, want)
	}
	var out bytes.Buffer
	if err := PrintTable(&out, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Capacity: 3 more replica(s) of Deployment/api fit as the cluster is; 0 more by preempting lower-priority pods (3 in all).",
		"Stopped: the next replica, default/api-3, stays Pending (pending reason 1 below).",
		"NODE   ZONE   FITS\na      z1     1\n",
		"ZONE   FITS\nz1     2\nz2     1\n",
		"Pending reason 1 (1 replica(s)):",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// A tiny pod on roomy nodes stops at the limit, and says so; the replicas
// of a StatefulSet come after the ordinals the cluster already runs.
func TestMaxReplicasLimitAndNames(t *testing.T) {
	running := tu.MakePod("default", "db-0").UID("db-0").Placement().NodeName("a").Obj()
	c := &explain.Cluster{Namespaces: ns(), Pods: []*v1.Pod{running}, Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z2", 110)}}
	sts := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{Replicas: int32p(1), Template: podTemplate("db")}}
	res, _, err := MaxReplicas(context.Background(), c, shipped(t), sts, "default", 40, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Capacity.Fits != 40 || res.Capacity.StoppedBy != simulatev1alpha1.StoppedLimit || res.Pending != 0 || res.Capacity.Reason != "" {
		t.Fatalf("capacity %+v, pending %d: want 40 placed, stopped at the limit", res.Capacity, res.Pending)
	}
	if first, last := res.Replicas[0].Pod, res.Replicas[39].Pod; first != "default/db-1" || last != "default/db-40" {
		t.Errorf("replicas from %s to %s, want db-1 to db-40 (db-0 runs)", first, last)
	}
	var out bytes.Buffer
	if err := PrintTable(&out, res); err != nil {
		t.Fatal(err)
	}
	if want := "Stopped at the limit of 40 replica(s) (--max-replicas-limit): more may fit."; !strings.Contains(out.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, out.String())
	}
	// A bare pod is replicated as copies; a DaemonSet has no count.
	pod := tu.MakePod("default", "solo").Placement().Request("3", "1Gi").Obj()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	res, _, err = MaxReplicas(context.Background(), c, shipped(t), pod, "default", 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Capacity.Fits != 2 || res.Replicas[0].Pod != "default/solo-0" || res.Capacity.Limit != 0 {
		t.Errorf("copies of a 3-cpu pod on two 4-cpu nodes: %+v, first %s; want 2 fit, solo-0 first", res.Capacity, res.Replicas[0].Pod)
	}
	ds := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"}, ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: podTemplate("agent")}}
	if _, _, err := MaxReplicas(context.Background(), c, shipped(t), ds, "default", 10, Options{}); err == nil || !strings.Contains(err.Error(), "no replica count") {
		t.Errorf("a DaemonSet: %v, want refused", err)
	}
}

// High-priority replicas fill the free room, then preempt the
// low-priority pods one node at a time: both numbers are reported, and
// the distribution splits them.
func TestMaxReplicasPreempting(t *testing.T) {
	low := func(name, node string) *v1.Pod {
		p := tu.MakePod("default", name).UID(name).Placement().NodeName(node).Request("3", "1Gi").Obj()
		p.Spec.Priority = int32p(0)
		return p
	}
	c := &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z2", 110), zoned("c", "z2", 110)},
		Pods: []*v1.Pod{low("low-a", "a"), low("low-b", "b")}}
	tmpl := podTemplate("hi")
	tmpl.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resourceMust("3")
	tmpl.Spec.Priority = int32p(1000)
	res, _, err := MaxReplicas(context.Background(), c, shipped(t), deployment("hi", 1, tmpl), "default", 100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	capy := res.Capacity
	if capy.Fits != 1 || capy.Preempting != 2 || capy.StoppedBy != simulatev1alpha1.StoppedUnschedulable {
		t.Fatalf("capacity %+v: want 1 fit (node c), 2 more preempting", capy)
	}
	if res.Replicas[0].Node != "c" || len(res.Replicas[1].Preempts) != 1 || len(res.Replicas[2].Preempts) != 1 {
		t.Errorf("replicas %+v: want c free, then a preemption each", res.Replicas)
	}
	if want := []simulatev1alpha1.Share{{Name: "z2", Fits: 1, Preempting: 1}, {Name: "z1", Preempting: 1}}; !reflect.DeepEqual(capy.ByTopology, want) {
		t.Errorf("by zone %+v, want %+v", capy.ByTopology, want)
	}
}

// mostAllocated is prof with NodeResourcesFit scoring MostAllocated: the
// one plugin arg a comparison flips.
func mostAllocated(t *testing.T, prof *config.KubeSchedulerProfile) *config.KubeSchedulerProfile {
	t.Helper()
	out := prof.DeepCopy()
	for _, pc := range out.PluginConfig {
		if args, ok := pc.Args.(*config.NodeResourcesFitArgs); ok {
			args.ScoringStrategy.Type = config.MostAllocated
			return out
		}
	}
	t.Fatalf("profile %s has no NodeResourcesFit args", prof.SchedulerName)
	return nil
}

// Two nodes, one half full: spreading by LeastAllocated puts the replica
// on the empty one, bin-packing by MostAllocated on the other. The move is
// reported with the scores that decided; the same profile twice moves
// nothing; a profile that leaves the replica Pending says why.
func TestCompare(t *testing.T) {
	busy := tu.MakePod("default", "busy").UID("busy").Placement().NodeName("a").Request("2", "4Gi").Obj()
	cluster := func() *explain.Cluster {
		return &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{zoned("a", "z1", 110), zoned("b", "z2", 110)}, Pods: []*v1.Pod{busy.DeepCopy()}}
	}
	runOn := func(p *config.KubeSchedulerProfile, opts Options) (*simulatev1alpha1.PlacementSimulation, error) {
		c := cluster()
		replicas, _, err := Workloads([]runtime.Object{deployment("web", 1, podTemplate("web"))}, "default", c)
		if err != nil {
			return nil, err
		}
		return Run(context.Background(), c, p, replicas, opts)
	}
	least := shipped(t)
	res, err := Compare(runOn, least, mostAllocated(t, least), Options{})
	if err != nil {
		t.Fatal(err)
	}
	moved := res.Comparison.Moved
	if len(moved) != 1 || moved[0].Node != "b" || moved[0].OtherNode != "a" || moved[0].Pod != "default/web-0" {
		t.Fatalf("moved %+v: want web-0 from b (least allocated) to a (most allocated)", moved)
	}
	if why := moved[0].Why; !strings.HasPrefix(why, "A: b ") || !strings.Contains(why, "; B: a ") || !strings.Contains(why, "most of it NodeResourcesFit") {
		t.Errorf("why %q: want each side's ranking, NodeResourcesFit deciding", why)
	}
	if res.Comparison.Result.Replicas[0].Node != "a" {
		t.Errorf("second result %+v", res.Comparison.Result.Replicas)
	}
	var out bytes.Buffer
	if err := PrintTable(&out, res); err != nil {
		t.Fatal(err)
	}
	if want := "1 replica(s) land differently (A: profile placement-scheduler, B: profile placement-scheduler):"; !strings.Contains(out.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, out.String())
	}

	same, err := Compare(runOn, least, least, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := PrintTable(&out, same); err != nil {
		t.Fatal(err)
	}
	if len(same.Comparison.Moved) != 0 || !strings.Contains(out.String(), "Every replica lands on the same node under both profiles.") {
		t.Errorf("same profile: moved %+v\n%s", same.Comparison.Moved, out.String())
	}

	// The profile-pool example's second profile: its addedAffinity wants
	// nodes labelled scheduler-profile=foo, which neither is.
	raw, err := manifests.Example("profile-pool/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := profile.LoadConfig(raw, "profile-pool")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := &pool.Profiles[1]
	pending, err := Compare(runOn, least, nowhere, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := pending.Comparison.Moved; len(m) != 1 || m[0].OtherNode != "" || !strings.HasPrefix(m[0].Why, "B leaves it Pending: 0/2 nodes are available: 2 node(s) didn't match") {
		t.Errorf("moved %+v: want web-0 Pending under B, with its FailedScheduling message", m)
	}
}

// A StatefulSet's claims from its volumeClaimTemplates exist for every
// replica the search places, however many: replicas on a class allowed in
// zone a fill zone a's two nodes by CPU (40 each), then stop there, none
// in zone b.
func TestMaxReplicasStatefulSetClaims(t *testing.T) {
	c := twoZones()
	c.Others = append(c.Others, provisionedIn("zonal", "a"))
	set := statefulSet("web", 1, podTemplate("web"), claimTemplate("data", ptr.To("zonal")))
	res, _, err := MaxReplicas(context.Background(), c, shipped(t), set, "default", 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if capy := res.Capacity; capy.Fits != 80 || capy.StoppedBy != simulatev1alpha1.StoppedUnschedulable || !reflect.DeepEqual(capy.ByTopology, []simulatev1alpha1.Share{{Name: "a", Fits: 80}}) {
		t.Fatalf("capacity %+v: want 80 fit, all in zone a", capy)
	}
	if last := res.Replicas[80]; last.Pod != "default/web-80" || !strings.Contains(last.Reason, "Insufficient cpu") {
		t.Errorf("the stopping replica %+v: want web-80, short of cpu in zone a", last)
	}
}

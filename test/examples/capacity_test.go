package examples

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// TestSimulateMaxReplicasAgreesWithTheScheduler: six KWOK nodes of the
// test's own pool over three zones, one of them full (a pod bound there
// holds all its CPU) and one tainted; replicas that must not share a host.
// `simulate --max-replicas` says four more fit, one per free node, and
// why the fifth stays Pending; the Deployment scaled past that number gets
// exactly those four nodes from the scheduler and the rest stay Pending.
func TestSimulateMaxReplicasAgreesWithTheScheduler(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := "capacity-" + ns
	zones := []string{"zone-a", "zone-a", "zone-b", "zone-b", "zone-c", "zone-c"}
	var names []string
	for i, zone := range zones {
		n := framework.SchedulableNode(ns, fmt.Sprintf("n%d", i+1)).Label(pool, "yes").Label(v1.LabelTopologyZone, zone).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		env.CreateNodes(t, n)
		names = append(names, n.Name)
	}
	waitPoolUp(t, names)
	full, tainted := names[1], names[5]
	env.CreatePod(t, testutil.MakePod(ns, "filler").NodeName(full).Request("8", "1Gi").Obj())
	taint(t, tainted, v1.Taint{Key: "capacity-test", Value: "x", Effect: v1.TaintEffectNoSchedule})

	s := capacitySpec(ns, pool, "anti", "placement-scheduler")
	s.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "anti"}}, TopologyKey: v1.LabelHostname}}}}
	workload := newDeployment(ns, "anti", 1, s)
	configFile := profilePoolConfig(t, t.TempDir())
	predicted := simulateCapacity(t, "--max-replicas", "-f", writeYAML(t, t.TempDir(), "workload.yaml", workload), "--config", configFile, "--kubeconfig", env.Kubeconfig)
	c := predicted.Capacity
	if c == nil {
		t.Fatal("simulate --max-replicas: no capacity in the output")
	}
	if c.Fits != 4 || c.Preempting != 0 || c.StoppedBy != "Unschedulable" {
		t.Errorf("simulate --max-replicas: %+v, want 4 fit, stopped Unschedulable", c)
	}
	for _, want := range []string{"didn't match pod anti-affinity rules", "Insufficient cpu", "untolerated taint"} {
		if !strings.Contains(c.Reason, want) {
			t.Errorf("the stopping reason %q lacks %q", c.Reason, want)
		}
	}
	var wantNodes []string
	for _, share := range c.ByNode {
		wantNodes = append(wantNodes, share.Name)
	}
	sort.Strings(wantNodes)

	// Scale past the number: what fits is placed, the rest stays Pending.
	workload.Spec.Replicas = ptr.To(int32(c.Fits + 2))
	env.Create(t, workload)
	bound, pending := settle(t, ns, "anti", c.Fits+2)
	sort.Strings(bound)
	if len(bound) != c.Fits || pending != 2 || fmt.Sprint(bound) != fmt.Sprint(wantNodes) {
		t.Errorf("the scheduler placed %d on %v and left %d Pending; simulate said %d fit, on %v", len(bound), bound, pending, c.Fits, wantNodes)
	}
}

// TestSimulateCompareConfigAgreesWithTheScheduler: a scheduler of the
// test's own runs two profiles that differ in one plugin arg,
// NodeResourcesFit's scoring strategy: LeastAllocated (the default) and
// MostAllocated. On four nodes of one zone, one half full, `simulate
// --config least --compare-config most` says the spreading profile leaves
// the half-full node alone and the packing one fills it, and lists the
// replicas that move. The scheduler then places the same Deployment under
// each profile, each on a pool of its own shaped as the first (so that
// neither run sees the other's pods), as simulate said: how many replicas
// land on the half-full node, and how many on each node, as counts (the
// empty nodes tie). Two replicas: a third would tie across all four nodes
// under MostAllocated, where the scheduler picks at random.
func TestSimulateCompareConfigAgreesWithTheScheduler(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	least, most := "least-"+ns, "most-"+ns
	pools := map[string][]string{}
	for _, side := range []string{least, most} {
		for i := 1; i <= 4; i++ {
			n := framework.SchedulableNode(ns, fmt.Sprintf("%s-n%d", side[:4], i)).Label("pool-"+side, "yes").Label(v1.LabelTopologyZone, "zone-a").Obj()
			n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
			env.CreateNodes(t, n)
			pools[side] = append(pools[side], n.Name)
		}
		waitPoolUp(t, pools[side])
		env.CreatePod(t, testutil.MakePod(ns, "filler-"+side[:4]).NodeName(pools[side][0]).Request("4", "16Gi").Obj())
	}

	leastProfile := shippedProfile(t, least, nil)
	mostProfile := shippedProfile(t, most, map[string]any{"name": "NodeResourcesFit", "args": map[string]any{
		"scoringStrategy": map[string]any{"type": "MostAllocated", "resources": []any{
			map[string]any{"name": "cpu", "weight": 1}, map[string]any{"name": "memory", "weight": 1}}}}})
	env.StartScheduler(t, framework.SchedulerOptions{Config: schedulerConfig(t, ns, leastProfile, mostProfile)})

	// side's Deployment, on side's pool: the same workload but for the
	// pool, the name and the profile.
	workload := func(side string) *appsv1.Deployment {
		return newDeployment(ns, "packed-"+side[:4], 2, capacitySpec(ns, "pool-"+side, "packed-"+side[:4], side))
	}
	predicted := simulateCapacity(t, "-f", writeYAML(t, t.TempDir(), "workload.yaml", workload(least)),
		"--config", writeFile(t, "least.yaml", schedulerConfig(t, ns, leastProfile)),
		"--compare-config", writeFile(t, "most.yaml", schedulerConfig(t, ns, mostProfile)), "--kubeconfig", env.Kubeconfig)
	if predicted.Comparison == nil {
		t.Fatal("simulate --compare-config: no comparison in the output")
	}
	half := pools[least][0]
	sides := []struct {
		profile string
		res     simulateResult
	}{{least, predicted.simulateResult}, {most, predicted.Comparison.Result}}
	if on := onNode(sides[0].res, half); on != 0 || sides[0].res.Placed != 2 {
		t.Errorf("least allocated: %d of %d placed on the half-full node, want none of 2", on, sides[0].res.Placed)
	}
	if on := onNode(sides[1].res, half); on != 2 || len(predicted.Comparison.Moved) != 2 {
		t.Errorf("most allocated: %d of %d placed on the half-full node, %d moved; want both on it, both moved", on, sides[1].res.Placed, len(predicted.Comparison.Moved))
	}
	for _, m := range predicted.Comparison.Moved {
		if m.Why == "" {
			t.Errorf("moved %s without a why", m.Pod)
		}
	}
	for _, side := range sides {
		env.Create(t, workload(side.profile))
	}
	for _, side := range sides {
		bound, pending := settle(t, ns, "packed-"+side.profile[:4], 2)
		got := simulateResult{Placed: len(bound), Pending: pending}
		for _, n := range bound {
			got.Replicas = append(got.Replicas, struct{ Pod, Node, Reason string }{Node: n})
		}
		if onNode(got, pools[side.profile][0]) != onNode(side.res, half) || fmt.Sprint(perNode(got)) != fmt.Sprint(perNode(side.res)) || pending != 0 {
			t.Errorf("profile %s: the scheduler placed %v (%d Pending); simulate said %v", side.profile, bound, pending, nodesOf(side.res))
		}
	}
}

// capacityResult is the part of simulate's JSON these tests read beyond
// simulateResult.
type capacityResult struct {
	simulateResult
	Capacity *struct {
		Fits, Preempting int
		StoppedBy        string
		Reason           string
		ByNode           []struct {
			Name string
			Fits int
		}
	}
	Comparison *struct {
		Result simulateResult
		Moved  []struct{ Pod, Node, OtherNode, Why string }
	}
}

func simulateCapacity(t *testing.T, args ...string) capacityResult {
	t.Helper()
	var r capacityResult
	decodeSimulate(t, &r, args...)
	return r
}

func capacitySpec(ns, pool, app, scheduler string) v1.PodSpec {
	p := testutil.MakePod(ns, app).Placement().NodeSelector(map[string]string{pool: "yes"}).Request("1", "2Gi").Obj()
	p.Spec.SchedulerName = scheduler
	return p.Spec
}

// newDeployment is Deployment name in ns, its pods labelled app=name.
func newDeployment(ns, name string, replicas int32, s v1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: s}},
	}
}

// shippedProfile is the line's shipped profile named name, with one more
// pluginConfig entry when extra is not nil.
func shippedProfile(t *testing.T, name string, extra map[string]any) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(manifests.SchedulerConfig(), &doc); err != nil {
		t.Fatal(err)
	}
	p := doc["profiles"].([]any)[0].(map[string]any)
	p["schedulerName"] = name
	if extra != nil {
		pcs, _ := p["pluginConfig"].([]any)
		p["pluginConfig"] = append(pcs, extra)
	}
	return p
}

// schedulerConfig is a KubeSchedulerConfiguration of profiles, on a lease
// of the test's own so that it runs beside the shared scheduler.
func schedulerConfig(t *testing.T, ns string, profiles ...map[string]any) []byte {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(manifests.SchedulerConfig(), &doc); err != nil {
		t.Fatal(err)
	}
	ps := make([]any, len(profiles))
	for i, p := range profiles {
		ps[i] = p
	}
	doc["profiles"] = ps
	doc["leaderElection"] = map[string]any{"leaderElect": true, "resourceLock": "leases", "resourceNamespace": ns, "resourceName": "compare"}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func onNode(r simulateResult, node string) int {
	n := 0
	for _, rr := range r.Replicas {
		if rr.Node == node {
			n++
		}
	}
	return n
}

// perNode is how many replicas each node got, as sorted counts.
func perNode(r simulateResult) []int {
	by := map[string]int{}
	for _, rr := range r.Replicas {
		if rr.Node != "" {
			by[rr.Node]++
		}
	}
	var out []int
	for _, n := range by {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

func nodesOf(r simulateResult) []string {
	var out []string
	for _, rr := range r.Replicas {
		out = append(out, rr.Node)
	}
	return out
}

func taint(t *testing.T, node string, taint v1.Taint) {
	t.Helper()
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, taint)
	if _, err := env.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

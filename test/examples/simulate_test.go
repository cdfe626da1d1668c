package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// TestSimulateAgreesWithTheScheduler: on the full cluster, for workloads of
// five shapes, `kubectl placement simulate` (with the config the scheduler
// runs) predicts how many replicas get placed and how many stay Pending,
// and the zones the rules force; then the workload is applied and the
// scheduler does exactly that. Each workload is removed before the next.
// Four KWOK nodes of the test's own pool: a1, a2 in zone-a, b1 in zone-b,
// c1 in zone-c (c1 also labelled scheduler-profile=foo, which the second
// profile's addedAffinity requires).
func TestSimulateAgreesWithTheScheduler(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := "simulate-" + ns
	zones := map[string]string{"a1": "zone-a", "a2": "zone-a", "b1": "zone-b", "c1": "zone-c"}
	var names []string
	for _, short := range []string{"a1", "a2", "b1", "c1"} {
		n := framework.SchedulableNode(ns, short).Label(pool, "yes").Label(v1.LabelTopologyZone, zones[short]).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		if short == "c1" {
			n.Labels["scheduler-profile"] = "foo"
		}
		env.CreateNodes(t, n)
		names = append(names, n.Name)
	}
	waitPoolUp(t, names)
	configFile := profilePoolConfig(t, t.TempDir())
	zoneOf := func(node string) string { return zones[strings.TrimPrefix(node, ns+"-")] }

	spec := func(app string, cpu string) v1.PodSpec {
		p := testutil.MakePod(ns, app).Placement().NodeSelector(map[string]string{pool: "yes"}).Obj()
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
		return p.Spec
	}
	term := func(app, key string) v1.PodAffinityTerm {
		return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}
	}
	deployment := func(name string, replicas int32, s v1.PodSpec) *appsv1.Deployment {
		return newDeployment(ns, name, replicas, s)
	}

	anti := spec("anti", "100m")
	anti.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("anti", v1.LabelHostname)}}}

	cache := spec("cache", "100m")
	cache.NodeSelector[v1.LabelTopologyZone] = "zone-b"
	follower := spec("follower", "100m")
	follower.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("cache", v1.LabelTopologyZone)}}}

	foo := spec("foo", "100m")
	foo.SchedulerName = "placement-scheduler-foo"
	foo.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("foo", v1.LabelHostname)}}}

	spread := spec("spread", "100m")
	spread.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelTopologyZone,
		WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "spread", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "spread"}}, Spec: spread}},
	}

	big := spec("batch", "5")
	big.RestartPolicy = v1.RestartPolicyNever
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: ns},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](6), Completions: ptr.To[int32](6),
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "batch"}}, Spec: big}},
	}

	for _, tc := range []struct {
		name string
		// before is created and settled first, and stays while the
		// workload is simulated and applied.
		before    runtime.Object
		workload  runtime.Object
		app       string
		placed    int
		pending   int
		zones     []string // the zones the placed replicas land in, sorted, when the rules force them
		sameNodes bool     // the placed replicas' node set is forced too
	}{
		{name: "hostname anti-affinity, more replicas than nodes", workload: deployment("anti", 6, anti), app: "anti", placed: 4, pending: 2},
		{name: "zone affinity to another workload", before: deployment("cache", 1, cache), workload: deployment("follower", 3, follower), app: "follower",
			placed: 3, zones: []string{"zone-b", "zone-b", "zone-b"}, sameNodes: true},
		{name: "the second profile's addedAffinity", workload: deployment("foo", 3, foo), app: "foo", placed: 1, pending: 2, zones: []string{"zone-c"}, sameNodes: true},
		{name: "a StatefulSet spread over zones", workload: sts, app: "spread", placed: 3, zones: []string{"zone-a", "zone-b", "zone-c"}},
		{name: "a Job whose pods exceed capacity", workload: job, app: "batch", placed: 4, pending: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				env.Create(t, tc.before)
				settle(t, ns, "cache", 1)
			}
			file := filepath.Join(t.TempDir(), "workload.yaml")
			raw, err := yaml.Marshal(tc.workload)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			predicted := simulate(t, "-f", file, "--config", configFile, "--kubeconfig", env.Kubeconfig)
			if predicted.Placed != tc.placed || predicted.Pending != tc.pending || predicted.Preempting != 0 {
				t.Errorf("simulate: placed %d pending %d preempting %d, want %d, %d, 0", predicted.Placed, predicted.Pending, predicted.Preempting, tc.placed, tc.pending)
			}
			env.Create(t, tc.workload)
			bound, pending := settle(t, ns, tc.app, tc.placed+tc.pending)
			if len(bound) != predicted.Placed || pending != predicted.Pending {
				t.Errorf("the scheduler placed %d and left %d Pending; simulate predicted %d and %d", len(bound), pending, predicted.Placed, predicted.Pending)
			}
			var want, got, wantNodes, gotNodes []string
			for _, r := range predicted.Replicas {
				if r.Node != "" {
					want, wantNodes = append(want, zoneOf(r.Node)), append(wantNodes, r.Node)
				}
			}
			for _, n := range bound {
				got, gotNodes = append(got, zoneOf(n)), append(gotNodes, n)
			}
			sort.Strings(want)
			sort.Strings(got)
			if tc.zones != nil && (fmt.Sprint(want) != fmt.Sprint(tc.zones) || fmt.Sprint(got) != fmt.Sprint(tc.zones)) {
				t.Errorf("zones: simulate %v, scheduler %v, want %v", want, got, tc.zones)
			}
			sort.Strings(wantNodes)
			sort.Strings(gotNodes)
			if tc.sameNodes && fmt.Sprint(wantNodes) != fmt.Sprint(gotNodes) {
				t.Errorf("nodes: simulate %v, scheduler %v", wantNodes, gotNodes)
			}
		})
		waitNoPods(t, ns)
	}

	// A drain: three replicas that must not share a host take three of the
	// four nodes, and one replica pinned by hostname to the node drained.
	// Simulate says the first replica's pod moves to the one free node and
	// the pinned one's replacement stays Pending; after `kubectl drain`
	// (cordon, evictions) the scheduler does that.
	t.Run("kubectl drain", func(t *testing.T) {
		three := spec("anti", "100m")
		three.Affinity = anti.Affinity
		env.Create(t, deployment("anti", 3, three))
		bound, _ := settle(t, ns, "anti", 3)
		sort.Strings(bound)
		drained := bound[0]
		pinned := spec("pinned", "100m")
		pinned.NodeSelector[v1.LabelHostname] = drained
		env.Create(t, deployment("pinned", 1, pinned))
		settle(t, ns, "pinned", 1)
		free := ""
		for _, n := range names {
			if !contains(bound, n) {
				free = n
			}
		}

		predicted := simulate(t, "--drain", drained, "-n", ns, "--config", configFile, "--kubeconfig", env.Kubeconfig)
		moved := map[string]string{}
		for _, r := range predicted.Replicas {
			moved[strings.SplitN(strings.TrimPrefix(r.Pod, ns+"/"), "-", 2)[0]] = r.Node
		}
		if predicted.Placed != 1 || predicted.Pending != 1 || moved["anti"] != free || moved["pinned"] != "" {
			t.Fatalf("simulate --drain %s: %+v, want anti's pod on %s and pinned's Pending", drained, predicted, free)
		}
		env.MustKubectl(t, "drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2m")
		after, pending := settle(t, ns, "anti", 3)
		if pending != 0 || !contains(after, free) || contains(after, drained) {
			t.Errorf("after the drain anti runs on %v with %d Pending; simulate said %s took the drained pod", after, pending, free)
		}
		if after, pending := settle(t, ns, "pinned", 1); len(after) != 0 || pending != 1 {
			t.Errorf("after the drain pinned runs on %v with %d Pending; simulate said Pending", after, pending)
		}
	})
}

// simulateResult is the part of simulate's JSON these tests read.
type simulateResult struct {
	Placed, Pending, Preempting int
	Replicas                    []struct{ Pod, Node, Reason string }
}

// simulate runs `kubectl placement simulate ARGS -o json` in process.
func simulate(t *testing.T, args ...string) simulateResult {
	t.Helper()
	var r simulateResult
	decodeSimulate(t, &r, args...)
	return r
}

// decodeSimulate runs `kubectl placement simulate ARGS -o json` in process
// and decodes its output into r.
func decodeSimulate(t *testing.T, r any, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := placementcmd.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, placementcmd.BuildInfo{})
	cmd.SetArgs(append(append([]string{"simulate"}, args...), "-o", "json"))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("simulate %v: %v", args, err)
	}
	if err := json.Unmarshal(out.Bytes(), r); err != nil {
		t.Fatalf("simulate output is not JSON: %v\n%s", err, out.String())
	}
}

// settle waits until app has n live pods in ns, each bound or marked
// unschedulable by the scheduler, and returns the nodes of the bound ones
// and how many are Pending.
func settle(t *testing.T, ns, app string, n int) (bound []string, pending int) {
	t.Helper()
	env.Poll(t, fmt.Sprintf("%d pods of %s each bound or unschedulable", n, app), func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		bound, pending = nil, 0
		live := 0
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			switch c := framework.PodCondition(p, v1.PodScheduled); {
			case p.Spec.NodeName != "":
				bound = append(bound, p.Spec.NodeName)
			case c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable:
				pending++
			default:
				return false, nil
			}
		}
		return live == n, nil
	})
	return bound, pending
}

// waitNoPods deletes the test's workloads and waits until ns has no pods.
func waitNoPods(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	all := metav1.ListOptions{}
	if err := env.Client.AppsV1().Deployments(ns).DeleteCollection(ctx, opts, all); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.AppsV1().StatefulSets(ns).DeleteCollection(ctx, opts, all); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.BatchV1().Jobs(ns).DeleteCollection(ctx, opts, all); err != nil {
		t.Fatal(err)
	}
	env.Poll(t, "no pods left in "+ns, func(ctx context.Context) (bool, error) {
		if err := env.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, all); err != nil {
			return false, err
		}
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, all)
		return err == nil && len(list.Items) == 0, err
	})
}

// waitPoolUp waits until every named node is Ready and carries no taint
// at all (the node lifecycle controller lifts the not-ready taint once KWOK
// reports Ready).
func waitPoolUp(t *testing.T, names []string) {
	t.Helper()
	env.Poll(t, "the pool's nodes Ready and untainted", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if len(n.Spec.Taints) > 0 || !nodeReady(n) {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

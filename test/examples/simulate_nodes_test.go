package examples

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/drain"
	"k8s.io/utils/ptr"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// TestSimulateAddNodesLikeACordonedNode: simulate --add-nodes 2 --like a
// cordoned node of 4 CPUs, tainted dedicated=NS:NoSchedule, that runs a
// DaemonSet pod of 1500m, predicts that a Deployment of 6 replicas of 1 CPU
// gets 2 replicas on each copy (the cordon cleared, the DaemonSet's pod on
// each copy counted) and 2 Pending. Then two real nodes shaped like the
// copies join under the copies' names, the DaemonSet controller gives each
// its pod, the Deployment is applied, and the scheduler places it so.
func TestSimulateAddNodesLikeACordonedNode(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := "copies-" + ns
	node := func(name string) *v1.Node {
		n := testutil.MakeNode(name).Capacity("4", "16Gi", 110).Ready().Label(pool, "yes").
			Taint("dedicated", ns, v1.TaintEffectNoSchedule).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		return n
	}
	like := ns + "-like"
	env.CreateNodes(t, node(like))
	waitTainted(t, like, func(taints []v1.Taint) bool { return len(taints) == 1 })
	cordon(t, like)
	waitTainted(t, like, func(taints []v1.Taint) bool {
		return slices.ContainsFunc(taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeUnschedulable })
	})

	tolerate := []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: ns, Effect: v1.TaintEffectNoSchedule}}
	labels := map[string]string{"app": "agent"}
	agent := testutil.MakePod(ns, "agent").Placement().NodeSelector(map[string]string{pool: "yes"}).Obj().Spec
	agent.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")}
	agent.Tolerations = tolerate
	env.Create(t, &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: agent}},
	})
	waitDaemonPods(t, ns, 1)

	web := testutil.MakePod(ns, "web").Placement().NodeSelector(map[string]string{pool: "yes"}).Obj().Spec
	web.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	web.Tolerations = tolerate
	deploy := newDeployment(ns, "web", 6, web)
	file := writeYAML(t, t.TempDir(), "web.yaml", deploy)
	predicted := simulateFull(t, "-f", file, "--add-nodes", "2", "--like", like, "--kubeconfig", env.Kubeconfig)
	copies := []string{like + "-sim-1", like + "-sim-2"}
	onCopy := map[string]int{}
	for _, r := range predicted.Replicas {
		if r.Node != "" {
			onCopy[r.Node]++
		}
	}
	if predicted.Placed != 4 || predicted.Pending != 2 || onCopy[copies[0]] != 2 || onCopy[copies[1]] != 2 {
		t.Fatalf("simulate: placed %d pending %d on %v, want 2 on each copy and 2 Pending", predicted.Placed, predicted.Pending, onCopy)
	}
	if len(predicted.Edits) != 1 || !strings.Contains(predicted.Edits[0], "cleared the cordon, node.kubernetes.io/unschedulable:NoSchedule") ||
		!strings.Contains(predicted.Edits[0], "1 DaemonSet pod(s) on each: "+ns+"/agent") {
		t.Errorf("edit line %q: want the cordon cleared and the agent on each copy", predicted.Edits)
	}

	// The real nodes join as the copies, and get their DaemonSet pods.
	for _, name := range copies {
		env.CreateNodes(t, node(name))
	}
	waitDaemonPods(t, ns, 3)
	env.Create(t, deploy)
	bound, pending := settle(t, ns, "web", 6)
	got := map[string]int{}
	for _, n := range bound {
		got[n]++
	}
	if len(bound) != predicted.Placed || pending != predicted.Pending || fmt.Sprint(got) != fmt.Sprint(onCopy) {
		t.Errorf("the scheduler placed %v and left %d Pending; simulate predicted %v and %d", got, pending, onCopy, predicted.Pending)
	}
}

// TestSimulateDrainRefusedAsKubectl: on a node running a Deployment's pod
// with an emptyDir volume, a pod without a controller, and a pod two
// PodDisruptionBudgets select, simulate --drain reports the refusals
// kubectl drain makes, word for word, and the pod the Eviction API will
// not evict; kubectl's own drain library (k8s.io/kubectl/pkg/drain, run
// with --ignore-daemonsets and a server-side dry run) refuses the same
// pods for the same reasons, and its evictions fail on that pod alone.
func TestSimulateDrainRefusedAsKubectl(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	name := ns + "-d1"
	n := testutil.MakeNode(name).Capacity("8", "32Gi", 110).Ready().Taint("dedicated", ns, v1.TaintEffectNoSchedule).Obj()
	n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
	env.CreateNodes(t, n)
	waitTainted(t, name, func(taints []v1.Taint) bool { return len(taints) == 1 })

	spec := func(app string) v1.PodSpec {
		s := testutil.MakePod(ns, app).Placement().NodeSelector(map[string]string{v1.LabelHostname: name}).Obj().Spec
		s.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: ns, Effect: v1.TaintEffectNoSchedule}}
		return s
	}
	deployment := func(app string, labels map[string]string, s v1.PodSpec) *appsv1.Deployment {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
				Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: s}},
		}
	}
	scratch := spec("scratch")
	scratch.Volumes = []v1.Volume{{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pdb := func(pdbName string, sel map[string]string) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: pdbName, Namespace: ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: sel}},
		}
	}
	bare := testutil.MakePod(ns, "bare").Placement().Label("app", "bare").Obj()
	bare.Spec = spec("bare")
	env.Create(t,
		deployment("scratch", map[string]string{"app": "scratch"}, scratch),
		deployment("twice", map[string]string{"app": "twice", "tier": "front"}, spec("twice")),
		deployment("plain", map[string]string{"app": "plain"}, spec("plain")),
		bare,
		pdb("twice", map[string]string{"app": "twice"}), pdb("front", map[string]string{"tier": "front"}),
	)
	pods := map[string]string{} // app -> ns/pod
	env.Poll(t, "the four pods running on "+name, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(pods)
		for _, p := range list.Items {
			if p.Spec.NodeName == name && p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
				pods[p.Labels["app"]] = ns + "/" + p.Name
			}
		}
		return len(pods) == 4, nil
	})
	env.Poll(t, "the disruption controller to process both budgets", func(ctx context.Context) (bool, error) {
		for _, pdbName := range []string{"twice", "front"} {
			b, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdbName, metav1.GetOptions{})
			if err != nil || b.Status.ObservedGeneration < b.Generation || b.Status.ExpectedPods == 0 {
				return false, err
			}
		}
		return true, nil
	})

	// kubectl drain --ignore-daemonsets: its filters' refusals.
	helper := &drain.Helper{Ctx: context.Background(), Client: env.Client, IgnoreAllDaemonSets: true, GracePeriodSeconds: -1,
		Timeout: time.Minute, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, DryRunStrategy: cmdutil.DryRunServer}
	_, errs := helper.GetPodsForDeletion(name)
	var kubectlSays []string
	for _, err := range errs {
		kubectlSays = append(kubectlSays, err.Error())
	}
	sort.Strings(kubectlSays)

	predicted := simulateFull(t, "--drain", name, "-n", ns, "--kubeconfig", env.Kubeconfig)
	d := predicted.Drain
	if d == nil {
		t.Fatal("simulate --drain: no drain report")
	}
	var simulateSays []string
	for _, r := range d.Refused {
		simulateSays = append(simulateSays, r.Message)
	}
	sort.Strings(simulateSays)
	want := []string{
		"cannot delete Pods that declare no controller (use --force to override): " + pods["bare"],
		"cannot delete Pods with local storage (use --delete-emptydir-data to override): " + pods["scratch"],
	}
	if fmt.Sprint(kubectlSays) != fmt.Sprint(want) {
		t.Errorf("kubectl drain refuses with\n%q, want\n%q", kubectlSays, want)
	}
	if fmt.Sprint(simulateSays) != fmt.Sprint(kubectlSays) || d.Status != simulatev1alpha1.DrainRefused {
		t.Errorf("simulate (%s) refuses with\n%q; kubectl drain with\n%q", d.Status, simulateSays, kubectlSays)
	}
	var stuck []string
	for _, s := range d.Staying {
		if s.Kind == simulatev1alpha1.StayPDBs {
			stuck = append(stuck, s.Pod)
		}
	}
	if fmt.Sprint(stuck) != fmt.Sprint([]string{pods["twice"]}) {
		t.Errorf("simulate: pods under several budgets %v, want %s", stuck, pods["twice"])
	}

	// With the flags kubectl asks for, its evictions (a server-side dry
	// run: nothing is evicted) fail on that pod alone, with a 500.
	helper.DeleteEmptyDirData, helper.Force = true, true
	list, errs := helper.GetPodsForDeletion(name)
	if len(errs) != 0 {
		t.Fatalf("kubectl drain --delete-emptydir-data --force still refuses: %v", errs)
	}
	err := helper.DeleteOrEvictPods(list.Pods())
	twice := strings.TrimPrefix(pods["twice"], ns+"/")
	if err == nil || strings.Count(err.Error(), "error when evicting") != 1 || !strings.Contains(err.Error(), fmt.Sprintf("pods/%q", twice)) ||
		!strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
		t.Errorf("kubectl's evictions: %v; want one failure, %s's, for its two budgets", err, twice)
	}
	predicted = simulateFull(t, "--drain", name, "-n", ns, "--delete-emptydir-data", "--force", "--kubeconfig", env.Kubeconfig)
	if predicted.Drain.Status != simulatev1alpha1.DrainFails || len(predicted.Drain.Refused) != 0 || predicted.Placed+predicted.Pending != 2 {
		t.Errorf("simulate with the flags: status %s, refused %v, %d replacement(s): want fails, none refused, scratch's and plain's replacements",
			predicted.Drain.Status, predicted.Drain.Refused, predicted.Placed+predicted.Pending)
	}
}

// simulateFull runs `kubectl placement simulate ARGS -o json` in process
// and decodes the whole result.
func simulateFull(t *testing.T, args ...string) *simulatev1alpha1.PlacementSimulation {
	t.Helper()
	r := &simulatev1alpha1.PlacementSimulation{}
	decodeSimulate(t, r, args...)
	return r
}

// waitTainted waits until node's taints satisfy ok (the node lifecycle
// controller keeps the condition and cordon taints in step).
func waitTainted(t *testing.T, node string, ok func([]v1.Taint) bool) {
	t.Helper()
	env.Poll(t, "the taints of "+node, func(ctx context.Context) (bool, error) {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(n) && ok(n.Spec.Taints), nil
	})
}

func cordon(t *testing.T, node string) {
	t.Helper()
	patch := []byte(`{"spec":{"unschedulable":true}}`)
	if _, err := env.Client.CoreV1().Nodes().Patch(context.Background(), node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitDaemonPods waits until ns's DaemonSet pods, n of them, run.
func waitDaemonPods(t *testing.T, ns string, n int) {
	t.Helper()
	env.Poll(t, fmt.Sprintf("%d DaemonSet pods running", n), func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == v1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return running == n, nil
	})
}

package simulate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/daemon"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// TestDifferentialAddNodesAgainstInTree: on generated clusters, simulate
// --add-nodes K --like NODE (NODE often cordoned, NotReady, under a taint
// of its own) with DaemonSets in the snapshot places a workload's replicas
// on the same nodes as the in-tree loop of TestDifferentialAgainstInTree
// does on the cluster as it is once K such nodes have really joined: built
// here fresh (the node's labels, its operator taint, its capacity and
// images, Ready),
// each with the pods the upstream DaemonSet controller decides to run there
// (daemon.NodeShouldRunDaemonPod, daemon.NewPod, pinned as it pins them),
// scheduled through the in-tree framework before the workload.
func TestDifferentialAddNodesAgainstInTree(t *testing.T) {
	ctx, cases, seed, prof := diffRun(t)
	logger := klog.FromContext(ctx)
	mismatches, daemons := 0, 0
	for i := 0; i < cases; i++ {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)+1<<32))
		c, objs := generate(r)
		like := c.Nodes[r.IntN(len(c.Nodes))].DeepCopy()
		if r.IntN(2) == 0 {
			like.Spec.Unschedulable = true
			like.Spec.Taints = append(like.Spec.Taints, v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule})
		}
		if r.IntN(3) == 0 {
			like.Spec.Taints = append(like.Spec.Taints, v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute})
			like.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
		}
		for j, n := range c.Nodes {
			if n.Name == like.Name {
				c.Nodes[j] = like
			}
		}
		var sets []*appsv1.DaemonSet
		for k := r.IntN(3); k > 0; k-- {
			ds := generatedDaemonSet(r, k)
			sets = append(sets, ds)
			c.Others = append(c.Others, ds)
		}
		copies := 1 + r.IntN(3)

		edited, _, err := (&Edits{AddNodes: copies, Like: like.Name}).Apply(c)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		replicas, _, err := Workloads(objs, "default", edited)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		res, err := Run(ctx, edited, prof, replicas, Options{})
		if err != nil {
			t.Fatalf("case %d: simulate: %v", i, err)
		}

		joined := *c
		joined.Nodes = append([]*v1.Node(nil), c.Nodes...)
		var first []Replica
		var pinned []string
		for k := 1; k <= copies; k++ {
			name := fmt.Sprintf("%s-sim-%d", like.Name, k)
			w := tu.MakeNode(name).Labels(like.Labels).Label(v1.LabelHostname, name).Ready()
			for _, taint := range like.Spec.Taints {
				if taint.Key == "dedicated" {
					w.Taint(taint.Key, taint.Value, taint.Effect)
				}
			}
			n := w.Obj()
			// simulate's copies keep NODE's images (docs/simulate.md): the
			// joined node is taken to come from the same machine image.
			n.Status.Capacity, n.Status.Allocatable, n.Status.Images = like.Status.Capacity, like.Status.Allocatable, like.Status.Images
			joined.Nodes = append(joined.Nodes, n)
			for _, ds := range sets {
				if run, _ := daemon.NodeShouldRunDaemonPod(logger, n, ds); !run {
					continue
				}
				pod := daemon.NewPod(ds, "")
				pod.Name, pod.UID = ds.Name+"-"+name, types.UID(ds.Name+"-"+name)
				pod.Spec.Affinity = daemonutil.ReplaceDaemonSetPodNodeNameNodeAffinity(pod.Spec.Affinity, name)
				pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
				first = append(first, Replica{Pod: pod})
				pinned = append(pinned, name)
			}
		}
		daemons += len(first)
		inTreeReplicas, _, err := Workloads(objs, "default", &joined)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want, err := inTreeOneByOne(ctx, &joined, append(first, inTreeReplicas...))
		if err != nil {
			t.Fatalf("case %d: in-tree loop: %v", i, err)
		}
		got := make([]string, len(res.Replicas))
		for j, rr := range res.Replicas {
			got[j] = rr.Node
		}
		bound := 0
		for _, p := range edited.Pods {
			if p.Spec.NodeName != "" && p.Spec.NodeName != like.Name && find(c.Nodes, p.Spec.NodeName) == nil {
				bound++
			}
		}
		if fmt.Sprint(want[:len(first)]) != fmt.Sprint(pinned) || bound != len(first) || fmt.Sprint(got) != fmt.Sprint(want[len(first):]) {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d): simulate bound %d DaemonSet pod(s) to the copies and placed the workload on %q; "+
					"in-tree: DaemonSet pods on %q (pinned to %q), workload on %q", i, seed, bound, got, want[:len(first)], pinned, want[len(first):])
			}
		}
	}
	t.Logf("%d cases, %d mismatches; %d DaemonSet pods on new nodes in all", cases, mismatches, daemons)
	if daemons == 0 {
		t.Error("the generator put no DaemonSet pod on a new node: it must")
	}
}

// generatedDaemonSet draws a DaemonSet: requests (at most 300m: two
// always fit the smallest generated node, as simulate binds them without
// a fit check), sometimes a pool
// selector, sometimes a toleration of the generator's dedicated taints,
// sometimes the labels of pods the workloads' affinity terms select.
func generatedDaemonSet(r *rand.Rand, k int) *appsv1.DaemonSet {
	name := fmt.Sprintf("agent-%d", k)
	labels := map[string]string{"app": []string{name, "cache", "db"}[r.IntN(3)]}
	spec := tu.MakePod("", "").Placement().Request(fmt.Sprintf("%dm", 100*(1+r.IntN(3))), "64Mi").Obj().Spec
	if r.IntN(2) == 0 {
		spec.NodeSelector = map[string]string{"pool": []string{"a", "b"}[r.IntN(2)]}
	}
	if r.IntN(2) == 0 {
		spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("ds-" + name)},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
}

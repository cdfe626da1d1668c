package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// TestDifferentialAgainstInTree: on generated clusters and workloads,
// simulate (the shipped profile, our plugins, explain's Placer and its
// snapshot reservations) places the same replicas on the same nodes as a
// loop that schedules them one by one through the framework built from
// upstream's default profile with the in-tree plugins, assuming each pod
// in the scheduler's own cache before the next cycle. Where several nodes
// tie on the top score both take the first by name (the scheduler picks at
// random), so the node lists must agree, and so the placed and pending
// counts. Nothing preempts: every pod has the same priority.
//
// SIMULATE_DIFF_CASES sets the number of cases (default 200);
// SIMULATE_DIFF_SEED the seed. The long run:
//
//	SIMULATE_DIFF_CASES=10000 go test ./internal/simulate -run TestDifferentialAgainstInTree -timeout 2h
func TestDifferentialAgainstInTree(t *testing.T) {
	ctx, cases, seed, prof := diffRun(t)
	mismatches, placed, pending := 0, 0, 0
	for i := 0; i < cases; i++ {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		c, objs := generate(r)
		res, _, ok := compareCase(ctx, t, fmt.Sprintf("case %d (seed %d)", i, seed), prof, c, objs, nil)
		placed += res.Placed
		pending += res.Pending
		if !ok {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d): %s", i, seed, res.mismatch)
			}
		}
	}
	t.Logf("%d cases, %d mismatches; %d replicas placed, %d pending in all", cases, mismatches, placed, pending)
	if placed == 0 || pending == 0 {
		t.Errorf("the generator produced placed %d, pending %d: it must reach both outcomes", placed, pending)
	}
}

// diffRun is what a differential run takes: a quiet context, the number of
// cases and the seed (SIMULATE_DIFF_CASES, SIMULATE_DIFF_SEED; 30 cases
// with -short), and the shipped profile.
func diffRun(t *testing.T) (context.Context, int, int, *config.KubeSchedulerProfile) {
	t.Helper()
	cases := envInt(t, "SIMULATE_DIFF_CASES", 200)
	seed := envInt(t, "SIMULATE_DIFF_SEED", 1)
	if testing.Short() {
		cases = 30
	}
	prof := shipped(t)
	ctx := klog.NewContext(context.Background(), logr.Discard())
	return ctx, cases, seed, prof
}

// caseResult is simulate's result on one case, and how it differs from
// the in-tree loop's when it does.
type caseResult struct {
	*simulatev1alpha1.PlacementSimulation
	mismatch string
}

// compareCase places objs' replicas over c with simulate and with the
// in-tree loop (over inTree(c, replicas) when inTree is set: what the
// controllers simulate models inside its placer have created by then) and
// says whether every replica got the same node; name names the case in
// errors.
func compareCase(ctx context.Context, t *testing.T, name string, prof *config.KubeSchedulerProfile, c *explain.Cluster, objs []runtime.Object,
	inTree func(*explain.Cluster, []Replica) *explain.Cluster) (caseResult, []Replica, bool) {
	t.Helper()
	replicas, _, err := Workloads(objs, "default", c)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := Run(ctx, c, prof, replicas, Options{})
	if err != nil {
		t.Fatalf("%s: simulate: %v", name, err)
	}
	inTreeC := c
	if inTree != nil {
		inTreeC = inTree(c, replicas)
	}
	want, err := inTreeOneByOne(ctx, inTreeC, replicas)
	if err != nil {
		t.Fatalf("%s: in-tree loop: %v", name, err)
	}
	got := make([]string, len(res.Replicas))
	for j, rr := range res.Replicas {
		got[j] = rr.Node
	}
	wantPlaced := 0
	for _, n := range want {
		if n != "" {
			wantPlaced++
		}
	}
	if res.Placed != wantPlaced || res.Pending != len(want)-wantPlaced || res.Preempting != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		return caseResult{PlacementSimulation: res, mismatch: fmt.Sprintf("simulate placed %d pending %d preempting %d on %q; in-tree one by one placed %d pending %d on %q",
			res.Placed, res.Pending, res.Preempting, got, wantPlaced, len(want)-wantPlaced, want)}, replicas, false
	}
	return caseResult{PlacementSimulation: res}, replicas, true
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return n
}

// inTreeOneByOne schedules pods in order as kube-scheduler's loop does:
// UpdateSnapshot from the cache, PreFilter, Filter on every node, PreScore
// and Score on the feasible ones, the top total (first name on a tie),
// then AssumePod in the cache. It returns each pod's node ("" Pending).
func inTreeOneByOne(ctx context.Context, c *explain.Cluster, replicas []Replica) ([]string, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, err
	}
	return inTreeOneByOneWith(ctx, c, replicas, &cfg.Profiles[0])
}

// inTreeOneByOneWith is inTreeOneByOne under prof, a profile of in-tree
// plugins.
func inTreeOneByOneWith(ctx context.Context, c *explain.Cluster, replicas []Replica, prof *config.KubeSchedulerProfile) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	client := fake.NewSimpleClientset(clusterObjects(c)...) //nolint:staticcheck // read-only; NewClientset's field management buys nothing here
	inf := informers.NewSharedInformerFactory(client, 0)
	claims := assumecache.NewAssumeCache(logger, inf.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	snapshot := cache.NewEmptySnapshot()
	metrics.Register()
	fw, err := frameworkruntime.NewFramework(ctx, intree.NewInTreeRegistry(), prof,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(inf),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithPodNominator(noNominations{}),
		frameworkruntime.WithSharedDRAManager(dynamicresources.NewDRAManager(ctx, claims, nil, inf)),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(inf.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done())),
	)
	if err != nil {
		return nil, err
	}
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())
	sched := k8sline.NewCache(ctx, false)
	for _, n := range c.Nodes {
		sched.AddNode(logger, n)
	}
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" {
			if err := sched.AddPod(logger, p); err != nil {
				return nil, err
			}
		}
	}
	out := make([]string, len(replicas))
	for i, r := range replicas {
		if err := sched.UpdateSnapshot(logger, snapshot); err != nil {
			return nil, err
		}
		node, err := cycle(ctx, fw, snapshot, r.Pod)
		if err != nil {
			return nil, err
		}
		if node == "" {
			continue
		}
		assumed := r.Pod.DeepCopy()
		assumed.Spec.NodeName = node
		if err := sched.AssumePod(logger, assumed); err != nil {
			return nil, err
		}
		out[i] = node
	}
	return out, nil
}

func cycle(ctx context.Context, fw framework.Framework, snapshot *cache.Snapshot, pod *v1.Pod) (string, error) {
	state := framework.NewCycleState()
	pre, st, _ := fw.RunPreFilterPlugins(ctx, state, pod)
	if st.IsRejected() {
		return "", nil
	}
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		return "", err
	}
	var feasible []fwk.NodeInfo
	for _, ni := range all {
		if !pre.AllNodes() && !pre.NodeNames.Has(ni.Node().Name) {
			continue
		}
		st := fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
		if st.Code() == fwk.Error {
			return "", st.AsError()
		}
		if st.IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		return "", nil
	}
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() && !st.IsSkip() {
		return "", st.AsError()
	}
	scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return "", st.AsError()
	}
	best := scores[0]
	for _, s := range scores[1:] {
		if s.TotalScore > best.TotalScore || s.TotalScore == best.TotalScore && s.Name < best.Name {
			best = s
		}
	}
	return best.Name, nil
}

type noNominations struct{}

func (noNominations) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (noNominations) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (noNominations) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (noNominations) NominatedPodsForNode(string) []fwk.PodInfo                     { return nil }

// generate draws a small cluster (nodes over zones and pools, some tainted
// or cordoned, pods already bound with labels, requests and anti-affinity)
// and one or two workloads whose replicas constrain one another.
// diffImage is the image some generated nodes hold and some workloads run.
const diffImage = "registry.example/app:v1"

func generate(r *rand.Rand) (*explain.Cluster, []runtime.Object) {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	c := &explain.Cluster{Namespaces: []*v1.Namespace{tu.MakeNamespace("default", nil), tu.MakeNamespace("team", map[string]string{"team": "yes"})}}
	nodes := 2 + r.IntN(9)
	// One image, one size on every node that holds it (the scheduler's
	// cache keeps one size an image).
	imageSize := int64(100+r.IntN(900)) << 20
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("n%02d", i)
		w := tu.MakeNode(name).Capacity(strconv.Itoa(1+r.IntN(4)), "8Gi", int64(2+r.IntN(8))).Ready().Label("pool", pick("a", "b"))
		if r.IntN(6) > 0 {
			w.Label(v1.LabelTopologyZone, pick("z1", "z2", "z3"))
		}
		if r.IntN(5) == 0 {
			w.Taint("dedicated", pick("x", "y"), v1.TaintEffect(pick(string(v1.TaintEffectNoSchedule), string(v1.TaintEffectPreferNoSchedule))))
		}
		n := w.Obj()
		n.Spec.Unschedulable = r.IntN(12) == 0
		if r.IntN(2) == 0 {
			// ImageLocality scores by the nodes holding an image.
			n.Status.Images = []v1.ContainerImage{{Names: []string{diffImage}, SizeBytes: imageSize}}
		}
		c.Nodes = append(c.Nodes, n)
	}
	for i := r.IntN(12); i > 0; i-- {
		ns := pick("default", "default", "team")
		p := tu.MakePod(ns, fmt.Sprintf("existing-%d", i)).UID(fmt.Sprintf("e-%d", i)).Placement().
			Label("app", pick("web", "db", "cache")).NodeName(c.Nodes[r.IntN(nodes)].Name).
			Request(fmt.Sprintf("%dm", 100*(1+r.IntN(8))), "128Mi").Obj()
		if r.IntN(5) == 0 {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
				podTerm(r, pick("web", "api"))}}}
		}
		c.Pods = append(c.Pods, p)
	}
	var objs []runtime.Object
	for w := 1 + r.IntN(2); w > 0; w-- {
		app := pick("web", "api")
		tmpl := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
			Spec: *tu.MakePod("", "").Placement().Request(fmt.Sprintf("%dm", 100*(1+r.IntN(10))), "64Mi").Obj().Spec.DeepCopy()}
		aff := &v1.Affinity{}
		if r.IntN(2) == 0 {
			aff.PodAntiAffinity = &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{podTerm(r, app)}}
		}
		if r.IntN(3) == 0 {
			if aff.PodAntiAffinity == nil {
				aff.PodAntiAffinity = &v1.PodAntiAffinity{}
			}
			aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []v1.WeightedPodAffinityTerm{{Weight: int32(1 + r.IntN(100)), PodAffinityTerm: podTerm(r, app)}}
		}
		if r.IntN(4) == 0 {
			aff.PodAffinity = &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{podTerm(r, pick("cache", "db", app))}}
		}
		if r.IntN(4) == 0 {
			aff.PodAffinity = &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: int32(1 + r.IntN(100)), PodAffinityTerm: podTerm(r, pick("cache", "db"))}}}
		}
		if r.IntN(4) == 0 {
			aff.NodeAffinity = &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: int32(1 + r.IntN(100)),
				Preference: tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, pick("a", "b")))}}}
		}
		tmpl.Spec.Affinity = aff
		if r.IntN(4) == 0 {
			tmpl.Spec.NodeSelector = map[string]string{"pool": pick("a", "b")}
		}
		if r.IntN(3) == 0 {
			tmpl.Spec.Tolerations = []v1.Toleration{tu.Tol("dedicated", v1.TolerationOpEqual, pick("x", "y"), "")}
		}
		if r.IntN(2) == 0 {
			tmpl.Spec.Containers[0].Image = diffImage
		}
		if r.IntN(3) == 0 {
			tmpl.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{
				MaxSkew: int32(1 + r.IntN(2)), TopologyKey: pick(v1.LabelTopologyZone, v1.LabelHostname),
				WhenUnsatisfiable: v1.UnsatisfiableConstraintAction(pick(string(v1.DoNotSchedule), string(v1.ScheduleAnyway))),
				LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}}
		}
		replicas := int32(1 + r.IntN(12))
		name := fmt.Sprintf("%s-%d", app, w)
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		meta := metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("w-" + name)}
		switch r.IntN(3) {
		case 0:
			objs = append(objs, &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta,
				Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: sel, Template: tmpl}})
		case 1:
			objs = append(objs, &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta,
				Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: sel, Template: tmpl}})
		default:
			tmpl.Spec.RestartPolicy = v1.RestartPolicyNever
			objs = append(objs, &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta,
				Spec: batchv1.JobSpec{Parallelism: &replicas, Template: tmpl}})
		}
	}
	return c, objs
}

// podTerm selects app over the hostname or the zone, in the pod's own
// namespace or, sometimes, in the namespaces labelled team=yes.
func podTerm(r *rand.Rand, app string) v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		TopologyKey:   []string{v1.LabelHostname, v1.LabelTopologyZone}[r.IntN(2)],
	}
	if r.IntN(5) == 0 {
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "yes"}}
	}
	return t
}

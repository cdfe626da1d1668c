package interpodaffinity

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	plugintesting "k8s.io/kubernetes/pkg/scheduler/framework/plugins/testing"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// Topology keys used throughout the tests.
const (
	zone = affinitytest.Zone
	rack = affinitytest.Rack
	host = affinitytest.Host
)

// Expected statuses, rendered by testutil.StatusString.
const (
	pass           = ""
	skip           = "Skip"
	affinityReject = "UnschedulableAndUnresolvable: " + ErrReasonAffinityRulesNotMatch
	antiReject     = "Unschedulable: " + ErrReasonAntiAffinityRulesNotMatch
	existingReject = "Unschedulable: " + ErrReasonExistingAntiAffinityRulesNotMatch
)

// testEnv is a plugin over a fixed snapshot, with namespaces in its informer.
type testEnv struct {
	ctx  context.Context
	pl   *InterPodAffinity
	snap *cache.Snapshot
}

// newEnv builds the plugin through its factory with args (nil, or raw JSON as
// kube-scheduler passes it) over a snapshot of pods and nodes.
func newEnv(t testing.TB, args runtime.Object, fts feature.Features, pods []*v1.Pod, nodes []*v1.Node, namespaces ...*v1.Namespace) *testEnv {
	t.Helper()
	schedmetrics.Register() // Parallelizer.Until reports a metric
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	objs := make([]runtime.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	snap := cache.NewSnapshot(pods, nodes)
	factory := func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, obj, h, fts)
	}
	p := plugintesting.SetupPluginWithInformers(ctx, t, frameworkruntime.PluginFactory(factory), args, snap, objs)
	pl := p.(*InterPodAffinity)
	pl.caches.admitEverything()
	return &testEnv{ctx: ctx, pl: pl, snap: snap}
}

// admitEverything makes every cache keep what it is asked about from the
// first call on, so that the tests of the plugin's decisions go through
// the caches' paths (the tables' first calls have tests of their own: a
// table builds its view from the second call on).
func (c *caches) admitEverything() {
	for _, x := range []any{c.sums, c.topology, c.summaries} {
		if p, ok := x.(interface{ Prime() }); ok {
			p.Prime()
		}
	}
}

func (e *testEnv) allNodes(t testing.TB) []fwk.NodeInfo {
	t.Helper()
	nis, err := e.snap.NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	return nis
}

func (e *testEnv) nodeInfo(t testing.TB, name string) fwk.NodeInfo {
	t.Helper()
	ni, err := e.snap.NodeInfos().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni
}

// preFilter runs PreFilter on a fresh cycle state.
func (e *testEnv) preFilter(t testing.TB, pod *v1.Pod) (fwk.CycleState, *fwk.Status) {
	t.Helper()
	cs := framework.NewCycleState()
	res, st := e.pl.PreFilter(e.ctx, cs, pod, e.allNodes(t))
	if res != nil {
		t.Errorf("PreFilter returned a PreFilterResult %v; upstream never does", res)
	}
	return cs, st
}

// filterAll runs Filter on every node with a node object and returns the
// rendered statuses by node name.
func (e *testEnv) filterAll(t *testing.T, cs fwk.CycleState, pod *v1.Pod) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ni := range e.allNodes(t) {
		if ni.Node() == nil {
			continue
		}
		out[ni.Node().Name] = tu.StatusString(e.pl.Filter(e.ctx, cs, pod, ni))
	}
	return out
}

// scoreResult is what the score phase produced for one pod.
type scoreResult struct {
	preScore   string
	raw        map[string]int64
	normalized map[string]int64
}

// score runs PreScore, then Score and NormalizeScore over the named nodes
// (all nodes with a node object when none are named), as the framework does
// for the feasible ones.
func (e *testEnv) score(t *testing.T, pod *v1.Pod, feasible ...string) scoreResult {
	t.Helper()
	var nodes []fwk.NodeInfo
	if len(feasible) == 0 {
		for _, ni := range e.allNodes(t) {
			if ni.Node() != nil {
				nodes = append(nodes, ni)
			}
		}
	} else {
		for _, n := range feasible {
			nodes = append(nodes, e.nodeInfo(t, n))
		}
	}
	cs := framework.NewCycleState()
	r := scoreResult{preScore: tu.StatusString(e.pl.PreScore(e.ctx, cs, pod, nodes))}
	if r.preScore != pass {
		return r
	}
	r.raw = map[string]int64{}
	list := make(fwk.NodeScoreList, 0, len(nodes))
	for _, ni := range nodes {
		s, st := e.pl.Score(e.ctx, cs, pod, ni)
		if !tu.CheckStatus(t, fmt.Sprintf("Score(%s)", ni.Node().Name), st, fwk.Success, "") {
			t.FailNow()
		}
		r.raw[ni.Node().Name] = s
		list = append(list, fwk.NodeScore{Name: ni.Node().Name, Score: s})
	}
	if !tu.CheckStatus(t, "NormalizeScore", e.pl.NormalizeScore(e.ctx, cs, pod, list), fwk.Success, "") {
		t.FailNow()
	}
	r.normalized = map[string]int64{}
	for _, ns := range list {
		r.normalized[ns.Name] = ns.Score
	}
	return r
}

// Fixture topology: two zones, racks across them, and one node in no zone.
//
//	n1 z1/r1   n2 z1/r2   n3 z2/r1   n4 -/r3
func fixtureNodes() []*v1.Node {
	return []*v1.Node{
		tu.MakeNode("n1").Label(zone, "z1").Label(rack, "r1").Obj(),
		tu.MakeNode("n2").Label(zone, "z1").Label(rack, "r2").Obj(),
		tu.MakeNode("n3").Label(zone, "z2").Label(rack, "r1").Obj(),
		tu.MakeNode("n4").Label(rack, "r3").Obj(),
	}
}

// sel, placed and incoming are affinitytest's, shorter.
func sel(kv ...string) *metav1.LabelSelector { return affinitytest.Sel(kv...) }

func placed(ns, name, node string) *tu.PodWrapper { return affinitytest.Placed(ns, name, node) }

func incoming(ns string) *tu.PodWrapper { return affinitytest.Incoming(ns) }

func statuses(n1, n2, n3, n4 string) map[string]string {
	return map[string]string{"n1": n1, "n2": n2, "n3": n3, "n4": n4}
}

func mustPodInfo(t *testing.T, p *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

func mustState(t *testing.T, cs fwk.CycleState) *preFilterState {
	t.Helper()
	s, err := preFilterStateOf(cs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scores builds a per-node map for n1..n4 of the fixture.
func scores(n1, n2, n3, n4 int64) map[string]int64 {
	return map[string]int64{"n1": n1, "n2": n2, "n3": n3, "n4": n4}
}

package pluginbench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/test/perf"
)

// nodesEnv selects the workload size: upstream's workload "<N>Nodes"
// (5000 by default; 500 is the other size the affinity cases have).
const nodesEnv = "PLUGINBENCH_NODES"

func benchNodes(tb testing.TB) int {
	v := os.Getenv(nodesEnv)
	if v == "" {
		return 5000
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		tb.Fatalf("%s=%q: want a node count (500 or 5000: upstream's workload <N>Nodes)", nodesEnv, v)
	}
	return n
}

// workload is one cluster shape: an upstream test case, plus what upstream's
// plugins decide for its pod, which says which extension points a real
// cycle reaches (TestShapes checks it against upstream).
type workload struct {
	Name string // sub-benchmark label: workload=<Name>
	File string // scheduler_perf config, relative to its directory
	Case string // upstream test case
	// Tweak, when set, changes the incoming pod (a variant of ours, named
	// as such, for an extension point upstream's workloads never reach).
	Tweak func(*v1.Pod)
	// Reaches is which extension points run, per upstream plugin name:
	// PreFilter not Skipped (so Filter, Clone, AddPod/RemovePod run) and
	// PreScore not Skipped (so Score runs).
	Filter, Score map[string]bool
}

var (
	ipa = "InterPodAffinity"
	na  = "NodeAffinity"
	tt  = "TaintToleration"
	nn  = "NodeName"
)

// workloads mirror upstream's affinity/performance-config.yaml test cases
// at 5000 nodes, plus SchedulingBasic (misc/) for a pod without constraints.
var workloads = []workload{
	{Name: "PodAntiAffinity", File: AffinityConfig, Case: "SchedulingPodAntiAffinity",
		Filter: map[string]bool{ipa: true, tt: true, nn: true}, Score: map[string]bool{tt: true}},
	{Name: "PodAffinity", File: AffinityConfig, Case: "SchedulingPodAffinity",
		Filter: map[string]bool{ipa: true, tt: true, nn: true}, Score: map[string]bool{ipa: true, tt: true}},
	{Name: "PreferredPodAffinity", File: AffinityConfig, Case: "SchedulingPreferredPodAffinity",
		Filter: map[string]bool{tt: true, nn: true}, Score: map[string]bool{ipa: true, tt: true}},
	{Name: "PreferredPodAntiAffinity", File: AffinityConfig, Case: "SchedulingPreferredPodAntiAffinity",
		Filter: map[string]bool{tt: true, nn: true}, Score: map[string]bool{ipa: true, tt: true}},
	{Name: "NoConstraint", File: MiscConfig, Case: "SchedulingBasic",
		Filter: map[string]bool{tt: true, nn: true}, Score: map[string]bool{tt: true}},
	{Name: "NodeAffinity", File: AffinityConfig, Case: "SchedulingNodeAffinity",
		Filter: map[string]bool{na: true, tt: true, nn: true}, Score: map[string]bool{tt: true}},
	// Upstream's SchedulingNodeAffinity pod has no preferred term, so its
	// NodeAffinity Score never runs; this variant adds one.
	{Name: "NodeAffinityPreferred", File: AffinityConfig, Case: "SchedulingNodeAffinity",
		Tweak: func(p *v1.Pod) {
			w := &tu.PodWrapper{Pod: *p}
			w.PreferredNodeTerm(1, tu.Term(tu.Expr(v1.LabelTopologyZone, v1.NodeSelectorOpIn, "zone1")))
			*p = w.Pod
		},
		Filter: map[string]bool{na: true, tt: true, nn: true}, Score: map[string]bool{na: true, tt: true}},
}

// shapes caches each loaded shape per process: loading 5000 nodes is cheap,
// but a benchmark function runs once per -count.
var shapes = struct {
	sync.Mutex
	m map[string]*Shape
}{m: map[string]*Shape{}}

func loadShape(tb testing.TB, w workload, nodes int) *Shape {
	tb.Helper()
	shapes.Lock()
	defer shapes.Unlock()
	key := fmt.Sprintf("%s/%d", w.Name, nodes)
	if s, ok := shapes.m[key]; ok {
		return s
	}
	root, err := perf.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := perf.UpstreamDir(root)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := LoadShape(dir, w.File, w.Case, fmt.Sprintf("%dNodes", nodes))
	if err != nil {
		tb.Fatal(err)
	}
	if w.Tweak != nil {
		w.Tweak(s.Incoming)
		w.Tweak(s.measured)
	}
	shapes.m[key] = s
	return s
}

// cluster is a Shape the way kube-scheduler holds it: a backend cache,
// a snapshot refreshed by UpdateSnapshot (NodeInfo pointers reused, only
// nodes whose generation moved copied), a namespace informer store and a
// framework handle serving that snapshot.
type cluster struct {
	ctx    context.Context
	logger klog.Logger
	shape  *Shape
	cache  cache.Cache
	snap   *cache.Snapshot
	handle fwk.Handle
	fts    feature.Features
	// steps counts calls to step; toggled is the pod the last odd step
	// bound (removed again by the next step).
	steps   int
	toggled *v1.Pod
	// start is where the next cycle's window of nodes begins (the
	// framework's rotating nextStartNodeIndex).
	start int
}

func newCluster(tb testing.TB, s *Shape) *cluster {
	tb.Helper()
	// The test logger would format every V(3) line the plugins log and
	// dominate the measurement; production runs at V(0)-V(2).
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	tb.Cleanup(cancel)
	// The cache's metrics loop and the parallelizer report metrics.
	metrics.Register()
	c := &cluster{
		ctx:    ctx,
		logger: klog.FromContext(ctx),
		shape:  s,
		cache:  k8sline.NewCache(ctx, false),
		snap:   cache.NewEmptySnapshot(),
		fts:    feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate),
	}
	for _, n := range s.Nodes {
		c.cache.AddNode(c.logger, n)
	}
	for _, p := range s.Pods {
		if err := c.cache.AddPod(c.logger, p); err != nil {
			tb.Fatal(err)
		}
	}
	if err := c.cache.UpdateSnapshot(c.logger, c.snap); err != nil {
		tb.Fatal(err)
	}
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	// Never started: the store is filled directly.
	nsStore := inf.Core().V1().Namespaces().Informer().GetIndexer()
	for _, ns := range s.Namespaces {
		if err := nsStore.Add(ns); err != nil {
			tb.Fatal(err)
		}
	}
	h, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(c.snap),
		frameworkruntime.WithInformerFactory(inf),
	)
	if err != nil {
		tb.Fatal(err)
	}
	c.handle = h
	return c
}

// step changes exactly one node, as a scheduling loop sees between two
// cycles, then refreshes the snapshot: even steps bind a pod of the
// measured template to the next node in turn (where the default scheduler
// would go on placing them, after the pods already bound), odd steps delete
// it again, so the shape stays what it is however many iterations run.
func (c *cluster) step(tb testing.TB) {
	if c.toggled != nil {
		if err := c.cache.RemovePod(c.logger, c.toggled); err != nil {
			tb.Fatal(err)
		}
		c.toggled = nil
	} else {
		nodes := c.shape.Nodes
		node := nodes[(len(c.shape.Pods)+c.steps/2)%len(nodes)].Name
		c.toggled = c.shape.MeasuredPod(c.steps, node)
		if err := c.cache.AddPod(c.logger, c.toggled); err != nil {
			tb.Fatal(err)
		}
	}
	c.steps++
	if err := c.cache.UpdateSnapshot(c.logger, c.snap); err != nil {
		tb.Fatal(err)
	}
}

// all is the snapshot's node list, as PreFilter receives it.
func (c *cluster) all(tb testing.TB) []fwk.NodeInfo {
	l, err := c.snap.NodeInfos().List()
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// window returns the next cycle's nodes to filter and score: NodesPerCycle
// of them from the rotating start, as the framework walks them.
func (c *cluster) window(all []fwk.NodeInfo) []fwk.NodeInfo {
	k := NodesPerCycle(len(all))
	out := make([]fwk.NodeInfo, k)
	for i := range out {
		out[i] = all[(c.start+i)%len(all)]
	}
	c.start = (c.start + k) % len(all)
	return out
}

// rotated returns every node, starting where the last cycle's window
// ended, and moves the start on by one window.
func (c *cluster) rotated(all []fwk.NodeInfo) []fwk.NodeInfo {
	out := append(append(make([]fwk.NodeInfo, 0, len(all)), all[c.start:]...), all[:c.start]...)
	c.start = (c.start + NodesPerCycle(len(all))) % len(all)
	return out
}

// impl is one side of a comparison: how to build a fresh plugin instance
// on a cluster's handle.
type impl struct {
	Name string // upstream | ours
	New  func(ctx context.Context, h fwk.Handle, fts feature.Features) (fwk.Plugin, error)
}

// impls pairs the in-tree plugin called name with ours, from
// pkg/plugins.Set(). For the plugins whose per-node work is a few
// nanoseconds (all but InterPodAffinity) a third side, contained, is ours
// as the scheduler runs it, behind the panic-containment wrapper
// (plugins.Contain): contained minus ours is the wrapper's cost.
func impls(tb testing.TB, name string) []impl {
	for _, p := range plugins.Set() {
		if p.Replaces != name {
			continue
		}
		out := []impl{
			{Name: "upstream", New: func(ctx context.Context, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
				return p.NewInTree(ctx, nil, h, fts)
			}},
			{Name: "ours", New: func(ctx context.Context, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
				return p.New(ctx, runtime.Object(nil), h, fts)
			}},
		}
		if name != ipa {
			out = append(out, impl{Name: "contained", New: func(ctx context.Context, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
				pl, err := p.New(ctx, runtime.Object(nil), h, fts)
				if err != nil {
					return nil, err
				}
				return plugins.Contain(pl)
			}})
		}
		return out
	}
	tb.Fatalf("no plugin of ours replaces %s in pkg/plugins.Set()", name)
	return nil
}

func (c *cluster) newPlugin(tb testing.TB, im impl) fwk.Plugin {
	p, err := im.New(c.ctx, c.handle, c.fts)
	if err != nil {
		tb.Fatalf("%s: %v", im.Name, err)
	}
	return p
}

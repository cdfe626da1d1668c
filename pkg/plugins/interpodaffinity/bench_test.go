package interpodaffinity

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// The benchmarks measure the two hot paths of a scheduling cycle: PreFilter
// for the common pod without pod (anti-)affinity, and Filter per candidate
// node for a pod with required affinity. They report allocations and time
// only; run them with
//
//	go test ./pkg/plugins/interpodaffinity/ -run '^$' -bench . -benchmem

// benchCluster is nodes spread over zones, each with a hostname label and
// two pods: one labelled app=web (half of the nodes) and one unrelated pod
// with a preferred affinity term, so that the affinity index is not empty.
// No pod has required anti-affinity.
func benchCluster(nodes int) ([]*v1.Pod, []*v1.Node) {
	var pods []*v1.Pod
	var ns []*v1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%03d", i)
		ns = append(ns, tu.MakeNode(name).Label(zone, fmt.Sprintf("z%d", i%5)).Label(rack, fmt.Sprintf("r%d", i%17)).Obj())
		pods = append(pods, placed("default", "other-"+name, name).Label("app", "batch").
			PreferredPodAffinity(tu.Weighted(5, tu.AffinityTerm(zone, sel("app", "batch")))).Obj())
		if i%2 == 0 {
			pods = append(pods, placed("default", "web-"+name, name).Label("app", "web").Obj())
		}
	}
	return pods, ns
}

// gateVariants runs body with the hostname fast path off and on (process
// gate included: NodeInfo keeps the non-host-scoped index only under it).
func gateVariants(b *testing.B, body func(b *testing.B, fts feature.Features)) {
	b.Run("fastpath=off", func(b *testing.B) { body(b, feature.Features{}) })
	b.Run("fastpath=on", func(b *testing.B) {
		featuregatetesting.SetFeatureGateDuringTest(b, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, true)
		body(b, feature.Features{EnableInterPodAffinityHostnameFastPath: true})
	})
}

// BenchmarkPreFilterPlainPod: a pod without pod (anti-)affinity in a cluster
// where no pod has required anti-affinity, in a namespace the lister knows
// and in one it does not (a lookup miss costs an error value).
func BenchmarkPreFilterPlainPod(b *testing.B) {
	for _, podNS := range []string{"default", "unknown"} {
		b.Run("ns="+podNS, func(b *testing.B) {
			gateVariants(b, func(b *testing.B, fts feature.Features) {
				e := newBenchEnv(b, fts)
				all := e.allNodes(b)
				pod := incoming(podNS).Label("app", "web").Obj()
				cs := framework.NewCycleState()
				if _, st := e.pl.PreFilter(e.ctx, cs, pod, all); st.Code() != fwk.Skip {
					b.Fatalf("PreFilter = %v, want Skip", st)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					e.pl.PreFilter(e.ctx, cs, pod, all)
				}
			})
		})
	}
}

// newBenchEnv is benchCluster(200) with namespace "default" known to the
// lister, and a logger at production verbosity: the test logger would
// format every V(3) line and dominate the measurement.
func newBenchEnv(b *testing.B, fts feature.Features) *testEnv {
	pods, nodes := benchCluster(200)
	e := newEnv(b, nil, fts, pods, nodes, tu.MakeNamespace("default", map[string]string{"team": "a"}))
	e.ctx = klog.NewContext(e.ctx, logr.Discard())
	return e
}

// BenchmarkFilterRequiredAffinity is one Filter call per op, cycling over
// the nodes, after a single PreFilter.
func BenchmarkFilterRequiredAffinity(b *testing.B) {
	cases := []struct {
		name string
		term v1.PodAffinityTerm
	}{
		// Matching pods exist: the counted domains decide.
		{name: "zone", term: tu.AffinityTerm(zone, sel("app", "web"))},
		// No pod matches anywhere: every node asks whether the pod may be
		// the first of its own series.
		{name: "first-of-series", term: tu.AffinityTerm(zone, sel("app", "cache"))},
		// Hostname-scoped: the fast path checks the node's own pods.
		{name: "hostname", term: tu.AffinityTerm(host, sel("app", "web"))},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			gateVariants(b, func(b *testing.B, fts feature.Features) {
				e := newBenchEnv(b, fts)
				all := e.allNodes(b)
				pod := incoming("default").Label("app", "cache").RequiredPodAffinity(c.term).Obj()
				cs, st := e.preFilter(b, pod)
				if !st.IsSuccess() {
					b.Fatalf("PreFilter = %v", st)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					e.pl.Filter(e.ctx, cs, pod, all[i%len(all)])
				}
			})
		})
	}
}

// BenchmarkIndexMemory measures what the cross-cycle caches keep at 5000
// nodes and 10,000 pods, after one cycle of each of upstream's
// scheduler_perf affinity pod shapes (required anti-affinity and preferred
// (anti-)affinity by hostname, required affinity by zone), each run through
// PreFilter and PreScore. It reports the live heap the caches hold
// (index-B) and per node (index-B/node); the loop times one steady-state
// cycle of all four shapes.
func BenchmarkIndexMemory(b *testing.B) {
	const nodes = 5000
	colors := []string{"green", "blue", "red", "yellow"}
	shape := func(w *tu.PodWrapper, color string) *tu.PodWrapper {
		term := tu.AffinityTerm(host, sel("color", color))
		switch color {
		case "green":
			return w.RequiredPodAntiAffinity(term)
		case "blue":
			return w.RequiredPodAffinity(tu.AffinityTerm(zone, sel("color", color)))
		case "red":
			return w.PreferredPodAffinity(tu.Weighted(1, term))
		default:
			return w.PreferredPodAntiAffinity(tu.Weighted(1, term))
		}
	}
	var pods []*v1.Pod
	var ns []*v1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		ns = append(ns, tu.MakeNode(name).Label(host, name).Label(zone, fmt.Sprintf("z%d", i%5)).Obj())
		for j := range 2 {
			c := colors[(i+j)%len(colors)]
			pods = append(pods, shape(placed("sched-0", fmt.Sprintf("p-%d-%d", i, j), name).Label("color", c), c).Obj())
		}
	}
	e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("sched-0", nil), tu.MakeNamespace("sched-1", nil))
	e.ctx = klog.NewContext(e.ctx, logr.Discard())
	all := e.allNodes(b)
	cycle := func() {
		for _, c := range colors {
			pod := shape(incoming("sched-1").Label("color", c), c).Obj()
			e.pl.PreFilter(e.ctx, framework.NewCycleState(), pod, all)
			e.pl.PreScore(e.ctx, framework.NewCycleState(), pod, all)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cycle()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		cycle()
	}
	b.ReportMetric(held, "index-B")
	b.ReportMetric(held/nodes, "index-B/node")
}

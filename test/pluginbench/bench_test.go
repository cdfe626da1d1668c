package pluginbench

import (
	"context"
	"fmt"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/podterms"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Extension points measured. PreFilter and PreScore are per cycle: one op is
// one call over the whole cluster. The others are per node: one op is one
// call for one node (Clone: one CycleState.Clone of the state PreFilter
// wrote; AddPodRemovePod: one AddPod and the RemovePod undoing it, as the
// nominated-pod and preemption paths call them on a NodeInfo.Snapshot copy;
// CloneAddPod: a Clone and the first AddPod on the clone, which is what the
// preemption dry run does per candidate node: a copy-on-write state moves
// cost from Clone to that first write, and this op shows where it went).
const (
	opPreFilter       = "PreFilter"
	opFilter          = "Filter"
	opPreScore        = "PreScore"
	opScore           = "Score"
	opClone           = "Clone"
	opAddPodRemovePod = "AddPodRemovePod"
	opCloneAddPod     = "CloneAddPod"
	// opNormalizeScore is per cycle: one NormalizeScore over the raw
	// scores Score gave the cycle's window of nodes (on a fresh copy each
	// time, since it rewrites them in place).
	opNormalizeScore = "NormalizeScore"
)

// Modes. steady: ONE plugin instance for the whole benchmark, and one node
// changes before every cycle (a pod bound, or removed again, then
// UpdateSnapshot), as in a scheduling loop: what a plugin keeping state
// across cycles is worth. cold: a fresh plugin instance for every op, so
// nothing it kept from earlier cycles helps (per-cycle ops only).
const (
	steady = "steady"
	cold   = "cold"
	// interleaved: ONE plugin instance, one node changed before every
	// cycle as in steady, but the incoming pod belongs to one of
	// interleavedWorkloads workloads in turn (a drain or a rollout wave
	// interleaving pods of many Deployments): each workload's terms carry
	// a requirement of their own, which selects the same pods, so each
	// has its own signature and a cross-cycle cache sees a signature again
	// only after all the others.
	interleaved = "interleaved"
)

// interleavedWorkloads is how many workloads the interleaved mode cycles
// through: more than a cross-cycle cache keyed by the incoming pod's terms
// can be expected to hold.
const interleavedWorkloads = 200

// BenchmarkInterPodAffinity compares upstream's InterPodAffinity with
// PlacementInterPodAffinity at every extension point, per workload.
//
//	go test ./test/pluginbench -run '^$' -bench InterPodAffinity -count 6 | benchstat -col /impl -
func BenchmarkInterPodAffinity(b *testing.B) {
	benchPlugin(b, ipa,
		[]string{opPreFilter, opFilter, opPreScore, opScore, opClone, opAddPodRemovePod, opCloneAddPod},
		[]string{"PodAntiAffinity", "PodAffinity", "PreferredPodAffinity", "PreferredPodAntiAffinity", "NoConstraint"})
}

// basicOps are the extension points of the plugins that keep nothing
// across cycles (NodeName, TaintToleration, NodeAffinity).
var basicOps = []string{opPreFilter, opFilter, opPreScore, opScore, opNormalizeScore}

// BenchmarkNodeAffinity: every extension point, for the pod without
// constraints (PreFilter and PreScore Skip) and the node-affinity pods.
func BenchmarkNodeAffinity(b *testing.B) {
	benchPlugin(b, na, basicOps, []string{"NoConstraint", "NodeAffinity", "NodeAffinityPreferred"})
}

// BenchmarkTaintToleration: every extension point, for the pod without
// constraints (untainted nodes, as in every affinity workload).
func BenchmarkTaintToleration(b *testing.B) {
	benchPlugin(b, tt, basicOps, []string{"NoConstraint"})
}

// BenchmarkNodeName: PreFilter and Filter (it does not score), for the pod
// without constraints, which names no node: PreFilter does not Skip, so
// Filter runs on every node.
func BenchmarkNodeName(b *testing.B) {
	benchPlugin(b, nn, []string{opPreFilter, opFilter}, []string{"NoConstraint"})
}

// benchPlugin runs BenchmarkX/<op>/workload=<w>/mode=<m>/impl=<upstream|ours>
// for every op a real cycle reaches in that workload. The impl level is
// last, so `benchstat -col /impl` pairs the two sides row by row.
func benchPlugin(b *testing.B, name string, ops, wls []string) {
	nodes := benchNodes(b)
	for _, op := range ops {
		b.Run(op, func(b *testing.B) {
			for _, wn := range wls {
				w := workloadByName(b, wn)
				if !reaches(w, name, op) {
					continue
				}
				b.Run("workload="+w.Name, func(b *testing.B) {
					for _, mode := range modes(name, op) {
						b.Run("mode="+mode, func(b *testing.B) {
							for _, im := range impls(b, name) {
								b.Run("impl="+im.Name, func(b *testing.B) {
									c := newCluster(b, loadShape(b, w, nodes))
									measure(b, c, im, op, mode)
								})
							}
						})
					}
				})
			}
		})
	}
}

// modes: the cold and interleaved modes tell what state kept across cycles
// is worth, so only InterPodAffinity (the one plugin that keeps any) runs
// them.
func modes(name, op string) []string {
	if name == ipa && (op == opPreFilter || op == opPreScore) {
		return []string{steady, cold, interleaved}
	}
	return []string{steady}
}

func workloadByName(tb testing.TB, n string) workload {
	for _, w := range workloads {
		if w.Name == n {
			return w
		}
	}
	tb.Fatalf("no workload %s", n)
	return workload{}
}

// reaches says whether the framework calls op of plugin name in a cycle of
// w: PreFilter and PreScore always; Filter, Clone and AddPod/RemovePod only
// after a PreFilter that did not Skip; Score only after a PreScore that
// did not Skip.
func reaches(w workload, name, op string) bool {
	switch op {
	case opPreFilter, opPreScore:
		return true
	case opScore, opNormalizeScore:
		return w.Score[name]
	default:
		return w.Filter[name]
	}
}

// measure times op. Per-cycle ops: each iteration is a cycle (one node
// changed, then the op; PreScore after the cycle's PreFilter). Per-node ops:
// a cycle is one node changed, PreFilter (and PreScore for Score), then the
// op for every node in turn from a rotating start.
//
// Only the op is timed and its allocations counted (meter), but the
// iteration count follows the whole loop's time, so a benchmark takes about
// -benchtime of wall time however cheap the op is next to the cycle set-up
// around it. The meter replaces ns/op, B/op and allocs/op.
func measure(b *testing.B, c *cluster, im impl, op, mode string) {
	pod := c.shape.Incoming
	pl := c.newPlugin(b, im)
	m := newMeter()
	fresh := mode == cold
	if op == opNormalizeScore {
		measureNormalize(b, c, pl, im, m)
		return
	}
	if op == opPreFilter || op == opPreScore {
		var variants []*v1.Pod
		if mode == interleaved {
			variants = workloadVariants(pod, interleavedWorkloads)
		}
		for i := 0; b.Loop(); i++ {
			c.step(b)
			if fresh {
				pl = c.newPlugin(b, im)
			}
			if variants != nil {
				pod = variants[i%len(variants)]
			}
			all := c.all(b)
			cs := framework.NewCycleState()
			var feasible []fwk.NodeInfo
			if op == opPreScore {
				if !fresh {
					// The framework runs PreFilter first; a plugin may
					// refresh what it keeps there. A fresh plugin gets no
					// such help: cold PreScore is its first call.
					preFilter(c.ctx, pl, cs, pod, all)
				}
				feasible = c.window(all)
			}
			m.start()
			if op == opPreFilter {
				pl.(fwk.PreFilterPlugin).PreFilter(c.ctx, cs, pod, all)
			} else {
				pl.(fwk.PreScorePlugin).PreScore(c.ctx, cs, pod, feasible)
			}
			m.stop()
		}
		m.report(b)
		return
	}

	var (
		cs      fwk.CycleState
		nodes   []fwk.NodeInfo
		podInfo fwk.PodInfo
		ext     fwk.PreFilterExtensions
	)
	if op == opAddPodRemovePod || op == opCloneAddPod {
		ext = pl.(fwk.PreFilterPlugin).PreFilterExtensions()
		if ext == nil {
			b.Fatalf("%s has no PreFilterExtensions", im.Name)
		}
		pi, err := framework.NewPodInfo(c.shape.MeasuredPod(-1, ""))
		if err != nil {
			b.Fatal(err)
		}
		podInfo = pi
	}
	cycle := func() {
		c.step(b)
		all := c.all(b)
		cs = framework.NewCycleState()
		if st := preFilter(c.ctx, pl, cs, pod, all); op != opScore && !st.IsSuccess() {
			b.Fatalf("%s PreFilter = %q: the framework would not call %s (fix the workload's Filter table)", im.Name, tu.StatusString(st), op)
		}
		// Rotate through every node: a real cycle filters about
		// NodesPerCycle nodes, but per node the work is the same, and a
		// longer cycle spends less of the benchmark's time setting up.
		nodes = c.rotated(all)
		switch op {
		case opScore:
			if st := pl.(fwk.PreScorePlugin).PreScore(c.ctx, cs, pod, nodes); !st.IsSuccess() {
				b.Fatalf("%s PreScore = %q: the framework would not call Score (fix the workload's Score table)", im.Name, tu.StatusString(st))
			}
		case opAddPodRemovePod, opCloneAddPod:
			for i, ni := range nodes {
				nodes[i] = ni.Snapshot()
			}
		}
	}
	for i := 0; b.Loop(); i++ {
		j := i % len(c.shape.Nodes)
		if j == 0 {
			if i > 0 {
				m.stop()
			}
			cycle()
			m.start()
		}
		switch op {
		case opFilter:
			pl.(fwk.FilterPlugin).Filter(c.ctx, cs, pod, nodes[j])
		case opScore:
			pl.(fwk.ScorePlugin).Score(c.ctx, cs, pod, nodes[j])
		case opClone:
			cs.Clone()
		case opAddPodRemovePod:
			ext.AddPod(c.ctx, cs, pod, podInfo, nodes[j])
			ext.RemovePod(c.ctx, cs, pod, podInfo, nodes[j])
		case opCloneAddPod:
			ext.AddPod(c.ctx, cs.Clone(), pod, podInfo, nodes[j])
		default:
			b.Fatalf("unknown op %s", op)
		}
	}
	m.stop()
	m.report(b)
}

// measureNormalize times NormalizeScore, once per cycle, over the raw
// scores of the cycle's window of nodes (PreFilter, PreScore and Score
// untimed, as the framework runs them first). NormalizeScore rewrites the
// list in place, so every op gets a fresh copy (copied untimed).
func measureNormalize(b *testing.B, c *cluster, pl fwk.Plugin, im impl, m *meter) {
	pod := c.shape.Incoming
	ext := pl.(fwk.ScorePlugin).ScoreExtensions()
	if ext == nil {
		b.Fatalf("%s has no ScoreExtensions", im.Name)
	}
	var raw, scores fwk.NodeScoreList
	for b.Loop() {
		c.step(b)
		all := c.all(b)
		cs := framework.NewCycleState()
		preFilter(c.ctx, pl, cs, pod, all)
		window := c.window(all)
		if st := pl.(fwk.PreScorePlugin).PreScore(c.ctx, cs, pod, window); !st.IsSuccess() {
			b.Fatalf("%s PreScore = %q: the framework would not call NormalizeScore (fix the workload's Score table)", im.Name, tu.StatusString(st))
		}
		raw = raw[:0]
		for _, ni := range window {
			s, st := pl.(fwk.ScorePlugin).Score(c.ctx, cs, pod, ni)
			if !st.IsSuccess() {
				b.Fatalf("%s Score = %q", im.Name, tu.StatusString(st))
			}
			raw = append(raw, fwk.NodeScore{Name: ni.Node().Name, Score: s})
		}
		scores = append(scores[:0], raw...)
		m.start()
		ext.NormalizeScore(c.ctx, cs, pod, scores)
		m.stop()
	}
	m.report(b)
}

// workloadVariants returns n copies of pod, one per workload: each copy's
// pod (anti-)affinity terms require in addition that a label no pod
// carries is not the workload's name, which every pod satisfies. The
// copies select exactly the pods pod selects, so each does the same work,
// but no two have the same terms.
func workloadVariants(pod *v1.Pod, n int) []*v1.Pod {
	out := make([]*v1.Pod, n)
	for i := range out {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("%s-w%d", pod.Name, i)
		req := metav1.LabelSelectorRequirement{Key: "pluginbench.example.com/workload", Operator: metav1.LabelSelectorOpNotIn, Values: []string{fmt.Sprint("w", i)}}
		podterms.Each(p.Spec.Affinity, func(t *v1.PodAffinityTerm) {
			if t.LabelSelector != nil {
				t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions, req)
			}
		})
		out[i] = p
	}
	return out
}

// meter adds up the time and heap allocations of the measured stretches
// of a benchmark. Allocations come from runtime/metrics, which (unlike
// ReadMemStats, what b.StopTimer uses) does not stop the world.
//
// cpu-ns/op is the process's CPU time (user and system, every thread: the
// parallelizer's workers and the garbage collector included) over the
// measured stretches: the work an op costs, which a loaded machine
// stretches far less than the wall time.
type meter struct {
	ns, cpu       time.Duration
	bytes, allocs uint64
	t0            time.Time
	c0            time.Duration
	b0, a0        uint64
	samples       []metrics.Sample
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func newMeter() *meter {
	return &meter{samples: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}}
}

func (m *meter) read() (bytes, allocs uint64) {
	metrics.Read(m.samples)
	return m.samples[0].Value.Uint64(), m.samples[1].Value.Uint64()
}

func (m *meter) start() {
	m.b0, m.a0 = m.read()
	m.c0 = cpuTime()
	m.t0 = time.Now()
}

func (m *meter) stop() {
	m.ns += time.Since(m.t0)
	m.cpu += cpuTime() - m.c0
	b1, a1 := m.read()
	m.bytes += b1 - m.b0
	m.allocs += a1 - m.a0
}

func (m *meter) report(b *testing.B) {
	b.ReportAllocs() // prints B/op and allocs/op: ours, set below, take precedence
	n := float64(b.N)
	b.ReportMetric(float64(m.ns.Nanoseconds())/n, "ns/op")
	b.ReportMetric(float64(m.cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(m.bytes)/n, "B/op")
	b.ReportMetric(float64(m.allocs)/n, "allocs/op")
}

// preFilter runs PreFilter when pl has one (TaintToleration's and
// NodeAffinity's write the state their Filter reads).
func preFilter(ctx context.Context, pl fwk.Plugin, cs fwk.CycleState, pod *v1.Pod, all []fwk.NodeInfo) *fwk.Status {
	p, ok := pl.(fwk.PreFilterPlugin)
	if !ok {
		return nil
	}
	_, st := p.PreFilter(ctx, cs, pod, all)
	return st
}

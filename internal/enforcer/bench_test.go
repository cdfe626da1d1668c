package enforcer

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// benchCluster is nodes nodes, 10 pods each, in racks of 20 nodes; 3 pods
// in 10 opt in to every rule, as three Deployments would:
//   - app0 spreads one replica per node (required hostname anti-affinity
//     against itself) and needs pool=a (nodeSelector);
//   - app1 must share a rack with an app2 pod (required rack affinity);
//   - app2 needs pool=a;
//
// the other seven pods have no rules and do not opt in.
func benchCluster(nodes int) ([]*v1.Node, []*v1.Pod) {
	var ns []*v1.Node
	var ps []*v1.Pod
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		ns = append(ns, tu.MakeNode(name).Label(v1.LabelHostname, name).Label("zone", fmt.Sprintf("z%d", i%3)).
			Label("rack", fmt.Sprintf("r%d", i/20)).Label("pool", "a").Capacity("64", "256Gi", 110).Ready().Obj())
		for j := range 10 {
			w := pod(fmt.Sprintf("p-%d-%d", i, j), fmt.Sprintf("app%d", j), name).UID(fmt.Sprintf("u-%d-%d", i, j)).
				Label("app", fmt.Sprintf("app%d", j))
			switch j {
			case 0:
				w = w.NodeSelector(map[string]string{"pool": "a"}).
					RequiredPodAntiAffinity(tu.AffinityTerm(v1.LabelHostname, tu.Selector(map[string]string{"app": "app0"})))
			case 1:
				w = w.RequiredPodAffinity(tu.AffinityTerm("rack", tu.Selector(map[string]string{"app": "app2"})))
			case 2:
				w = w.NodeSelector(map[string]string{"pool": "a"})
			default:
				w.Annotations = nil
			}
			ps = append(ps, w.Obj())
		}
	}
	return ns, ps
}

// benchEnforcer is an Enforcer whose state holds nodes and pods, every pod
// judged once (the first, full pass).
func benchEnforcer(b *testing.B, nodes []*v1.Node, pods []*v1.Pod) (*Enforcer, *clusterState, *Judge, *placing, *changes) {
	b.Helper()
	sr := newStepRig(b, nil, nodes, pods)
	sr.step()
	return sr.e, sr.s, sr.j, sr.pl, sr.ch
}

// BenchmarkJudgeChange measures one change from the informer event to the
// pass's verdicts and reports (recording the event, applying it to the
// state, updating the snapshot, judging the pods it can affect, deciding
// for the violating ones), per cluster size:
//   - NodeLabel: a node's pool label flips between a and b (its app0 and
//     app2 pods start or stop violating their nodeSelector);
//   - PodDelete: an app2 pod is deleted (the app1 pods of its rack, whose
//     affinity it may have satisfied, are judged again); it is re-added
//     with the timer stopped.
//
// Resync is the full backstop for comparison: every pod judged again.
func BenchmarkJudgeChange(b *testing.B) {
	for _, nodes := range []int{500, 1000, 2000, 5000} {
		nodeObjs, pods := benchCluster(nodes)
		b.Run(fmt.Sprintf("NodeLabel/nodes=%d", nodes), func(b *testing.B) {
			benchChanges(b, nodeObjs, pods, func(i int, s *clusterState, ch *changes) {
				n := s.nodes[fmt.Sprintf("n%d", (i/2)%nodes)].DeepCopy()
				n.ResourceVersion = fmt.Sprint(i)
				n.Labels["pool"] = map[bool]string{true: "b", false: "a"}[i%2 == 0]
				ch.record(n, false)
			}, nil)
		})
		b.Run(fmt.Sprintf("PodDelete/nodes=%d", nodes), func(b *testing.B) {
			podOf := func(i int, s *clusterState) *v1.Pod { return s.pods[types.UID(fmt.Sprintf("u-%d-2", i%nodes))] }
			var p *v1.Pod
			benchChanges(b, nodeObjs, pods, func(i int, s *clusterState, ch *changes) {
				p = podOf(i, s)
				ch.record(p, true)
			}, func(_ int, _ *clusterState, ch *changes) { ch.record(p, false) })
		})
		b.Run(fmt.Sprintf("Resync/nodes=%d", nodes), func(b *testing.B) {
			benchChanges(b, nodeObjs, pods, func(_ int, _ *clusterState, ch *changes) { ch.resync() }, nil)
		})
	}
}

// benchChanges times change and the pass after it, b.N times; undo, when
// set, is applied and passed with the timer stopped.
func benchChanges(b *testing.B, nodes []*v1.Node, pods []*v1.Pod, change, undo func(int, *clusterState, *changes)) {
	e, s, j, pl, ch := benchEnforcer(b, nodes, pods)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		change(i, s, ch)
		if _, err := e.step(ctx, s, j, pl, ch); err != nil {
			b.Fatal(err)
		}
		if undo == nil {
			continue
		}
		b.StopTimer()
		undo(i, s, ch)
		if _, err := e.step(ctx, s, j, pl, ch); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkStorm is a relabel storm at 5000 nodes and 50,000 pods
// (benchCluster: 15,000 opted in): 1000 nodes leave pool a at once, so
// the 2000 app0 and app2 pods on them violate their nodeSelector. It times
// the pass that sees the 1000 node events (every affected pod judged, its
// grace period started: detect-ms) and, once the grace period has passed,
// the pass that decides (decide-ms). There, every one of the 1000 app0
// pods is placed once and finds no node (each pool-a node already holds
// an app0 pod, and app0 wants one per node): that answer is kept until
// something that could change it changes, so the cost is paid once per
// storm, not per pass. The app2 pods belong to one owner, so one goes and
// the others wait without being placed. The rig is built with the timer
// stopped.
//
//	go test ./internal/enforcer -run '^$' -bench Storm -benchtime 1x
func BenchmarkStorm(b *testing.B) {
	const nodes, relabelled = 5000, 1000
	nodeObjs, pods := benchCluster(nodes)
	var detect, decide time.Duration
	var violating, evicted int
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		sr := newStepRig(b, nil, nodeObjs, pods)
		// The rig's recorder holds 1000 events; a storm reports more.
		done := make(chan struct{})
		go func() {
			for {
				select {
				case <-sr.events.Events:
				case <-done:
					return
				}
			}
		}()
		sr.step()
		b.StartTimer()
		start := time.Now()
		for i := range relabelled {
			n := sr.s.nodes[fmt.Sprintf("n%d", i)].DeepCopy()
			n.ResourceVersion = "storm"
			n.Labels["pool"] = "b"
			sr.ch.record(n, false)
		}
		reports := sr.step()
		detect += time.Since(start)
		violating = len(reports)
		sr.clock.Step(time.Hour) // past every grace period
		start = time.Now()
		sr.step()
		decide += time.Since(start)
		evicted = len(sr.evictions)
		close(done)
	}
	b.ReportMetric(float64(violating), "violating")
	b.ReportMetric(float64(evicted), "evictions")
	b.ReportMetric(float64(detect.Milliseconds())/float64(b.N), "detect-ms")
	b.ReportMetric(float64(decide.Milliseconds())/float64(b.N), "decide-ms")
}

// BenchmarkStateMemory states what the enforcer holds at 5000 nodes and
// 50,000 pods (benchCluster) beyond the objects its informers cache: its
// cluster state, the judge's and placers' snapshot and the reports after
// the first full pass (held-MB), against the objects themselves
// (objects-MB, as built here: the informers' copies, stripped of
// managedFields, are of that order). The loop times that first pass.
//
//	go test ./internal/enforcer -run '^$' -bench StateMemory -benchtime 1x
func BenchmarkStateMemory(b *testing.B) {
	const nodes = 5000
	var base, objs, held goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&base)
	nodeObjs, pods := benchCluster(nodes)
	goruntime.GC()
	goruntime.ReadMemStats(&objs)
	sr := newStepRig(b, nil, nodeObjs, pods)
	sr.step()
	goruntime.GC()
	goruntime.ReadMemStats(&held)
	goruntime.KeepAlive(sr)
	for b.Loop() {
		b.StopTimer()
		fresh := newStepRig(b, nil, nodeObjs, pods)
		b.StartTimer()
		fresh.step()
	}
	// After the loop: its first call resets the reported metrics.
	b.ReportMetric(float64(objs.HeapAlloc-base.HeapAlloc)/(1<<20), "objects-MB")
	b.ReportMetric(float64(held.HeapAlloc-objs.HeapAlloc)/(1<<20), "held-MB")
}

package enforcer

import (
	"context"
	"fmt"
	"testing"

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

package tainttoleration

import (
	"context"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// BenchmarkFilter and BenchmarkScore measure the per-node hot paths; run
// with -benchmem to see allocations. They assert nothing about time.
func BenchmarkFilter(b *testing.B) {
	pod := podWith(tu.Tol("a", exists, "", ""), tu.Tol("b", equal, "2", noExec))
	nodes := map[string]fwk.NodeInfo{
		"untainted": tu.NodeInfo(nodeWith()),
		"tolerated": tu.NodeInfo(nodeWith(taint("a", "1", noSched), taint("p", "", prefer), taint("b", "2", noExec))),
		"rejected":  tu.NodeInfo(nodeWith(taint("a", "1", noSched), taint("c", "3", noExec))),
	}
	for _, name := range []string{"untainted", "tolerated", "rejected"} {
		b.Run(name, func(b *testing.B) {
			pl := newPlugin(b, gatesOff)
			ctx, state, ni := context.Background(), framework.NewCycleState(), nodes[name]
			b.ReportAllocs()
			for b.Loop() {
				pl.Filter(ctx, state, pod, ni)
			}
		})
	}
}

func BenchmarkScore(b *testing.B) {
	pod := podWith(tu.Tol("a", exists, "", prefer))
	nodes := map[string]fwk.NodeInfo{
		"untainted":     tu.NodeInfo(nodeWith()),
		"no prefer":     tu.NodeInfo(nodeWith(taint("a", "1", noSched), taint("b", "2", noExec))),
		"prefer taints": tu.NodeInfo(nodeWith(taint("a", "1", prefer), taint("c", "3", prefer))),
	}
	for _, name := range []string{"untainted", "no prefer", "prefer taints"} {
		b.Run(name, func(b *testing.B) {
			pl := newPlugin(b, gatesOff)
			ctx, state, ni := context.Background(), framework.NewCycleState(), nodes[name]
			if st := pl.PreScore(ctx, state, pod, nil); st != nil {
				b.Fatalf("PreScore = %v", st)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, st := pl.Score(ctx, state, pod, ni); st != nil {
					b.Fatalf("Score = %v", st)
				}
			}
		})
	}
}

// TestRejectionAllocs pins the point of checking V(4) before building the log
// arguments: with V(4) off, rejecting a node allocates exactly what the
// status itself costs, however verbose the log line would be.
func TestRejectionAllocs(t *testing.T) {
	pl := newPlugin(t, gatesOff)
	ctx, state := context.Background(), framework.NewCycleState()
	pod := podWith(tu.Tol("a", exists, "", ""))
	ni := tu.NodeInfo(nodeWith(taint("a", "1", noSched), taint("c", "3", noExec)))
	code, msg := filterWant(false)
	// Both results go to a captured variable so that neither status can be
	// kept on the stack by escape analysis.
	var sink *fwk.Status
	statusOnly := testing.AllocsPerRun(100, func() {
		sink = fwk.NewStatus(code, msg)
	})
	filter := testing.AllocsPerRun(100, func() {
		sink = pl.Filter(ctx, state, pod, ni)
	})
	tu.CheckStatus(t, "Filter", sink, code, msg)
	if filter != statusOnly {
		t.Errorf("rejecting Filter allocated %v times per call, the status alone %v", filter, statusOnly)
	}
}

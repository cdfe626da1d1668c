package nodeindex_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodeindex"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// BenchmarkIndexBound measures what one node index holds at its bound: a
// score index over 5000 nodes asked about 1000 signatures, each twice in a
// row (so each is admitted). With adds=all every node contributes a
// hostname and a zone domain (a sum the size of the cluster, the largest a
// term makes); with adds=1of8 only every eighth node does, as in
// interleaved Deployments where most nodes hold no pod a signature's terms
// select. It reports the live heap the index keeps (index-bytes, after a
// collection), its node slots and entries; the bound is nodeindex.slotsPerNode
// slots per node.
//
//	go test ./pkg/plugins/interpodaffinity/internal/nodeindex -run '^$' -bench IndexBound -benchtime 1x
func BenchmarkIndexBound(b *testing.B) {
	for _, every := range []int{1, 8} {
		name := "adds=all"
		if every > 1 {
			name = fmt.Sprintf("adds=1of%d", every)
		}
		b.Run(name, func(b *testing.B) { benchIndexBound(b, every) })
	}
}

func benchIndexBound(b *testing.B, every int) {
	const nodes, signatures = 5000, 1000
	var list []fwk.NodeInfo
	for i := range nodes {
		ni := framework.NewNodeInfo()
		name := fmt.Sprintf("node-%04d", i)
		node := tu.MakeNode(name).Label(at.Host, name).Label(at.Zone, fmt.Sprintf("z%d", i%5))
		if i%every == 0 {
			node = node.Label("adds", "")
		}
		ni.SetNode(node.Obj())
		ni.AddPod(at.Placed("default", "p-"+name, name).Label("app", "web").Obj())
		list = append(list, ni)
	}
	ctx := klog.NewContext(b.Context(), logr.Discard())
	schedmetrics.Register()
	par := parallelize.NewParallelizer(2)
	cs := framework.NewCycleState()
	ops := counts.OpsOf(counts.NewScoreSum, func(_ int, ni fwk.NodeInfo, reuse counts.NodeTally) counts.NodeTally {
		t := reuse.Reset()
		if _, adds := ni.Node().Labels["adds"]; !adds {
			return t
		}
		nt := topology.Of(nil, ni)
		t.Add(&nt, at.Host, 1)
		t.Add(&nt, at.Zone, 2)
		return t
	})
	var heap, slots, entries float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		x := nodeindex.New[counts.NodeTally, *counts.ScoreSum]("bench")
		for i := range signatures {
			sig := fmt.Sprint("sig-", i)
			x.Sum(ctx, cs, par, sig, list, nil, ops)
			x.Sum(ctx, cs, par, sig, list, nil, ops)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		slots, entries = float64(x.Slots()), float64(x.Entries())
		runtime.KeepAlive(x)
	}
	b.ReportMetric(heap, "index-bytes")
	b.ReportMetric(slots, "slots")
	b.ReportMetric(entries, "entries")
	b.ReportMetric(heap/slots, "bytes/slot")
}

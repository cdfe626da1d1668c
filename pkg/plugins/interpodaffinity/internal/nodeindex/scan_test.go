package nodeindex

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// podsByZone is a test sum: pods per zone label value.
type podsByZone map[string]int64

// zoneOps counts the pods per zone, building each node's contribution in
// reuse's storage as the count types do. calls counts the computes, seals
// the seals.
func zoneOps(calls, seals *atomic.Int64) Ops[podsByZone, podsByZone] {
	return Ops[podsByZone, podsByZone]{
		Compute: func(ni fwk.NodeInfo, reuse podsByZone) podsByZone {
			calls.Add(1)
			if reuse == nil {
				reuse = podsByZone{}
			}
			clear(reuse)
			if z, ok := ni.Node().Labels[at.Zone]; ok && len(ni.GetPods()) > 0 {
				reuse[z] = int64(len(ni.GetPods()))
			}
			return reuse
		},
		NewSum: func() podsByZone { return podsByZone{} },
		Apply: func(sum podsByZone, v podsByZone, sign int64) {
			for z, n := range v {
				if sum[z] += sign * n; sum[z] == 0 {
					delete(sum, z)
				}
			}
		},
		Merge: func(dst, src podsByZone) {
			for z, n := range src {
				dst[z] += n
			}
		},
		Seal: func(podsByZone) { seals.Add(1) },
	}
}

// TestScanSumsEveryNodeOnce: over lists shorter and longer than
// scanParts, the scan's sum is the sequential sum, every node is computed
// once (at its own position when ComputeAt is set) and the sum is sealed
// once.
func TestScanSumsEveryNodeOnce(t *testing.T) {
	schedmetrics.Register() // Parallelizer.Until reports a metric
	ctx, par := context.Background(), parallelize.NewParallelizer(2)
	for _, n := range []int{0, 1, 5, scanParts, 3*scanParts + 7} {
		var nodes []fwk.NodeInfo
		want := podsByZone{}
		for i := range n {
			var pods []string
			for j := range i % 3 {
				pods = append(pods, fmt.Sprintf("p%d-%d", i, j))
			}
			z := fmt.Sprint("z", i%4)
			nodes = append(nodes, at.ZoneNode(fmt.Sprint("n", i), z, pods...))
			if len(pods) > 0 {
				want[z] += int64(len(pods))
			}
		}
		for _, positional := range []bool{false, true} {
			var calls, seals atomic.Int64
			ops := zoneOps(&calls, &seals)
			if positional {
				compute := ops.Compute
				ops = ops.At(func(i int, ni fwk.NodeInfo, reuse podsByZone) podsByZone {
					if i < 0 || i >= len(nodes) || nodes[i] != ni {
						t.Errorf("%d nodes: ComputeAt told position %d for node %s", n, i, ni.Node().Name)
					}
					return compute(ni, reuse)
				})
			}
			got := maps.Clone(Scan(ctx, par, "test", nodes, ops))
			if !cmp.Equal(want, got) {
				t.Errorf("%d nodes, ComputeAt %v: scan %v, want %v", n, positional, got, want)
			}
			if c, s := calls.Load(), seals.Load(); c != int64(n) || s != 1 {
				t.Errorf("%d nodes, ComputeAt %v: %d computes and %d seals, want %d and 1", n, positional, c, s, n)
			}
		}
	}
}

package counts

import (
	"fmt"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// BenchmarkIncomingSumOfTwoClasses is PreFilter's sum of an
// anti-affinity term scoped to the hostname that two classes of pods
// match, one pod a node (upstream's SchedulingPodAntiAffinity: the init
// pods' namespace and the measured pods'): the larger class's counts are
// lent, the smaller's are added domain by domain, and each cycle one more
// pod of the smaller class lands on a node of its own.
func BenchmarkIncomingSumOfTwoClasses(b *testing.B) {
	const key = "kubernetes.io/hostname"
	for _, sizes := range [][2]int{{1000, 500}, {3000, 1500}} {
		b.Run(fmt.Sprintf("%d+%d", sizes[0], sizes[1]), func(b *testing.B) {
			var large, small Domains
			for i := range sizes[0] {
				large.Add(topology.Pair{Key: key, Value: fmt.Sprint("node-", i)}, 1)
			}
			for i := range sizes[1] {
				small.Add(topology.Pair{Key: key, Value: fmt.Sprint("node-", sizes[0]+i)}, 1)
			}
			next := sizes[0] + sizes[1]
			b.ReportAllocs()
			for b.Loop() {
				small.Add(topology.Pair{Key: key, Value: fmt.Sprint("node-", next)}, 1)
				next++
				c := NewTopologyCounts()
				c.AddDomains(key, &large)
				c.AddDomains(key, &small)
				c.Seal()
			}
		})
	}
}

package interpodaffinity

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/aggregate"
)

// NewScanning is New with every cache off: each cycle scans, as upstream's
// plugin does. For the external tests that compare it with New.
func NewScanning(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	return newPlugin(ctx, obj, h, fts, options{noCaches: true})
}

// IndexEntries counts what a plugin built by New holds in its caches of
// sums (distinct existing terms and classes of pods), so that a test can
// tell that the caches were used at all.
func IndexEntries(p fwk.Plugin) int {
	if t, ok := p.(*InterPodAffinity).caches.sums.(*aggregate.Table); ok {
		return t.DistinctTerms() + t.Classes()
	}
	return 0
}

// SummarySkips counts, among the nodes with pods, those that the pod
// summaries of the state PreFilter wrote to cs let a scan skip (for the
// incoming pod's required terms, or for the existing pods' required
// anti-affinity), and those that must be computed; zeros when PreFilter
// wrote no state or had no summaries.
func SummarySkips(cs fwk.CycleState, nodes []fwk.NodeInfo) (skipped, computed int) {
	s, err := preFilterStateOf(cs)
	if err != nil || s.cache.summaries == nil {
		return 0, 0
	}
	q := s.cache.summaries
	for _, ni := range nodes {
		if q.Summaries().Of(-1, ni) == nil || len(ni.GetPods()) == 0 {
			continue
		}
		if q.SkipsIncoming(nil, -1, ni) {
			skipped++
		} else {
			computed++
		}
		if len(ni.GetPodsWithRequiredAntiAffinity()) == 0 {
			continue
		}
		if skip, _ := q.SkipsExistingAnti(-1, ni); skip {
			skipped++
		} else {
			computed++
		}
	}
	return skipped, computed
}

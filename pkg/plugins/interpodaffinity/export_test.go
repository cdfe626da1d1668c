package interpodaffinity

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// NewScanning is New with every cache off: each cycle scans, as upstream's
// plugin does. For the external tests that compare it with New.
func NewScanning(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	return newPlugin(ctx, obj, h, fts, options{noCaches: true})
}

// IndexEntries counts the entries a plugin built by New holds in its node
// indexes, so that a test can tell that the caches were used at all.
func IndexEntries(p fwk.Plugin) int {
	c := p.(*InterPodAffinity).caches
	return len(c.existingAnti.entries) + len(c.incoming.entries) + len(c.score.entries) + len(c.keys.entries)
}

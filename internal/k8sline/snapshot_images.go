package k8sline

import (
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// keepImageCounts gives clone's image summaries the node counts of
// orig's. NodeInfo.Snapshot counts an image's nodes from the summary's
// set of node names, which only the scheduler cache's summaries carry; a
// snapshot's summaries hold the count alone, so a clone of a snapshot's
// NodeInfo says no node has any image and ImageLocality would score 0
// everywhere, where the scheduler's own cycle scores the images.
func keepImageCounts(orig fwk.NodeInfo, clone *framework.NodeInfo) {
	states := orig.GetImageStates()
	for name, st := range clone.ImageStates {
		if was, ok := states[name]; ok {
			st.NumNodes = was.NumNodes
		}
	}
}

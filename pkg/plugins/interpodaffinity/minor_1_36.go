//go:build k8s1.36

package interpodaffinity

import v1 "k8s.io/api/core/v1"

// Where 1.36's pod hint differs from 1.35's (isSchedulableAfterPodChange).
const (
	// ownLabelUpdateQueues: an update of the pending pod itself requeues it.
	ownLabelUpdateQueues = true
	// deleteChecksTheirAntiAffinity: a deleted pod whose own anti-affinity
	// selected the pending pod requeues it.
	deleteChecksTheirAntiAffinity = true
)

// notOnANode: a pod neither bound nor nominated is in no topology domain.
func notOnANode(p *v1.Pod) bool { return unplaced(p) }

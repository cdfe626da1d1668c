//go:build k8s1.35

package interpodaffinity

import v1 "k8s.io/api/core/v1"

// Where 1.35's pod hint differs from 1.36's (isSchedulableAfterPodChange).
const (
	// ownLabelUpdateQueues: 1.35 does not single out the pending pod's own
	// update; being unbound, it is ignored like any unbound pod.
	ownLabelUpdateQueues = false
	// deleteChecksTheirAntiAffinity: 1.35 requeues on a delete only when the
	// deleted pod tripped the pending pod's anti-affinity.
	deleteChecksTheirAntiAffinity = false
)

// notOnANode: 1.35 ignores a pod that is not bound, nominated or not.
func notOnANode(p *v1.Pod) bool { return p != nil && p.Spec.NodeName == "" }

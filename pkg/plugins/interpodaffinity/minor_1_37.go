//go:build !k8s1.35 && !k8s1.36

package interpodaffinity

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
)

// What 1.37's InterPodAffinity decides differently from 1.35 and 1.36's:
// placed pods' changes and the pending pod's own label updates arrive as two
// resources (AssignedPod, TargetPod) with a hint each; an anti-affinity term
// set is tripped when any of its terms matches (1.36 and older required all).

// podEvents registers changes of placed pods and of the pending pod's labels.
func podEvents(pl *InterPodAffinity) []fwk.ClusterEventWithHint {
	placedPodChanges := fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Add | fwk.UpdatePodLabel | fwk.Delete}
	ownLabelChanges := fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel}
	return []fwk.ClusterEventWithHint{
		{Event: placedPodChanges, QueueingHintFn: pl.isSchedulableAfterAssignedPodChange},
		{Event: ownLabelChanges, QueueingHintFn: pl.isSchedulableAfterTargetPodLabelUpdate},
	}
}

// resolveNamespaces folds the term's namespaceSelector into its namespace
// list, as upstream does for the incoming pod's terms: the selector becomes
// Nothing, so only the listed namespaces match.
func (pl *InterPodAffinity) resolveNamespaces(t *fwk.AffinityTerm) error {
	return pl.foldNamespaceSelector(t, labels.Nothing())
}

// isSchedulableAfterAssignedPodChange decides whether a placed pod that was
// added (before nil), relabelled, or deleted (after nil) can lift a
// rejection of pod. Moves between nodes arrive as a delete plus an add, so a
// pod present on both sides stayed where it was.
//
// A change helps when
//   - the changed pod now matches all of pod's affinity terms and did not
//     before (one pod must satisfy all terms, so the pod is judged whole);
//   - the changed pod matched one of pod's anti-affinity terms before and
//     matches none after (a deleted pod matches nothing after);
//   - it was deleted and its own anti-affinity selected pod.
func (pl *InterPodAffinity) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	before, after, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if unplaced(before) || unplaced(after) {
		logger.V(5).Info("Placed-pod event ignored: the pod is not on a node", "pod", klog.KObj(pod), "changedPod", klog.KObj(podOf(before, after)))
		return fwk.QueueSkip, nil
	}
	terms, err := requiredTermsOf(pod)
	if err != nil {
		return fwk.Queue, err
	}

	if after != nil && podaffinity.MatchesAll(terms.affinity, after, nil) && (before == nil || !podaffinity.MatchesAll(terms.affinity, before, nil)) {
		logger.V(5).Info("Requeueing: a placed pod now satisfies the pod's affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(after))
		return fwk.Queue, nil
	}
	if before != nil && matchesAny(terms.antiAffinity, before) && (after == nil || !matchesAny(terms.antiAffinity, after)) {
		logger.V(5).Info("Requeueing: a placed pod no longer trips the pod's anti-affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(before))
		return fwk.Queue, nil
	}
	if after == nil {
		// Symmetry: the deleted pod's anti-affinity may have kept pod out.
		// Parsed only now, so that an unparsable deleted pod does not turn
		// a requeue decided above into an error.
		theirs, err := fwk.GetAffinityTerms(before, fwk.GetPodAntiAffinityTerms(before.Spec.Affinity))
		if err != nil {
			return fwk.Queue, err
		}
		if matchesAny(theirs, pod) {
			logger.V(5).Info("Requeueing: a deleted pod's anti-affinity selected the pod", "pod", klog.KObj(pod), "changedPod", klog.KObj(before))
			return fwk.Queue, nil
		}
	}
	logger.V(5).Info("Placed-pod event ignored: it changes no inter-pod rule of the pod", "pod", klog.KObj(pod), "changedPod", klog.KObj(podOf(before, after)))
	return fwk.QueueSkip, nil
}

// isSchedulableAfterTargetPodLabelUpdate always requeues: with new labels
// pod may escape an existing pod's anti-affinity, and finding out which one
// would mean scanning the cluster.
func (pl *InterPodAffinity) isSchedulableAfterTargetPodLabelUpdate(logger klog.Logger, pod *v1.Pod, _, _ interface{}) (fwk.QueueingHint, error) {
	logger.V(5).Info("Requeueing: the pod's own labels changed", "pod", klog.KObj(pod))
	return fwk.Queue, nil
}

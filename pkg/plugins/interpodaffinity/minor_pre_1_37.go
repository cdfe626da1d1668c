//go:build k8s1.35 || k8s1.36

package interpodaffinity

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
)

// What 1.35 and 1.36's InterPodAffinity decides differently from 1.37's:
//   - every pod's changes arrive as one resource (Pod) with one hint, which
//     must tell the pending pod's own update and unplaced pods apart itself;
//   - an anti-affinity term set is tripped only when all of its terms match
//     (podMatchesAllAffinityTerms; 1.37 asks for any);
//   - the incoming pod's namespaceSelector is folded into its namespace list
//     on a copy of the term, so the selector stays as written and is then
//     matched against no namespace labels at all.
// Where 1.35 and 1.36 differ from each other is in minor_1_35.go and
// minor_1_36.go.

// podEvents registers changes of any pod.
func podEvents(pl *InterPodAffinity) []fwk.ClusterEventWithHint {
	podChanges := fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Add | fwk.UpdatePodLabel | fwk.Delete}
	return []fwk.ClusterEventWithHint{{Event: podChanges, QueueingHintFn: pl.isSchedulableAfterPodChange}}
}

// resolveNamespaces folds the selector into the namespace list. Upstream
// matches the incoming pod's terms with nil namespace labels and, on these
// minors, keeps the selector: a selector that matches an empty label set
// (NotIn, DoesNotExist) then matches every namespace, any other matches none
// beyond the folded list. Everything and Nothing say exactly that.
func (pl *InterPodAffinity) resolveNamespaces(t *fwk.AffinityTerm) error {
	after := labels.Nothing()
	if t.NamespaceSelector.Matches(labels.Set(nil)) {
		after = labels.Everything()
	}
	return pl.foldNamespaceSelector(t, after)
}

// isSchedulableAfterPodChange decides whether a pod that was added (before
// nil), relabelled, or deleted (after nil) can lift a rejection of pod.
func (pl *InterPodAffinity) isSchedulableAfterPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	before, after, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if ownLabelUpdateQueues && before != nil && after != nil && after.UID == pod.UID {
		logger.V(5).Info("Requeueing: the pod's own labels changed", "pod", klog.KObj(pod))
		return fwk.Queue, nil
	}
	if notOnANode(before) || notOnANode(after) {
		logger.V(5).Info("Pod event ignored: the pod is not on a node", "pod", klog.KObj(pod), "changedPod", klog.KObj(podOf(before, after)))
		return fwk.QueueSkip, nil
	}
	terms, err := requiredTermsOf(pod)
	if err != nil {
		return fwk.Queue, err
	}
	switch {
	case before != nil && after != nil:
		if !podaffinity.MatchesAll(terms.affinity, before, nil) && podaffinity.MatchesAll(terms.affinity, after, nil) {
			logger.V(5).Info("Requeueing: a placed pod now satisfies the pod's affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(after))
			return fwk.Queue, nil
		}
		if podaffinity.MatchesAll(terms.antiAffinity, before, nil) && !podaffinity.MatchesAll(terms.antiAffinity, after, nil) {
			logger.V(5).Info("Requeueing: a placed pod no longer trips the pod's anti-affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(after))
			return fwk.Queue, nil
		}
	case after != nil:
		if podaffinity.MatchesAll(terms.affinity, after, nil) {
			logger.V(5).Info("Requeueing: an added pod satisfies the pod's affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(after))
			return fwk.Queue, nil
		}
	default:
		if podaffinity.MatchesAll(terms.antiAffinity, before, nil) {
			logger.V(5).Info("Requeueing: a deleted pod tripped the pod's anti-affinity", "pod", klog.KObj(pod), "changedPod", klog.KObj(before))
			return fwk.Queue, nil
		}
		if deleteChecksTheirAntiAffinity {
			theirs, err := fwk.GetAffinityTerms(before, fwk.GetPodAntiAffinityTerms(before.Spec.Affinity))
			if err != nil {
				return fwk.Queue, err
			}
			if podaffinity.MatchesAll(theirs, pod, nil) {
				logger.V(5).Info("Requeueing: a deleted pod's anti-affinity selected the pod", "pod", klog.KObj(pod), "changedPod", klog.KObj(before))
				return fwk.Queue, nil
			}
		}
	}
	logger.V(5).Info("Pod event ignored: it changes no inter-pod rule of the pod", "pod", klog.KObj(pod), "changedPod", klog.KObj(podOf(before, after)))
	return fwk.QueueSkip, nil
}

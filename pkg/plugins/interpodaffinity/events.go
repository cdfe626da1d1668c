package interpodaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// EventsToRegister lists the cluster changes that can make a pod rejected by
// this plugin schedulable, with hints that filter out irrelevant ones. The
// hints evaluate the target pod's terms unexpanded and without namespace
// labels, as upstream does: they may requeue a pod needlessly, which is safe.
func (pl *InterPodAffinity) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		// A placed pod appearing can satisfy affinity; one changing labels can
		// start satisfying affinity or stop tripping anti-affinity; one
		// leaving can lift anti-affinity (either side's).
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Add | fwk.UpdatePodLabel | fwk.Delete}, QueueingHintFn: pl.isSchedulableAfterAssignedPodChange},
		// Existing pods' anti-affinity may no longer select the new labels.
		{Event: fwk.ClusterEvent{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel}, QueueingHintFn: pl.isSchedulableAfterTargetPodLabelUpdate},
		// A node can join or move between topology domains.
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// unplaced reports whether p is known and neither bound nor nominated.
func unplaced(p *v1.Pod) bool {
	return p != nil && p.Spec.NodeName == "" && p.Status.NominatedNodeName == ""
}

func (pl *InterPodAffinity) isSchedulableAfterAssignedPodChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldPod, newPod, err := util.As[*v1.Pod](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	// Moving between nodes (or nominations) arrives as delete + add.
	if unplaced(newPod) || unplaced(oldPod) {
		logger.V(5).Info("the changed pod is neither bound nor nominated, so it cannot make the target pod schedulable",
			"pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod), "newPod", klog.KObj(newPod))
		return fwk.QueueSkip, nil
	}
	// Both parsed up front, as upstream: a parse error requeues whatever the
	// event.
	terms, err := fwk.GetAffinityTerms(pod, fwk.GetPodAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	antiTerms, err := fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}

	switch {
	case oldPod != nil && newPod != nil: // labels updated
		// One pod must match all affinity terms, so it is enough to look at
		// the changed pod as a whole.
		if !matchesAll(terms, oldPod) && matchesAll(terms, newPod) {
			logger.V(5).Info("a placed pod now matches the target pod's affinity", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return fwk.Queue, nil
		}
		if matchesAny(antiTerms, oldPod) && !matchesAny(antiTerms, newPod) {
			logger.V(5).Info("a placed pod no longer matches the target pod's anti-affinity", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return fwk.Queue, nil
		}
		logger.V(5).Info("a placed pod's label change does not help the target pod", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
		return fwk.QueueSkip, nil

	case newPod != nil: // added
		if matchesAll(terms, newPod) {
			logger.V(5).Info("an added placed pod matches the target pod's affinity", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
			return fwk.Queue, nil
		}
		logger.V(5).Info("an added placed pod does not match the target pod's affinity", "pod", klog.KObj(pod), "newPod", klog.KObj(newPod))
		return fwk.QueueSkip, nil
	}

	// deleted
	if matchesAny(antiTerms, oldPod) {
		logger.V(5).Info("a deleted pod matched the target pod's anti-affinity", "pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
		return fwk.Queue, nil
	}
	oldAntiTerms, err := fwk.GetAffinityTerms(oldPod, fwk.GetPodAntiAffinityTerms(oldPod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	if matchesAny(oldAntiTerms, pod) {
		logger.V(5).Info("the target pod matched a deleted pod's anti-affinity", "pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
		return fwk.Queue, nil
	}
	logger.V(5).Info("a deleted pod had no anti-affinity relation with the target pod", "pod", klog.KObj(pod), "oldPod", klog.KObj(oldPod))
	return fwk.QueueSkip, nil
}

func (pl *InterPodAffinity) isSchedulableAfterTargetPodLabelUpdate(logger klog.Logger, pod *v1.Pod, _, _ interface{}) (fwk.QueueingHint, error) {
	logger.V(5).Info("the target pod's labels changed; existing pods' anti-affinity may no longer select it", "pod", klog.KObj(pod))
	return fwk.Queue, nil
}

func (pl *InterPodAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}

	terms, err := fwk.GetAffinityTerms(pod, fwk.GetPodAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	// Affinity: a node lacking a term's key is rejected outright, so a node
	// that gains the key (or is added with it) or changes domain may help.
	for i := range terms {
		key := terms[i].TopologyKey
		if oldNode == nil {
			if _, ok := newNode.Labels[key]; ok {
				logger.V(5).Info("an added node has a topology key of the pod's affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
				return fwk.Queue, nil
			}
			continue
		}
		oldValue, oldHas := oldNode.Labels[key]
		newValue, newHas := newNode.Labels[key]
		if newHas && (!oldHas || oldValue != newValue) {
			logger.V(5).Info("a node gained or changed a topology key of the pod's affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return fwk.Queue, nil
		}
	}

	antiTerms, err := fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	// Anti-affinity: a node without the key never violates, so any added
	// node may help, as may a node losing the key or changing domain.
	for i := range antiTerms {
		if oldNode == nil {
			logger.V(5).Info("a node was added; the pod has anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return fwk.Queue, nil
		}
		key := antiTerms[i].TopologyKey
		oldValue, oldHas := oldNode.Labels[key]
		newValue, newHas := newNode.Labels[key]
		if oldHas && (!newHas || oldValue != newValue) {
			logger.V(5).Info("a node lost or changed a topology key of the pod's anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
			return fwk.Queue, nil
		}
	}
	logger.V(5).Info("the node change does not touch the pod's affinity or anti-affinity topology keys", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.QueueSkip, nil
}

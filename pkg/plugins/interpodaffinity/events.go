package interpodaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
)

// EventsToRegister lists the cluster changes that can make a pod this plugin
// rejected schedulable, each with a hint that drops the irrelevant ones.
//
// The hints read the rejected pod's terms as written (namespace selectors
// not expanded, no namespace labels), which is what upstream does: they can
// requeue a pod for nothing, never miss one that became schedulable through
// a change they can see. Which pod events are registered, and how they are
// told apart, differs between minors (podEvents, minor_*.go).
func (pl *InterPodAffinity) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	nodeChanges := fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}
	return append(podEvents(pl), fwk.ClusterEventWithHint{Event: nodeChanges, QueueingHintFn: pl.isSchedulableAfterNodeChange}), nil
}

// unplaced reports whether p is known and neither bound nor nominated. Such a
// pod is on no node, so it is in no topology domain and cannot count for or
// against anyone.
func unplaced(p *v1.Pod) bool {
	return p != nil && p.Spec.NodeName == "" && p.Status.NominatedNodeName == ""
}

// podTerms are the required terms of the pod a hint is evaluated for.
type podTerms struct {
	affinity, antiAffinity []fwk.AffinityTerm
}

// requiredTermsOf parses pod's required affinity, then anti-affinity terms.
// The first parse error is returned as is: a hint that cannot parse requeues
// the pod and reports the error, and the framework logs it.
func requiredTermsOf(pod *v1.Pod) (podTerms, error) {
	var pt podTerms
	var err error
	if pt.affinity, err = fwk.GetAffinityTerms(pod, fwk.GetPodAffinityTerms(pod.Spec.Affinity)); err != nil {
		return podTerms{}, err
	}
	if pt.antiAffinity, err = fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity)); err != nil {
		return podTerms{}, err
	}
	return pt, nil
}

// podOf returns whichever side of an event is present, for logging.
func podOf(before, after *v1.Pod) *v1.Pod {
	if after != nil {
		return after
	}
	return before
}

// isSchedulableAfterNodeChange decides whether an added node (before nil)
// or a node whose labels changed can lift a rejection of pod.
//
// Filter rejects a node lacking an affinity term's key outright, so for
// affinity what helps is a node entering a domain: added with the key,
// gaining it, or changing its value. For anti-affinity a node without the key
// is never rejected, so what helps is a node leaving a domain: losing the
// key or changing its value; any added node may also land in a free domain
// or none. Anti-affinity terms are parsed only when affinity did not already
// decide, so that their parse errors surface exactly when they matter.
func (pl *InterPodAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	before, after, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}

	affinity, err := fwk.GetAffinityTerms(pod, fwk.GetPodAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	for i := range affinity {
		if d := domainChange(before, after, affinity[i].TopologyKey); d.entered() {
			logger.V(5).Info("Requeueing: a node entered a topology domain of the pod's affinity", "pod", klog.KObj(pod), "node", klog.KObj(after), "topologyKey", affinity[i].TopologyKey)
			return fwk.Queue, nil
		}
	}

	antiAffinity, err := fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return fwk.Queue, err
	}
	if before == nil && len(antiAffinity) > 0 {
		logger.V(5).Info("Requeueing: a node was added and the pod has anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(after))
		return fwk.Queue, nil
	}
	for i := range antiAffinity {
		if d := domainChange(before, after, antiAffinity[i].TopologyKey); d.left() {
			logger.V(5).Info("Requeueing: a node left a topology domain of the pod's anti-affinity", "pod", klog.KObj(pod), "node", klog.KObj(after), "topologyKey", antiAffinity[i].TopologyKey)
			return fwk.Queue, nil
		}
	}
	logger.V(5).Info("Node event ignored: no topology key of the pod's terms changed", "pod", klog.KObj(pod), "node", klog.KObj(after))
	return fwk.QueueSkip, nil
}

// topologyMove is how a node event changed the node's domain for one
// topology key. A node that did not exist before had no key.
type topologyMove struct {
	hadKey, hasKey bool
	sameValue      bool
}

// domainChange compares the node's label key before and after the event.
func domainChange(before, after *v1.Node, key string) topologyMove {
	var m topologyMove
	var old, cur string
	if before != nil {
		old, m.hadKey = before.Labels[key]
	}
	cur, m.hasKey = after.Labels[key]
	m.sameValue = old == cur
	return m
}

// entered: the node is now in a domain of the key it was not in before.
func (m topologyMove) entered() bool { return m.hasKey && (!m.hadKey || !m.sameValue) }

// left: the node is no longer in the domain of the key it was in before.
func (m topologyMove) left() bool { return m.hadKey && (!m.hasKey || !m.sameValue) }

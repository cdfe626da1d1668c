package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister returns the node events that can make a pod rejected by
// this plugin schedulable: a node appearing or its labels changing. Nothing
// else the plugin looks at (the pod's own spec aside) can change.
func (pl *NodeAffinity) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{
		Event:          fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
		QueueingHintFn: pl.isSchedulableAfterNodeChange,
	}}, nil
}

// isSchedulableAfterNodeChange requeues the pod only if the added or updated
// node now passes Filter's affinity checks and, for an update, did not pass
// before (an update of an already-matching node cannot be what unblocks it).
// When matching errors, the pod is requeued: better a wasted retry than a
// pod stuck in the unschedulable queue.
func (pl *NodeAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := asNodes(oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if pl.addedNodeSelector != nil && !pl.addedNodeSelector.Match(newNode) {
		logger.V(4).Info("Node doesn't match the scheduler-enforced node affinity; the event can't make the pod schedulable", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	matches, err := required.Match(newNode)
	if err != nil {
		return fwk.Queue, err
	}
	if !matches {
		logger.V(5).Info("Node doesn't match the pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	if oldNode == nil {
		logger.V(5).Info("Added node matches the pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.Queue, nil
	}
	matched, err := required.Match(oldNode)
	if err != nil {
		return fwk.Queue, err
	}
	if matched {
		logger.V(5).Info("Updated node already matched the pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Updated node now matches the pod's node affinity/selector", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// asNodes converts the event objects to nodes. oldObj is nil for an add and
// may be a DeletedFinalStateUnknown tombstone.
func asNodes(oldObj, newObj interface{}) (oldNode, newNode *v1.Node, err error) {
	if newObj != nil {
		var ok bool
		if newNode, ok = newObj.(*v1.Node); !ok {
			return nil, nil, fmt.Errorf("expected *v1.Node, but got %T", newObj)
		}
	}
	if oldObj != nil {
		if tomb, ok := oldObj.(cache.DeletedFinalStateUnknown); ok {
			oldObj = tomb.Obj
		}
		var ok bool
		if oldNode, ok = oldObj.(*v1.Node); !ok {
			return nil, nil, fmt.Errorf("expected *v1.Node, but got %T", oldObj)
		}
	}
	return oldNode, newNode, nil
}

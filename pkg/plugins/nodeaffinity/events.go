package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"
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

// isSchedulableAfterNodeChange decides whether a node add or label update can
// undo this plugin's rejection. Queue needs two things:
//   - the node passes Filter's checks now (added selector and the pod's
//     nodeSelector + required affinity);
//   - for an update, the pod's own constraints did not already match the old
//     node. The added selector is deliberately not part of this "before"
//     side, as upstream: a node that only starts passing the added selector
//     while the pod's affinity matched all along is skipped.
//
// The old node is evaluated only when the new one matches, so a parse error
// in the pod's terms surfaces (as Queue plus the error: a wasted retry beats
// a pod stuck as unschedulable) only when it decides the hint.
func (pl *NodeAffinity) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	var required nodeaffinity.RequiredNodeAffinity
	matchesNew := pl.addedNodeSelector == nil || pl.addedNodeSelector.match(newNode)
	if matchesNew {
		required = nodeaffinity.GetRequiredNodeAffinity(pod)
		if matchesNew, err = required.Match(newNode); err != nil {
			return fwk.Queue, err
		}
	}
	matchedOld := false // an added node had nothing to match before
	if matchesNew && oldNode != nil {
		if matchedOld, err = required.Match(oldNode); err != nil {
			return fwk.Queue, err
		}
	}
	hint := fwk.QueueSkip
	if matchesNew && !matchedOld {
		hint = fwk.Queue
	}
	if v := logger.V(5); v.Enabled() {
		v.Info("Node affinity verdict for a node event", "pod", klog.KObj(pod), "node", klog.KObj(newNode),
			"nodeAdded", oldNode == nil, "matchesNow", matchesNew, "matchedBefore", matchedOld, "hint", hint)
	}
	return hint, nil
}

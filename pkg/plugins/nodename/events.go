package nodename

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
)

// EventsToRegister returns the cluster events that can make a pod rejected by
// this plugin schedulable: only the named node appearing. There is no
// queueing hint (which the queue treats as Queue), matching upstream: the
// event is rare and a hint would have to repeat Filter's one comparison.
func (pl *NodeName) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}},
	}, nil
}

package nodename

import (
	"context"
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

func TestEventsToRegister(t *testing.T) {
	got, err := newPlugin(t, feature.Features{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d events, want 1", len(got))
	}
	want := fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add}
	if got[0].Event != want {
		t.Errorf("event = %v, want %v", got[0].Event, want)
	}
	if got[0].QueueingHintFn != nil {
		t.Error("NodeName registers no queueing hint (the queue then always requeues)")
	}
}

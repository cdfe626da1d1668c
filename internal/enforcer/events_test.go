package enforcer

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// Every reason the reports emit goes to exactly one broadcaster, and the
// eviction requests' own to the one whose budget follows the eviction rate.
func TestEventRouterSplitsEvictionEvents(t *testing.T) {
	evictions, states := record.NewFakeRecorder(10), record.NewFakeRecorder(10)
	r := eventRouter{evictions: evictions, states: states}
	pod := &v1.Pod{}
	for reason, toEvictions := range map[string]bool{
		"PlacementViolation": false, "PlacementProtected": false, "PlacementNoFit": false, "PlacementUnjudged": false,
		"PlacementEvicted": true, "PlacementEvictionBlocked": true, "PlacementEvictionFailed": true, "PlacementDryRun": true,
	} {
		r.Event(pod, v1.EventTypeNormal, reason, "m")
		want, other := states, evictions
		if toEvictions {
			want, other = evictions, states
		}
		if len(want.Events) != 1 || len(other.Events) != 0 {
			t.Errorf("%s: %d events on its broadcaster, %d on the other; want 1 and 0", reason, len(want.Events), len(other.Events))
		}
		for len(want.Events) > 0 {
			<-want.Events
		}
		for len(other.Events) > 0 {
			<-other.Events
		}
	}
}

func TestEvictionEventBudgetFollowsTheRate(t *testing.T) {
	for _, tc := range []struct {
		rate       float64
		burst      int
		eventQPS   float32
		eventBurst int
		wantQPS    float32
		wantBurst  int
	}{
		{rate: 1, burst: 5, eventQPS: 5, eventBurst: 25, wantQPS: 5, wantBurst: 25},
		{rate: 20, burst: 20, eventQPS: 5, eventBurst: 25, wantQPS: 40, wantBurst: 40},
		{rate: 0.5, burst: 30, eventQPS: 10, eventBurst: 10, wantQPS: 10, wantBurst: 60},
	} {
		cfg := &enforcerv1alpha1.EnforcerConfiguration{EvictionsPerSecond: tc.rate, Burst: tc.burst, ClientConnection: enforcerv1alpha1.ClientConnection{EventQPS: tc.eventQPS, EventBurst: tc.eventBurst}}
		if qps, burst := evictionEventBudget(cfg); qps != tc.wantQPS || burst != tc.wantBurst {
			t.Errorf("rate %v burst %d, events %v/%d: budget %v/%d, want %v/%d", tc.rate, tc.burst, tc.eventQPS, tc.eventBurst, qps, burst, tc.wantQPS, tc.wantBurst)
		}
	}
}

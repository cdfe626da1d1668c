package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// registered returns the plugin's events, checking that every one has a hint.
func registered(t *testing.T, fts feature.Features) []fwk.ClusterEventWithHint {
	t.Helper()
	evs, err := newPlugin(t, fts).EventsToRegister(context.Background())
	if err != nil {
		t.Fatalf("EventsToRegister: %v", err)
	}
	for _, e := range evs {
		if e.QueueingHintFn == nil {
			t.Fatalf("event %v has no QueueingHintFn", e.Event)
		}
	}
	return evs
}

func TestEventsToRegister(t *testing.T) {
	want := []fwk.ClusterEvent{
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeTaint},
		{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodToleration},
	}
	// No gate changes the event list.
	for _, fts := range []feature.Features{gatesOff, comparisonOn, resizeGateOn} {
		evs := registered(t, fts)
		if len(evs) != len(want) {
			t.Fatalf("got %d events, want %d", len(evs), len(want))
		}
		for i := range want {
			if evs[i].Event != want[i] {
				t.Errorf("event %d = %+v, want %+v", i, evs[i].Event, want[i])
			}
		}
	}
}

func TestNodeChangeHint(t *testing.T) {
	untolerated := nodeWith(taint("dedicated", "db", noSched))
	tolerated := nodeWith(taint("ok", "", noExec))
	clean := nodeWith()
	preferOnly := nodeWith(taint("dedicated", "db", prefer))
	tests := []struct {
		name     string
		fts      feature.Features
		pod      *v1.Pod
		old, new any
		want     fwk.QueueingHint
		wantErr  bool
	}{
		{name: "added node without taints", new: clean, want: fwk.Queue},
		{name: "added node with a tolerated taint", new: tolerated, want: fwk.Queue},
		{name: "added node with an untolerated taint", new: untolerated, want: fwk.QueueSkip},
		{name: "untolerated taint removed", old: untolerated, new: clean, want: fwk.Queue},
		{name: "untolerated taint softened to PreferNoSchedule", old: untolerated, new: preferOnly, want: fwk.Queue},
		{name: "untolerated taint replaced by a tolerated one", old: untolerated, new: tolerated, want: fwk.Queue},
		{name: "was already tolerated", old: tolerated, new: clean, want: fwk.QueueSkip},
		{name: "becomes untolerated", old: clean, new: untolerated, want: fwk.QueueSkip},
		{name: "stays untolerated with another taint", old: untolerated, new: nodeWith(taint("x", "", noExec)), want: fwk.QueueSkip},
		{
			name: "Gt toleration, gate off: still untolerated",
			pod:  podWith(tu.Tol("ok", exists, "", ""), tu.Tol("size", gt, "4", noSched)),
			old:  untolerated, new: nodeWith(taint("size", "8", noSched)), want: fwk.QueueSkip,
		},
		{
			name: "Gt toleration, gate on: now tolerated",
			fts:  comparisonOn,
			pod:  podWith(tu.Tol("ok", exists, "", ""), tu.Tol("size", gt, "4", noSched)),
			old:  untolerated, new: nodeWith(taint("size", "8", noSched)), want: fwk.Queue,
		},
		{name: "new object of the wrong type", old: clean, new: tu.MakePod("ns", "x").Obj(), want: fwk.Queue, wantErr: true},
		{name: "old object of the wrong type", old: "nope", new: clean, want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if pod == nil {
				pod = podWith(tu.Tol("ok", exists, "", ""))
			}
			logger, _ := ktesting.NewTestContext(t)
			got, err := registered(t, tc.fts)[0].QueueingHintFn(logger, pod, tc.old, tc.new)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodTolerationChangeHint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	oldPod := podWith()
	newPod := podWith(tu.Tol("a", exists, "", ""))
	for _, pair := range [][2]any{{oldPod, newPod}, {newPod, oldPod}, {nil, nil}} {
		got, err := registered(t, gatesOff)[1].QueueingHintFn(logger, newPod, pair[0], pair[1])
		if err != nil || got != fwk.Queue {
			t.Errorf("hint(%v) = %v, %v; want Queue, nil", pair, got, err)
		}
	}
}

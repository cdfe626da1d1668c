package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestEventsToRegister(t *testing.T) {
	pl := &InterPodAffinity{}
	got, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []fwk.ClusterEvent{
		{Resource: fwk.AssignedPod, ActionType: fwk.Add | fwk.UpdatePodLabel | fwk.Delete},
		{Resource: fwk.TargetPod, ActionType: fwk.UpdatePodLabel},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel},
	}
	var events []fwk.ClusterEvent
	for _, e := range got {
		events = append(events, e.Event)
		if e.QueueingHintFn == nil {
			t.Errorf("%v has no queueing hint", e.Event)
		}
	}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestAssignedPodHint(t *testing.T) {
	affine := tu.MakePod("default", "target").Label("app", "web").
		RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "db")), tu.AffinityTerm(rack, sel("tier", "gold"))).Obj()
	averse := tu.MakePod("default", "target").Label("app", "web").
		RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "db")), tu.AffinityTerm(rack, sel("app", "cache"))).Obj()
	plain := tu.MakePod("default", "target").Label("app", "web").Obj()
	badAffinity := tu.MakePod("default", "target").
		RequiredPodAntiAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus")))).Obj()

	dbGold := placed("default", "other", "n1").Label("app", "db").Label("tier", "gold").Obj()
	dbOnly := placed("default", "other", "n1").Label("app", "db").Obj()
	cachePod := placed("default", "other", "n1").Label("app", "cache").Obj()
	none := placed("default", "other", "n1").Label("app", "none").Obj()
	guard := placed("default", "other", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
	nominated := tu.MakePod("default", "other").Label("app", "db").Label("tier", "gold").NominatedNodeName("n1").Obj()
	pending := tu.MakePod("default", "other").Label("app", "db").Label("tier", "gold").Obj()
	otherNS := tu.MakePod("elsewhere", "other").NodeName("n1").Label("app", "db").Label("tier", "gold").Obj()

	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new interface{}
		// tombstone delivers old wrapped as the informer does for a delete
		// it only learned about on relist.
		tombstone bool
		want      fwk.QueueingHint
		wantErr   bool
	}{
		{name: "add: matches all affinity terms", pod: affine, new: dbGold, want: fwk.Queue},
		{name: "add: matches one term only", pod: affine, new: dbOnly, want: fwk.QueueSkip},
		{name: "add: nominated counts as placed", pod: affine, new: nominated, want: fwk.Queue},
		{name: "add: neither bound nor nominated", pod: affine, new: pending, want: fwk.QueueSkip},
		{name: "add: other namespace (own-namespace terms)", pod: affine, new: otherNS, want: fwk.QueueSkip},
		{name: "add: anti-affinity target never helped by an add", pod: averse, new: cachePod, want: fwk.QueueSkip},
		{name: "update: starts matching all affinity terms", pod: affine, old: dbOnly, new: dbGold, want: fwk.Queue},
		{name: "update: keeps matching", pod: affine, old: dbGold, new: dbGold, want: fwk.QueueSkip},
		{name: "update: stops matching an anti-affinity term", pod: averse, old: cachePod, new: none, want: fwk.Queue},
		{name: "update: moves between anti-affinity terms", pod: averse, old: cachePod, new: dbOnly, want: fwk.QueueSkip},
		{name: "update: old side unplaced", pod: affine, old: pending, new: dbGold, want: fwk.QueueSkip},
		{name: "delete: matched an anti-affinity term", pod: averse, old: cachePod, want: fwk.Queue},
		{name: "delete: its anti-affinity selected the target", pod: plain, old: guard, want: fwk.Queue},
		{name: "delete: unrelated", pod: plain, old: none, want: fwk.QueueSkip},
		{name: "delete: affinity target is not helped", pod: affine, old: dbGold, want: fwk.QueueSkip},
		{name: "delete: tombstone", pod: averse, old: cachePod.DeepCopy(), tombstone: true, want: fwk.Queue},
		{name: "delete: deleted pod's anti-affinity unparsable", pod: plain, old: placed("default", "o", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("a", "Bogus")))).Obj(), want: fwk.Queue, wantErr: true},
		{name: "target's terms unparsable", pod: badAffinity, new: dbGold, want: fwk.Queue, wantErr: true},
		{name: "wrong object type", pod: affine, new: &v1.Node{}, want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			old := tc.old
			if tc.tombstone {
				old = cache.DeletedFinalStateUnknown{Key: "default/other", Obj: tc.old}
			}
			got, err := (&InterPodAffinity{}).isSchedulableAfterAssignedPodChange(logger, tc.pod, old, tc.new)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTargetPodHint(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	pod := tu.MakePod("default", "p").Obj()
	got, err := (&InterPodAffinity{}).isSchedulableAfterTargetPodLabelUpdate(logger, pod, pod, pod)
	if err != nil || got != fwk.Queue {
		t.Errorf("got %v, %v; want Queue", got, err)
	}
}

func TestNodeHint(t *testing.T) {
	affine := tu.MakePod("default", "p").RequiredPodAffinity(tu.AffinityTerm(zone, everything)).Obj()
	averse := tu.MakePod("default", "p").RequiredPodAntiAffinity(tu.AffinityTerm(zone, everything)).Obj()
	plain := tu.MakePod("default", "p").PreferredPodAffinity(tu.Weighted(1, tu.AffinityTerm(zone, everything))).Obj()
	bad := tu.MakePod("default", "p").RequiredPodAffinity(tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("a", "Bogus")))).Obj()

	inZ1 := tu.MakeNode("n").Label(zone, "z1").Obj()
	inZ2 := tu.MakeNode("n").Label(zone, "z2").Obj()
	noZone := tu.MakeNode("n").Obj()
	inZ1Relabelled := tu.MakeNode("n").Label(zone, "z1").Label("other", "x").Obj()

	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new *v1.Node
		want     fwk.QueueingHint
		wantErr  bool
	}{
		{name: "affinity: added node with the key", pod: affine, new: inZ1, want: fwk.Queue},
		{name: "affinity: added node without the key", pod: affine, new: noZone, want: fwk.QueueSkip},
		{name: "affinity: node gains the key", pod: affine, old: noZone, new: inZ1, want: fwk.Queue},
		{name: "affinity: node changes domain", pod: affine, old: inZ1, new: inZ2, want: fwk.Queue},
		{name: "affinity: node loses the key", pod: affine, old: inZ1, new: noZone, want: fwk.QueueSkip},
		{name: "affinity: unrelated label change", pod: affine, old: inZ1, new: inZ1Relabelled, want: fwk.QueueSkip},
		{name: "anti-affinity: any added node", pod: averse, new: noZone, want: fwk.Queue},
		{name: "anti-affinity: node loses the key", pod: averse, old: inZ1, new: noZone, want: fwk.Queue},
		{name: "anti-affinity: node changes domain", pod: averse, old: inZ1, new: inZ2, want: fwk.Queue},
		{name: "anti-affinity: node gains the key", pod: averse, old: noZone, new: inZ1, want: fwk.QueueSkip},
		{name: "anti-affinity: unrelated label change", pod: averse, old: inZ1, new: inZ1Relabelled, want: fwk.QueueSkip},
		{name: "preferred terms only: added node", pod: plain, new: inZ1, want: fwk.QueueSkip},
		{name: "unparsable terms", pod: bad, new: inZ1, want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var old, new interface{}
			if tc.old != nil {
				old = tc.old
			}
			if tc.new != nil {
				new = tc.new
			}
			got, err := (&InterPodAffinity{}).isSchedulableAfterNodeChange(logger, tc.pod, old, new)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("wrong object type", func(t *testing.T) {
		logger, _ := ktesting.NewTestContext(t)
		got, err := (&InterPodAffinity{}).isSchedulableAfterNodeChange(logger, affine, nil, &v1.Pod{})
		if err == nil || got != fwk.Queue {
			t.Errorf("got %v, %v; want Queue with an error", got, err)
		}
	})
}

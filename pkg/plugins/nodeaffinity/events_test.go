package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestEventsToRegister(t *testing.T) {
	got, err := newPlugin(t, nil, feature.Features{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d events, want 1", len(got))
	}
	want := fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}
	if got[0].Event != want {
		t.Errorf("event = %v, want %v", got[0].Event, want)
	}
	if got[0].QueueingHintFn == nil {
		t.Error("missing queueing hint")
	}
}

func TestQueueingHint(t *testing.T) {
	zone := func(z string) *v1.Node { return tu.MakeNode("n1").Label("zone", z).Obj() }
	unlabelled := tu.MakeNode("n1").Obj()
	pod := func() *tu.PodWrapper { return tu.MakePod("ns", "p") }
	zoneA := pod().NodeSelector(map[string]string{"zone": "a"}).Obj()

	tests := []struct {
		name           string
		pod            *v1.Pod
		added          *v1.NodeAffinity
		oldObj, newObj interface{}
		want           fwk.QueueingHint
		wantErr        bool
	}{
		{name: "add: pod without constraints", pod: pod().Obj(), newObj: unlabelled, want: fwk.Queue},
		{name: "add: node matches nodeSelector", pod: zoneA, newObj: zone("a"), want: fwk.Queue},
		{name: "add: node misses nodeSelector", pod: zoneA, newObj: zone("b"), want: fwk.QueueSkip},
		{
			name:   "add: node matches required affinity",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", in, "a", "b"))).Obj(),
			newObj: zone("b"), want: fwk.Queue,
		},
		{
			name:   "add: node misses required affinity",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", in, "a", "b"))).Obj(),
			newObj: zone("c"), want: fwk.QueueSkip,
		},
		{
			name:   "add: preferred terms are irrelevant",
			pod:    pod().PreferredNodeTerm(10, tu.Term(tu.Expr("zone", in, "a"))).Obj(),
			newObj: zone("b"), want: fwk.Queue,
		},
		{name: "update: label added makes it match", pod: zoneA, oldObj: unlabelled, newObj: zone("a"), want: fwk.Queue},
		{name: "update: label changed makes it match", pod: zoneA, oldObj: zone("b"), newObj: zone("a"), want: fwk.Queue},
		{name: "update: matched before and after", pod: zoneA, oldObj: zone("a"), newObj: tu.MakeNode("n1").Label("zone", "a").Label("x", "y").Obj(), want: fwk.QueueSkip},
		{name: "update: stops matching", pod: zoneA, oldObj: zone("a"), newObj: zone("b"), want: fwk.QueueSkip},
		{name: "update: matches neither before nor after", pod: zoneA, oldObj: zone("b"), newObj: zone("c"), want: fwk.QueueSkip},
		{name: "update: old node as a tombstone", pod: zoneA, oldObj: cache.DeletedFinalStateUnknown{Key: "n1", Obj: zone("b")}, newObj: zone("a"), want: fwk.Queue},
		{
			name:   "add: addedAffinity mismatch skips even though the pod matches",
			pod:    zoneA,
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			newObj: zone("a"), want: fwk.QueueSkip,
		},
		{
			name:   "update: addedAffinity mismatch skips even though the pod starts matching",
			pod:    zoneA,
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			oldObj: zone("b"), newObj: zone("a"), want: fwk.QueueSkip,
		},
		{
			// Only the pod's own constraints are compared across an update.
			name:   "update: node starts passing addedAffinity only, the pod matched before: skip",
			pod:    zoneA,
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			oldObj: zone("a"), newObj: tu.MakeNode("n1").Label("zone", "a").Label("disk", "ssd").Obj(), want: fwk.QueueSkip,
		},
		{
			name:   "update: node starts passing addedAffinity and the pod's affinity",
			pod:    zoneA,
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			oldObj: zone("b"), newObj: tu.MakeNode("n1").Label("zone", "a").Label("disk", "ssd").Obj(), want: fwk.Queue,
		},
		{
			name:   "add: addedAffinity and pod both match",
			pod:    zoneA,
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			newObj: tu.MakeNode("n1").Label("zone", "a").Label("disk", "ssd").Obj(), want: fwk.Queue,
		},
		{
			name:   "add: addedAffinity with no terms skips every node",
			pod:    pod().Obj(),
			added:  requiredAdded(),
			newObj: zone("a"), want: fwk.QueueSkip,
		},
		{
			name:   "add: only added preferred terms, which are irrelevant",
			pod:    zoneA,
			added:  preferredAdded(pref(5, tu.Term(tu.Expr("disk", in, "ssd")))),
			newObj: zone("a"), want: fwk.Queue,
		},
		{
			name:   "add: parse error in the only required term requeues with the error",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", "Bogus", "a"))).Obj(),
			newObj: zone("a"), want: fwk.Queue, wantErr: true,
		},
		{
			name:   "add: parse error in one term, another matches: no error",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", "Bogus", "a")), tu.Term(tu.Expr("zone", in, "a"))).Obj(),
			newObj: zone("a"), want: fwk.Queue,
		},
		{
			name:   "update: parse error evaluating the old node requeues with the error",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", "Bogus", "a")), tu.Term(tu.Expr("zone", in, "a"))).Obj(),
			oldObj: zone("b"), newObj: zone("a"), want: fwk.Queue, wantErr: true,
		},
		{
			// The new node fails the nodeSelector (no error); the old one
			// passes it and would reach the bad term. The old node is not
			// evaluated when the new one misses, so that error never surfaces.
			name: "update: new node misses, old node would hit the parse error: skip without error",
			pod: pod().NodeSelector(map[string]string{"zone": "a"}).
				RequiredNodeTerms(tu.Term(tu.Expr("zone", "Bogus", "a")), tu.Term(tu.Expr("disk", in, "ssd"))).Obj(),
			oldObj: zone("a"), newObj: zone("b"), want: fwk.QueueSkip,
		},
		{
			name:   "update: addedAffinity misses the new node, the pod's terms would error: skip without error",
			pod:    pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", "Bogus", "a"))).Obj(),
			added:  requiredAdded(tu.Term(tu.Expr("disk", in, "ssd"))),
			oldObj: zone("b"), newObj: zone("a"), want: fwk.QueueSkip,
		},
		{name: "new object of the wrong type", pod: zoneA, newObj: tu.MakePod("ns", "x").Obj(), want: fwk.Queue, wantErr: true},
		{name: "old object of the wrong type", pod: zoneA, oldObj: "node?", newObj: zone("a"), want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, tc.added, feature.Features{})
			events, err := pl.EventsToRegister(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, err := events[0].QueueingHintFn(klog.Background(), tc.pod, tc.oldObj, tc.newObj)
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}

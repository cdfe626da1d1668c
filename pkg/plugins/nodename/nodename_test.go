package nodename

import (
	"context"
	"k8s.io/apimachinery/pkg/runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestName(t *testing.T) {
	if got := newPlugin(t, feature.Features{}).Name(); got != "PlacementNodeName" {
		t.Errorf("Name() = %q", got)
	}
}

// NodeName takes no args: none or empty ones start, any other is refused
// with the fix (upstream ignores them; whoever wrote them expects an effect).
func TestNewRefusesArgs(t *testing.T) {
	for _, ok := range []runtime.Object{nil, tu.RawArgs(``), tu.RawArgs(`{}`), tu.RawArgs(`null`)} {
		if _, err := New(context.Background(), ok, nil, feature.Features{}); err != nil {
			t.Errorf("New(%v): %v", ok, err)
		}
	}
	_, err := New(context.Background(), tu.RawArgs(`{"whatever":1}`), nil, feature.Features{})
	if want := `this plugin takes no args: remove its pluginConfig entry (got fields: whatever)`; err == nil || err.Error() != want {
		t.Errorf("New with args: %v, want %q", err, want)
	}
}

func TestPreFilterAndFilter(t *testing.T) {
	nodes := []*v1.Node{tu.MakeNode("alpha").Obj(), tu.MakeNode("beta").Obj(), tu.MakeNode("gamma").Obj()}
	const reject = "node(s) didn't match the requested node name"
	tests := []struct {
		name string
		pod  *v1.Pod
		fts  feature.Features
		// wantNames nil means PreFilter returns a nil result (all nodes).
		wantNames sets.Set[string]
		// wantReject lists the nodes Filter rejects.
		wantReject sets.Set[string]
	}{
		{
			name:       "no nodeName: every node passes, no narrowing",
			pod:        tu.MakePod("ns", "p").Obj(),
			wantReject: sets.New[string](),
		},
		{
			name:       "nodeName set: narrowed to it, the others rejected",
			pod:        tu.MakePod("ns", "p").NodeName("beta").Obj(),
			wantNames:  sets.New("beta"),
			wantReject: sets.New("alpha", "gamma"),
		},
		{
			name:       "nodeName of a node not in the snapshot: still narrowed to it, every node rejected",
			pod:        tu.MakePod("ns", "p").NodeName("delta").Obj(),
			wantNames:  sets.New("delta"),
			wantReject: sets.New("alpha", "beta", "gamma"),
		},
		{
			// Unlike the affinity plugins, NodeName has no deferred-resize
			// special case: the bound pod must stay on its node.
			name:       "deferred resize with the gate on: still narrowed and filtered",
			pod:        tu.MakePod("ns", "p").NodeName("alpha").ResizeDeferred().Obj(),
			fts:        feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: true},
			wantNames:  sets.New("alpha"),
			wantReject: sets.New("beta", "gamma"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newPlugin(t, tc.fts)
			state := framework.NewCycleState()
			infos := tu.NodeInfos(nodes...)

			res, st := pl.PreFilter(ctx, state, tc.pod, infos)
			if !tu.CheckStatus(t, "PreFilter", st, fwk.Success, "") {
				return
			}
			if tc.wantNames == nil {
				if res != nil {
					t.Errorf("PreFilter result = %v, want nil", res.NodeNames)
				}
			} else if res == nil || !res.NodeNames.Equal(tc.wantNames) {
				t.Errorf("PreFilter result = %v, want %v", res, sets.List(tc.wantNames))
			}
			if pl.PreFilterExtensions() != nil {
				t.Error("PreFilterExtensions() must be nil")
			}

			for _, ni := range infos {
				name := ni.Node().Name
				code, msg := fwk.Success, ""
				if tc.wantReject.Has(name) {
					code, msg = fwk.UnschedulableAndUnresolvable, reject
				}
				tu.CheckStatus(t, "Filter("+name+")", pl.Filter(ctx, state, tc.pod, ni), code, msg)
			}
		})
	}
}

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

func TestSignPod(t *testing.T) {
	for _, nodeName := range []string{"", "alpha"} {
		pod := tu.MakePod("ns", "p").NodeName(nodeName).Obj()
		got, st := newPlugin(t, feature.Features{}).SignPod(context.Background(), pod)
		tu.CheckStatus(t, "SignPod", st, fwk.Success, "")
		want := []fwk.SignFragment{{Key: "v1.Pod.Spec.NodeName", Value: nodeName}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SignPod(nodeName=%q) (-want +got):\n%s", nodeName, diff)
		}
	}
}

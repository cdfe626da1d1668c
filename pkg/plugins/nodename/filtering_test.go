package nodename

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

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

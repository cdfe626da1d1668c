package nodename

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

func TestExplainFilter(t *testing.T) {
	pl := tu.NewPlugin[*NodeName](t, New, nil, feature.Features{})
	ni := tu.NodeInfo(tu.MakeNode("node-b").Obj())
	state := framework.NewCycleState()
	if got := pl.ExplainFilter(context.Background(), state, tu.MakePod("default", "p").NodeName("node-b").Obj(), ni); got != nil {
		t.Errorf("matching nodeName: causes %v, want none", got)
	}
	want := []explanation.Cause{{Message: `spec.nodeName is "node-a", not this node (node-b)`}}
	if diff := cmp.Diff(want, pl.ExplainFilter(context.Background(), state, tu.MakePod("default", "p").NodeName("node-a").Obj(), ni)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

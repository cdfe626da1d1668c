package tainttoleration

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// ExplainFilter names every untolerated NoSchedule/NoExecute taint (Filter
// stops at the first), ignores PreferNoSchedule and tolerated ones, and
// says nothing about a node Filter accepts.
func TestExplainFilter(t *testing.T) {
	pl := tu.NewPlugin[*TaintToleration](t, New, nil, feature.Features{})
	pod := tu.MakePod("default", "p").Toleration(tu.Tol("ok", v1.TolerationOpExists, "", "")).Obj()
	for _, tc := range []struct {
		name string
		node *v1.Node
		want []explanation.Cause
	}{
		{"untainted", tu.MakeNode("n").Obj(), nil},
		{"tolerated and prefer", tu.MakeNode("n").Taint("ok", "1", v1.TaintEffectNoSchedule).Taint("soft", "", v1.TaintEffectPreferNoSchedule).Obj(), nil},
		{"two untolerated", tu.MakeNode("n").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Taint("ok", "", v1.TaintEffectNoExecute).Taint("drain", "", v1.TaintEffectNoExecute).Obj(), []explanation.Cause{
			{Message: "taint dedicated=gpu:NoSchedule is not tolerated", Fix: "tolerating dedicated=gpu:NoSchedule"},
			{Message: "taint drain:NoExecute is not tolerated", Fix: "tolerating drain:NoExecute"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := pl.ExplainFilter(context.Background(), framework.NewCycleState(), pod, tu.NodeInfo(tc.node))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
			// Explain and Filter agree on whether the node is rejected.
			if rejected := !pl.Filter(context.Background(), framework.NewCycleState(), pod, tu.NodeInfo(tc.node)).IsSuccess(); rejected != (len(got) > 0) {
				t.Errorf("Filter rejects: %v, but %d causes", rejected, len(got))
			}
		})
	}
}

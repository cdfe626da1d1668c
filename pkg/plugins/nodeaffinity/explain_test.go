package nodeaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// ExplainFilter names the added-affinity expression, nodeSelector entry or
// required expression that fails, with what the node has; it offers a fix
// only when one change admits the node.
func TestExplainFilter(t *testing.T) {
	added := tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: requiredAdded(tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "foo")))})
	withAdded := tu.NewPlugin[*NodeAffinity](t, New, added, feature.Features{})
	plain := tu.NewPlugin[*NodeAffinity](t, New, nil, feature.Features{})
	node := tu.MakeNode("n1").Labels(map[string]string{"pool": "bar", "disktype": "hdd", "gen": "3"}).Obj()
	for _, tc := range []struct {
		name string
		pl   *NodeAffinity
		pod  *v1.Pod
		want []explanation.Cause
	}{
		{"fits", plain, tu.MakePod("d", "p").NodeSelector(map[string]string{"disktype": "hdd"}).Obj(), nil},
		{"added affinity", withAdded, tu.MakePod("d", "p").Obj(), []explanation.Cause{
			{Message: "scheduler-enforced addedAffinity (profile args): term 0 matchExpressions[0] (pool In [foo]): node has pool=bar"},
		}},
		{"nodeSelector, every failing key", plain, tu.MakePod("d", "p").NodeSelector(map[string]string{"disktype": "ssd", "zone": "a", "gen": "3"}).Obj(), []explanation.Cause{
			{Message: "nodeSelector disktype=ssd: node has disktype=hdd", Fix: "removing nodeSelector disktype=ssd"},
			{Message: "nodeSelector zone=a: node has no label zone", Fix: "removing nodeSelector zone=a"},
		}},
		{"one term, one failing Gt expression", plain, tu.MakePod("d", "p").RequiredNodeTerms(tu.Term(tu.Expr("gen", v1.NodeSelectorOpGt, "4"), tu.Expr("pool", v1.NodeSelectorOpExists))).Obj(), []explanation.Cause{
			{Message: "required node affinity: term 0 matchExpressions[0] (gen Gt [4]): node has gen=3", Fix: "dropping required node affinity term 0 matchExpressions[0] (gen Gt [4])"},
		}},
		{"ORed terms: each term's failure, no single fix", plain, tu.MakePod("d", "p").RequiredNodeTerms(
			tu.Term(tu.Expr("gen", v1.NodeSelectorOpLt, "2")),
			tu.FieldTerm(tu.Expr("metadata.name", v1.NodeSelectorOpIn, "n2")),
			v1.NodeSelectorTerm{}).Obj(), []explanation.Cause{
			{Message: "required node affinity: term 0 matchExpressions[0] (gen Lt [2]): node has gen=3"},
			{Message: "required node affinity: term 1 matchFields[0] (metadata.name In [n2]): node is n1"},
			{Message: "required node affinity: term 2 is empty: matches no node"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, state, ni := context.Background(), framework.NewCycleState(), tu.NodeInfo(node)
			tc.pl.PreFilter(ctx, state, tc.pod, nil)
			got := tc.pl.ExplainFilter(ctx, state, tc.pod, ni)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
			if rejected := !tc.pl.Filter(ctx, state, tc.pod, ni).IsSuccess(); rejected != (len(got) > 0) {
				t.Errorf("Filter rejects: %v, but %d causes", rejected, len(got))
			}
		})
	}
}

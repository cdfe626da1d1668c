package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// BenchmarkFilter and BenchmarkScore measure the per-node hot paths with an
// added affinity in the args; run with -benchmem to see allocations. They
// assert nothing about time.
func BenchmarkFilter(b *testing.B) {
	pl := tu.NewPlugin[*NodeAffinity](b, New, tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: requiredAdded(tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "foo")))}), feature.Features{})
	pod := tu.MakePod("default", "p").NodeSelector(map[string]string{"disktype": "ssd"}).
		RequiredNodeTerms(tu.Term(tu.Expr("gen", v1.NodeSelectorOpGt, "4"))).Obj()
	for _, tc := range []struct {
		name string
		node *v1.Node
	}{
		{"fits", tu.MakeNode("n").Labels(map[string]string{"pool": "foo", "disktype": "ssd", "gen": "5"}).Obj()},
		{"added rejects", tu.MakeNode("n").Labels(map[string]string{"pool": "bar"}).Obj()},
		{"pod rejects", tu.MakeNode("n").Labels(map[string]string{"pool": "foo", "disktype": "hdd", "gen": "5"}).Obj()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx, state, ni := context.Background(), framework.NewCycleState(), tu.NodeInfo(tc.node)
			if _, st := pl.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
				b.Fatal(st)
			}
			b.ReportAllocs()
			for b.Loop() {
				pl.Filter(ctx, state, pod, ni)
			}
		})
	}
}

func BenchmarkScore(b *testing.B) {
	pl := tu.NewPlugin[*NodeAffinity](b, New, nil, feature.Features{})
	pod := tu.MakePod("default", "p").PreferredNodeTerm(10, tu.Term(tu.Expr("gen", v1.NodeSelectorOpLt, "6"))).Obj()
	ctx, state := context.Background(), framework.NewCycleState()
	ni := tu.NodeInfo(tu.MakeNode("n").Label("gen", "5").Obj())
	if st := pl.PreScore(ctx, state, pod, nil); !st.IsSuccess() {
		b.Fatal(st)
	}
	b.ReportAllocs()
	for b.Loop() {
		pl.Score(ctx, state, pod, ni)
	}
}

package enforcer

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// benchCluster is nodes nodes in 10 zones with 10 pods each; one pod in ten
// has a zone anti-affinity term and a node selector, like a spread-out
// Deployment.
func benchCluster(nodes int) ([]*v1.Node, []*v1.Pod) {
	var ns []*v1.Node
	var ps []*v1.Pod
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		ns = append(ns, tu.MakeNode(name).Label("zone", fmt.Sprintf("z%d", i%10)).Label("pool", "a").Capacity("64", "256Gi", 110).Ready().Obj())
		for j := range 10 {
			w := tu.MakePod("ns", fmt.Sprintf("p-%d-%d", i, j)).UID(fmt.Sprintf("u-%d-%d", i, j)).Placement().NodeName(name).
				Label("app", fmt.Sprintf("app%d", j))
			if j == 0 {
				w = w.NodeSelector(map[string]string{"pool": "a"}).
					RequiredPodAntiAffinity(tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "other"})))
			}
			ps = append(ps, w.Obj())
		}
	}
	return ns, ps
}

// BenchmarkJudge measures, per cluster size, building the pass's judge (one
// snapshot of every pod) and judging one opted-in pod on all its rules.
func BenchmarkJudge(b *testing.B) {
	for _, nodes := range []int{100, 500, 5000} {
		nodeObjs, pods := benchCluster(nodes)
		b.Run(fmt.Sprintf("NewJudge/nodes=%d", nodes), func(b *testing.B) {
			ctx := context.Background()
			cfg := testConfig(b)
			for b.Loop() {
				if _, err := NewJudge(ctx, cfg, informers.NewSharedInformerFactory(fake.NewClientset(), 0), nodeObjs, pods); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("OnePod/nodes=%d", nodes), func(b *testing.B) {
			ctx := context.Background()
			j, err := NewJudge(ctx, testConfig(b), informers.NewSharedInformerFactory(fake.NewClientset(), 0), nodeObjs, pods)
			if err != nil {
				b.Fatal(err)
			}
			pod := pods[0]
			for b.Loop() {
				if _, err := j.Judge(ctx, pod, AllRules, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

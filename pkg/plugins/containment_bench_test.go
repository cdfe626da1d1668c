package plugins

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// noop is a scoreShape plugin whose extension points do nothing, so that a
// benchmark of it through Contain measures the wrapper alone.
type noop struct{}

func (noop) Name() string { return "Noop" }
func (noop) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}
func (noop) PreFilterExtensions() fwk.PreFilterExtensions                              { return nil }
func (noop) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status { return nil }
func (noop) PreScore(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status {
	return nil
}
func (noop) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}
func (noop) ScoreExtensions() fwk.ScoreExtensions { return nil }
func (noop) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}
func (noop) ExplainFilter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) []explanation.Cause {
	return nil
}
func (noop) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) { return nil, nil }

// BenchmarkContainment: the per-call cost of the panic-containment wrapper,
// impl=bare (the plugin called directly, through the framework's interface
// as the framework calls it) vs impl=contained (through Contain's wrapper),
// per extension point that runs per node. It asserts nothing about time.
//
//	go test ./pkg/plugins -run '^$' -bench Containment -count 10 | benchstat -col /impl -
func BenchmarkContainment(b *testing.B) {
	contained, err := Contain(noop{})
	if err != nil {
		b.Fatal(err)
	}
	ctx, state := context.Background(), framework.NewCycleState()
	pod := testutil.MakePod("default", "p").Obj()
	ni := testutil.NodeInfo(testutil.MakeNode("n").Obj())
	for _, im := range []struct {
		name string
		pl   fwk.Plugin
	}{{"bare", noop{}}, {"contained", contained}} {
		b.Run("op=Filter/impl="+im.name, func(b *testing.B) {
			pl := im.pl.(fwk.FilterPlugin)
			b.ReportAllocs()
			for b.Loop() {
				pl.Filter(ctx, state, pod, ni)
			}
		})
		b.Run("op=Score/impl="+im.name, func(b *testing.B) {
			pl := im.pl.(fwk.ScorePlugin)
			b.ReportAllocs()
			for b.Loop() {
				pl.Score(ctx, state, pod, ni)
			}
		})
	}
}

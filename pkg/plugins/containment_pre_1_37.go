//go:build k8s1.35 || k8s1.36

package plugins

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// On 1.35 and 1.36, NodeName and TaintToleration have no PreFilter, as
// upstream's do not: their wrappers must not have one either (the
// framework would run it). They reuse containedFilter and containedScorer
// through an adapter whose PreFilter is never reachable from outside.

// bareFilterShape is filterShape without PreFilter (NodeName).
type bareFilterShape interface {
	fwk.FilterPlugin
	fwk.EnqueueExtensions
	fwk.SignPlugin
	explanation.FilterExplainer
}

// bareScoreShape adds scoring (TaintToleration).
type bareScoreShape interface {
	bareFilterShape
	fwk.PreScorePlugin
	fwk.ScorePlugin
}

// noPreFilter gives a bare plugin the PreFilter containedFilter expects; the
// bare wrappers below never expose it.
type noPreFilter struct{ bareFilterShape }

func (noPreFilter) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}
func (noPreFilter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func containLineShape(p fwk.Plugin) fwk.Plugin {
	switch q := p.(type) {
	case bareScoreShape:
		inner := newContainedFilter(noPreFilter{q})
		return &containedBareScorer{containedBareFilter: containedBareFilter{c: inner, plugin: q},
			s: &containedScorer{containedFilter: inner, scorer: scorerOf{noPreFilter{q}, q}, normalizer: containNormalizer(q.Name(), q.ScoreExtensions())}}
	case bareFilterShape:
		return &containedBareFilter{c: newContainedFilter(noPreFilter{q}), plugin: q}
	}
	return nil
}

// scorerOf is the scoreShape containedScorer wraps: the adapter's filter
// side and the plugin's scoring.
type scorerOf struct {
	noPreFilter
	score bareScoreShape
}

func (s scorerOf) PreScore(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return s.score.PreScore(ctx, st, pod, nodes)
}
func (s scorerOf) Score(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return s.score.Score(ctx, st, pod, ni)
}
func (s scorerOf) ScoreExtensions() fwk.ScoreExtensions { return s.score.ScoreExtensions() }

// containedBareFilter is containedFilter without PreFilter.
type containedBareFilter struct {
	c      *containedFilter
	plugin fwk.Plugin
}

var _ bareFilterShape = &containedBareFilter{}

func (b *containedBareFilter) panicPoints() []string { return withoutPreFilter(b.c.panicPoints()) }
func (b *containedBareFilter) Unwrap() fwk.Plugin    { return b.plugin }
func (b *containedBareFilter) Name() string          { return b.c.Name() }
func (b *containedBareFilter) Filter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	return b.c.Filter(ctx, st, pod, ni)
}
func (b *containedBareFilter) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return b.c.SignPod(ctx, pod)
}
func (b *containedBareFilter) ExplainFilter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) []explanation.Cause {
	return b.c.ExplainFilter(ctx, st, pod, ni)
}
func (b *containedBareFilter) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return b.c.EventsToRegister(ctx)
}

// containedBareScorer is containedScorer without PreFilter.
type containedBareScorer struct {
	containedBareFilter
	s *containedScorer
}

var _ bareScoreShape = &containedBareScorer{}

func (b *containedBareScorer) panicPoints() []string { return withoutPreFilter(b.s.panicPoints()) }

// withoutPreFilter drops the PreFilter point a bare wrapper cannot panic in.
func withoutPreFilter(points []string) []string {
	var out []string
	for _, p := range points {
		if p != "PreFilter" {
			out = append(out, p)
		}
	}
	return out
}
func (b *containedBareScorer) PreScore(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return b.s.PreScore(ctx, st, pod, nodes)
}
func (b *containedBareScorer) Score(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return b.s.Score(ctx, st, pod, ni)
}
func (b *containedBareScorer) ScoreExtensions() fwk.ScoreExtensions { return b.s.ScoreExtensions() }

package tainttoleration

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"
)

// preScoreStateKey mirrors upstream's key so that the error for a missing
// state reads exactly like upstream's.
const preScoreStateKey fwk.StateKey = "PreScoreTaintToleration"

// preScoreState holds the tolerations that can matter for PreferNoSchedule
// taints, computed once per cycle rather than once per node.
type preScoreState struct {
	tolerations []v1.Toleration
}

// Clone returns the receiver: the state is never mutated after PreScore.
func (s *preScoreState) Clone() fwk.StateData { return s }

// PreScore never Skips: upstream always scores, so every node receives
// the normalized 100 even when no node has PreferNoSchedule taints, and
// skipping would change absolute totals.
func (pl *TaintToleration) PreScore(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	var tols []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		// An empty effect matches every effect, PreferNoSchedule included.
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	cycleState.Write(preScoreStateKey, &preScoreState{tolerations: tols})
	return nil
}

func readPreScoreState(cycleState fwk.CycleState) (*preScoreState, error) {
	c, err := cycleState.Read(preScoreStateKey)
	if err != nil {
		return nil, fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err)
	}
	s, ok := c.(*preScoreState)
	if !ok {
		return nil, fmt.Errorf("%+v convert to tainttoleration.preScoreState error", c)
	}
	return s, nil
}

// Score is the number of the node's PreferNoSchedule taints that the pod does
// not tolerate; identical taints count once each.
func (pl *TaintToleration) Score(ctx context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := readPreScoreState(cycleState)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	logger := klog.FromContext(ctx)
	taints := nodeInfo.Node().Spec.Taints
	var n int64
	for i := range taints {
		if taints[i].Effect != v1.TaintEffectPreferNoSchedule {
			continue
		}
		if !v1helper.TolerationsTolerateTaint(logger, s.tolerations, &taints[i], pl.comparisonOperators) {
			n++
		}
	}
	return n, nil
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (pl *TaintToleration) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore maps fewer untolerated taints to a higher score: 100 for
// every node when none has any, otherwise 100 - 100*s/max.
func (pl *TaintToleration) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxNodeScore, true, scores)
}

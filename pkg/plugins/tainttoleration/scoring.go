package tainttoleration

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

// preScoreStateKey is upstream's key (see package cyclestate for the policy).
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
	if tols == nil {
		// Most pods: nothing to keep, so share one read-only state
		// instead of allocating one per cycle.
		cycleState.Write(preScoreStateKey, pl.noTolerations)
		return nil
	}
	cycleState.Write(preScoreStateKey, &preScoreState{tolerations: tols})
	return nil
}

// Score is the number of the node's PreferNoSchedule taints that the pod does
// not tolerate; identical taints count once each.
func (pl *TaintToleration) Score(ctx context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	// The state is read first so that a missing PreScore is an Error on
	// every node, tainted or not, as upstream.
	s, err := cyclestate.Read[*preScoreState](cycleState, preScoreStateKey)
	if err != nil {
		// The wording is upstream's: the message is user-visible.
		return 0, fwk.AsStatus(fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err))
	}
	taints := nodeInfo.Node().Spec.Taints
	first := slices.IndexFunc(taints, func(t v1.Taint) bool { return t.Effect == v1.TaintEffectPreferNoSchedule })
	if first < 0 {
		// Typical node: nothing to count, so no logger lookup either.
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	var n int64
	for i := first; i < len(taints); i++ {
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

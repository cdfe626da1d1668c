package nodeaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

// preScoreState is the pod's parsed preferred terms; nil when the pod lists
// none (only the added terms then score).
type preScoreState struct {
	preferred *preferredTerms
}

// Clone returns the receiver: the state is read-only and pod-only.
func (s *preScoreState) Clone() fwk.StateData { return s }

// podPreferredTerms parses the pod's preferred node affinity. A nil slice
// gives nil; a non-nil one, even empty, gives a non-nil (possibly empty)
// result, which is what keeps PreScore from Skipping. Terms of weight 0 and
// empty preferences are dropped by the parser before parsing, so their
// errors never surface; any other term's parse error is returned as is.
func podPreferredTerms(pod *v1.Pod) (*preferredTerms, error) {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, nil
	}
	return parsePreferred(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
}

// parsePreferred parses terms for Score. Only when one fails to parse is
// component-helpers' parser run, for its error, the text upstream's status
// carries verbatim.
func parsePreferred(terms []v1.PreferredSchedulingTerm) (*preferredTerms, error) {
	if p, ok := newPreferredTerms(terms); ok {
		return p, nil
	}
	if _, err := nodeaffinity.NewPreferredSchedulingTerms(terms); err != nil {
		return nil, err
	}
	// Unreachable while both parsers apply the same rules; the equivalence
	// suite would show the mismatch.
	return nil, fmt.Errorf("preferred node affinity terms: our parser rejects what component-helpers accepts (a bug of %s)", Name)
}

// PreScore parses the pod's preferred terms once for Score. Unlike required
// terms, a preferred term that fails to parse (e.g. Gt "x", which API
// validation lets through) is an Error for the whole cycle, as upstream. The
// error is wrapped in no text of ours: the status message must be the
// component-helpers message verbatim.
func (pl *NodeAffinity) PreScore(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	// Upstream applies no deferred-resize exemption here; neither do we.
	preferred, err := podPreferredTerms(pod)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if preferred == nil && pl.addedPrefSchedTerms == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	cycleState.Write(preScoreStateKey, &preScoreState{preferred: preferred})
	return nil
}

// Score is the sum of the weights of the matching added preferred terms and
// the matching pod preferred terms. Added weights are not range-checked, so
// the sum can be negative; that is upstream's behaviour and the framework
// then rejects the cycle's scores.
func (pl *NodeAffinity) Score(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	node := nodeInfo.Node()
	var sum int64
	if pl.addedPrefSchedTerms != nil {
		sum += pl.addedPrefSchedTerms.score(node)
	}
	s, err := cyclestate.Read[*preScoreState](cycleState, preScoreStateKey)
	if err != nil {
		// PreScore is disabled in this profile: parse here instead.
		preferred, err := podPreferredTerms(pod)
		if err != nil {
			return 0, fwk.AsStatus(err)
		}
		s = &preScoreState{preferred: preferred}
	}
	if s.preferred != nil {
		sum += s.preferred.score(node)
	}
	return sum, nil
}

// ScoreExtensions returns the plugin itself, for NormalizeScore.
func (pl *NodeAffinity) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore scales the raw scores to [0, MaxNodeScore] relative to the
// highest one, with integer (truncating) division: {10, 3, 0} -> {100, 30,
// 0}; when no score is positive the list is left untouched. That is exactly
// upstream's helper.DefaultNormalizeScore(MaxNodeScore, false, ...), which
// upstream's NodeAffinity calls too, so we call it rather than restate it.
func (pl *NodeAffinity) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxNodeScore, false, scores)
}

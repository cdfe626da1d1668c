package interpodaffinity

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// preScoreStateKey is upstream's key (policy in package cyclestate).
const preScoreStateKey fwk.StateKey = "PreScoreInterPodAffinity"

// preScoreState is never modified after PreScore.
type preScoreState struct {
	// weights are the summed weights per topology domain (caches.go).
	weights *scoreWeights
}

// Clone returns the receiver: the state is immutable.
func (s *preScoreState) Clone() fwk.StateData { return s }

// PreScore sums, per topology domain, the weights of every pair (incoming
// pod, existing pod) that attract or repel each other, from both sides'
// terms. It Skips when there is nothing to score.
func (pl *InterPodAffinity) PreScore(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	// Upstream decides from the raw spec, before parsing.
	hasPreferred := false
	if a := pod.Spec.Affinity; a != nil {
		hasPreferred = (a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
			(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0)
	}
	if pl.args.ignorePreferredTermsOfExistingPods && !hasPreferred {
		return fwk.NewStatus(fwk.Skip)
	}

	// The incoming pod's preferred terms can select any pod, so all nodes
	// (the whole snapshot, not just the feasible ones: a pod elsewhere in
	// a domain counts for the domain) with all their pods are visited.
	// Otherwise only pods with terms of their own can contribute.
	var nodes []fwk.NodeInfo
	var err error
	if hasPreferred {
		if nodes, err = pl.sharedLister.NodeInfos().List(); err != nil {
			return fwk.AsStatus(fmt.Errorf("failed to get all nodes from shared lister: %w", err))
		}
	} else {
		if nodes, err = pl.sharedLister.NodeInfos().HavePodsWithAffinityList(); err != nil {
			return fwk.AsStatus(fmt.Errorf("failed to get pods with affinity list: %w", err))
		}
	}

	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		// PreFilter rejects such pods first.
		return fwk.AsStatus(fmt.Errorf("failed to parse pod: %w", err))
	}
	preferred := pi.GetPreferredAffinityTerms()
	for i := range preferred {
		if err := pl.resolveNamespaces(&preferred[i].AffinityTerm); err != nil {
			return fwk.AsStatus(fmt.Errorf("updating PreferredAffinityTerms: %w", err))
		}
	}
	preferredAnti := pi.GetPreferredAntiAffinityTerms()
	for i := range preferredAnti {
		if err := pl.resolveNamespaces(&preferredAnti[i].AffinityTerm); err != nil {
			return fwk.AsStatus(fmt.Errorf("updating PreferredAntiAffinityTerms: %w", err))
		}
	}
	nsLabels := pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace)

	weights := pl.scoreSums(ctx, cycleState, nodes, hasPreferred, pi, nsLabels)
	if weights == nil {
		return fwk.NewStatus(fwk.Skip)
	}
	cycleState.Write(preScoreStateKey, &preScoreState{weights: weights})
	return nil
}

// tallyNode is what node ni contributes to the score sums: the weights of
// every (incoming, existing) pair over the node's pods (all of them when
// the incoming pod has preferred terms, otherwise those with affinity
// terms of their own), in the node's domains (labels read through nt).
// The tally is built in reuse's storage, which the caller holds no more.
//
// A node without labels is in no domain, and upstream skips its pods
// outright. Here its pods are matched all the same and add nothing (every
// topology key is missing), which decides alike without reading the
// node's label map up front: for most nodes no term matches and the
// labels are never read, while reading them costs a cache miss on the
// Node object and one on the map per node, about a fifth of a cold
// PreScore at 5000 nodes (ColdStartDeployments100 CPU profile).
func (pl *InterPodAffinity) tallyNode(ni fwk.NodeInfo, nt *nodeTopology, pi fwk.PodInfo, nsLabels labels.Set, hasPreferred bool, reuse nodeTally) nodeTally {
	existingPods := ni.GetPodsWithAffinity()
	if hasPreferred {
		existingPods = ni.GetPods()
	}
	tally := reuse.Reset()
	for _, existing := range existingPods {
		pl.scoreExistingPod(&tally, nt, pi, nsLabels, existing)
	}
	return tally
}

// scoreExistingPod adds to the tally of the existing pod's node (labels read
// through nt) the five contributions of one (incoming, existing) pair.
// Existing pods' required anti-affinity is not among them: it only filters.
func (pl *InterPodAffinity) scoreExistingPod(tally *nodeTally, nt *nodeTopology, incoming fwk.PodInfo, nsLabels labels.Set, existing fwk.PodInfo) {
	// The incoming pod's terms have expanded namespace selectors: nil labels.
	addWeighted(tally, nt, incoming.GetPreferredAffinityTerms(), existing.GetPod(), nil, 1)
	addWeighted(tally, nt, incoming.GetPreferredAntiAffinityTerms(), existing.GetPod(), nil, -1)

	pod := incoming.GetPod()
	if w := pl.args.hardPodAffinityWeight; w > 0 {
		terms := existing.GetRequiredAffinityTerms()
		for i := range terms {
			if terms[i].Matches(pod, nsLabels) {
				tally.Add(nt, terms[i].TopologyKey, int64(w))
			}
		}
	}
	// Existing pods' preferred terms, regardless of
	// ignorePreferredTermsOfExistingPods, which only decides the Skip.
	addWeighted(tally, nt, existing.GetPreferredAffinityTerms(), pod, nsLabels, 1)
	addWeighted(tally, nt, existing.GetPreferredAntiAffinityTerms(), pod, nsLabels, -1)
}

// addWeighted adds sign×weight for each term that pod matches.
func addWeighted(tally *nodeTally, nt *nodeTopology, terms []fwk.WeightedAffinityTerm, pod *v1.Pod, nsLabels labels.Set, sign int32) {
	for i := range terms {
		if terms[i].Matches(pod, nsLabels) {
			// int32 product, then widened, exactly as upstream.
			tally.Add(nt, terms[i].TopologyKey, int64(terms[i].Weight*sign))
		}
	}
}

// preScoreStateOf returns what PreScore stored for this cycle. A missing
// state is reported in upstream's words (Score's and NormalizeScore's Error
// status); a state of another type keeps cyclestate.Read's explanation.
func preScoreStateOf(cycleState fwk.CycleState) (*preScoreState, error) {
	if s, ok := stored(cycleState, preScoreStateKey).(*preScoreState); ok {
		return s, nil
	}
	return readState[*preScoreState](cycleState, preScoreStateKey, "failed to read %q from cycleState: %w")
}

// Score is the node's raw score: the sum over the scored topology keys it
// has of its domain's weight. Positive attracts, negative repels.
func (pl *InterPodAffinity) Score(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := preScoreStateOf(cycleState)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	return s.weights.scoreOf(nodeInfo), nil
}

// ScoreExtensions returns the plugin itself for NormalizeScore.
func (pl *InterPodAffinity) ScoreExtensions() fwk.ScoreExtensions { return pl }

// NormalizeScore stretches the raw scores of the scored nodes linearly onto
// [0, 100]: the lowest becomes 0, the highest 100, and the rest are
// truncated toward zero. When all raw scores are equal no node is preferred
// and every node gets 0, not 100. Not helper.DefaultNormalizeScore: that one
// scales [0, max] in integers, while raw scores here can be negative and are
// stretched from the lowest, in floating point, dividing before scaling
// (docs/behavior.md §8).
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	s, err := preScoreStateOf(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if !s.weights.scored() || len(scores) == 0 {
		return nil
	}
	lowest, highest := scores[0].Score, scores[0].Score
	for _, ns := range scores[1:] {
		lowest, highest = min(lowest, ns.Score), max(highest, ns.Score)
	}
	// The width can overflow int64 (raw scores are sums of weights, so only
	// with absurd inputs); it then wraps negative and, as upstream, counts
	// as no spread at all.
	width := highest - lowest
	if width <= 0 {
		for i := range scores {
			scores[i].Score = 0
		}
		return nil
	}
	for i := range scores {
		// The position within the range is divided first and then scaled:
		// 100*(d/width) and (100*d)/width can truncate to different
		// integers (29/100 gives 28 this way), and upstream divides first.
		offset := float64(scores[i].Score - lowest)
		scores[i].Score = int64(float64(fwk.MaxNodeScore) * (offset / float64(width)))
	}
	return nil
}

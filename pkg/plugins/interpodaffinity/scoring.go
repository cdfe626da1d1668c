package interpodaffinity

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

// preScoreStateKey is upstream's key (policy in package cyclestate).
const preScoreStateKey fwk.StateKey = "PreScoreInterPodAffinity"

// preScoreState is never modified after PreScore.
type preScoreState struct {
	// keys are the scored topology keys (the sum's, shared). A node
	// scores the sum, over the keys it has, of its domain's weight;
	// integer addition does not care about the order.
	keys keyTally
	// domains is the index's sum, shared and read-only.
	domains layered[topologyPair, domainWeight]
	// topology holds the topology labels of the cycle's nodes (nil: read
	// them from the nodes).
	topology *topologyView
	// lookup reads domains with one hashed lookup for most (lookup.go),
	// and cols are the view's columns of keys, in the keys' order: Score
	// resolves neither per node.
	lookup domainLookup[domainWeight]
	cols   []int
}

// newPreScoreState returns the state for a sum that is no longer changed,
// read through topology.
func newPreScoreState(sum *scoreSum, topology *topologyView) *preScoreState {
	s := &preScoreState{keys: sum.keys, domains: sum.domains, topology: topology, lookup: lookupOf(&sum.domains)}
	s.cols = make([]int, len(s.keys))
	for i, kc := range s.keys {
		s.cols[i] = topology.col(kc.key)
	}
	return s
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

	// A node's tally depends on its pods and labels and on the incoming
	// pod: its preferred terms (namespaces resolved), what the existing
	// pods' terms read of it (namespace, labels, namespace labels), and
	// which of the node's pods are visited.
	list := "nodes with pod affinity"
	if hasPreferred {
		list = "all nodes"
	}
	// sumOver returns the score sum over nodes, or nil when it is
	// known to be empty; gens are the nodes' generations, if read, and
	// view the topology view synced with them, if any (the nodes' labels
	// are read through it; view is a parameter, never assigned, so the
	// closure copies it instead of boxing a variable in every cycle).
	sumOver := func(gens []int64, view *topologyView) *scoreSum {
		sq := pl.scoreQueries(ctx, cycleState, nodes, hasPreferred, pi)
		ops := scoreOps(func(i int, ni fwk.NodeInfo, reuse nodeTally) nodeTally {
			return pl.tallyNode(view, sq, gens, i, ni, pi, nsLabels, hasPreferred, reuse)
		})
		return keyedSum(ctx, cycleState, pl.parallelizer, nodes, gens, &pl.caches.keys, list, &pl.caches.score,
			func(inputs *termInputs) string {
				var sig signature
				sig.flag(hasPreferred)
				sig.weightedTerms(preferred)
				sig.weightedTerms(preferredAnti)
				inputs.encode(&sig, pod.Namespace, pod.Labels, nsLabels)
				return sig.String()
			},
			func(inputs *termInputs) bool {
				// Only existing pods' terms could score, and none of
				// the listed pods has one that does.
				return !hasPreferred && inputs.scoringNodes == 0
			}, ops)
	}
	var sum *scoreSum
	var topology *topologyView
	if hasPreferred {
		// The walk over all nodes serves the topology table too, for
		// the keys of the incoming pod's terms (existing pods' terms
		// usually share them; others are read from the nodes).
		var keys []string
		for _, ts := range [][]fwk.WeightedAffinityTerm{preferred, preferredAnti} {
			for i := range ts {
				keys = addKey(keys, ts[i].TopologyKey)
			}
		}
		topology = pl.caches.topology.sync(cycleState, nodes, keys, func(gens []int64, view *topologyView) {
			sum = sumOver(gens, view)
		})
	} else {
		sum = sumOver(nil, nil)
	}
	if sum == nil || sum.domains.len() == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	if topology == nil {
		if s, err := preFilterStateOf(cycleState); err == nil {
			// PreFilter's view of this cycle's nodes, if it made one.
			topology = s.topology
		}
	}
	cycleState.Write(preScoreStateKey, newPreScoreState(sum, topology))
	return nil
}

// scoreQueries are the incoming pod's preferred terms and labels, compiled
// for the summaries of this cycle's nodes (podsummary.go), or nil when
// there are none. With preferred terms, nodes are all nodes, which the
// summaries are synced with; otherwise the summaries are
// PreFilter's, if it made any: the list of nodes with affinity pods alone
// would cost a pass over all nodes to sync.
func (pl *InterPodAffinity) scoreQueries(ctx context.Context, cs fwk.CycleState, nodes []fwk.NodeInfo, hasPreferred bool, pi fwk.PodInfo) *scoreQueries {
	var v *summaryView
	if s, err := preFilterStateOf(cs); err == nil {
		v = s.summaries.summaries()
	}
	if v == nil && hasPreferred {
		v = pl.caches.summaries.sync(ctx, cs, pl.parallelizer, Name, nodes)
	}
	return newScoreQueries(v, pi)
}

// tallyNode is what node ni contributes to the score sum: the weights of
// every (incoming, existing) pair over the node's pods (all of them when
// the incoming pod has preferred terms, otherwise those with affinity
// terms of their own), in the node's domains. Labels are read through
// view (nil: from the node). The tally is built in reuse's storage
// (sumOps.compute). A node that sq (nil: none) proves adds nothing is not
// looked at; i is ni's position in the list summed, or -1, and gens that
// list's generations, if read.
//
// A node without labels is in no domain, and upstream skips its pods
// outright. Here its pods are matched all the same and add nothing (every
// topology key is missing), which decides alike without reading the
// node's label map up front: for most nodes no term matches and the
// labels are never read, while reading them costs a cache miss on the
// Node object and one on the map per node, about a fifth of a cold
// PreScore at 5000 nodes (ColdStartDeployments100 CPU profile).
func (pl *InterPodAffinity) tallyNode(view *topologyView, sq *scoreQueries, gens []int64, i int, ni fwk.NodeInfo, pi fwk.PodInfo, nsLabels labels.Set, hasPreferred bool, reuse nodeTally) nodeTally {
	if sq.skips(gens, i, ni) {
		// No pair on the node scores: its summary proves it.
		return reuse.reset()
	}
	existingPods := ni.GetPodsWithAffinity()
	if hasPreferred {
		existingPods = ni.GetPods()
	}
	nt := topologyOf(view, ni)
	tally := reuse.reset()
	for _, existing := range existingPods {
		pl.scoreExistingPod(&tally, &nt, pi, nsLabels, existing)
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
				tally.add(nt, terms[i].TopologyKey, int64(w))
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
			tally.add(nt, terms[i].TopologyKey, int64(terms[i].Weight*sign))
		}
	}
}

// preScoreStateOf returns what PreScore stored for this cycle. A missing
// state is reported in upstream's words (Score's and NormalizeScore's Error
// status); a state of another type keeps cyclestate.Read's explanation.
func preScoreStateOf(cycleState fwk.CycleState) (*preScoreState, error) {
	// Score's path, for every node: no generic assertion, no error test.
	if data, err := cycleState.Read(preScoreStateKey); err == nil {
		if s, ok := data.(*preScoreState); ok {
			return s, nil
		}
	}
	s, err := cyclestate.Read[*preScoreState](cycleState, preScoreStateKey)
	if errors.Is(err, fwk.ErrNotFound) {
		return nil, fmt.Errorf("failed to read %q from cycleState: %w", preScoreStateKey, err)
	}
	return s, err
}

// Score is the node's raw score: the sum over the scored topology keys it
// has of its domain's weight. Positive attracts, negative repels.
func (pl *InterPodAffinity) Score(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := preScoreStateOf(cycleState)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	nt := locatedTopology(s.topology, nodeInfo)
	var score int64
	for i, kc := range s.keys {
		if v, ok := nt.at(s.cols[i], kc.key); ok {
			score += s.lookup.get(topologyPair{key: kc.key, value: v}).weight
		}
	}
	return score, nil
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
	if len(s.keys) == 0 || len(scores) == 0 {
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

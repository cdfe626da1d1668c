package interpodaffinity

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
)

const (
	// preFilterStateKey is upstream's key (policy in package cyclestate): it
	// appears in the Error users see when the state is missing.
	preFilterStateKey fwk.StateKey = "PreFilterInterPodAffinity"

	// Filter reasons, upstream's texts verbatim: users and tooling match on
	// them.

	// ErrReasonAffinityRulesNotMatch rejects a node for the incoming pod's
	// required affinity (UnschedulableAndUnresolvable: preemption cannot
	// create the pods it needs).
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch rejects a node for the incoming
	// pod's required anti-affinity (Unschedulable: evicting may help).
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"
	// ErrReasonExistingAntiAffinityRulesNotMatch rejects a node because an
	// existing pod's required anti-affinity selects the incoming pod.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
)

// requiredTerms are the incoming pod's required terms (namespace selectors
// resolved), sorted by where Filter evaluates them.
type requiredTerms struct {
	// affinity and antiAffinity are evaluated through the topology counts
	// PreFilter gathers cluster-wide.
	affinity, antiAffinity []fwk.AffinityTerm
	// hostAffinity and hostAntiAffinity (hostname fast path only) are
	// evaluated against the candidate node's own pods (docs/behavior.md §7.8).
	hostAffinity, hostAntiAffinity []fwk.AffinityTerm
}

// sortTerms decides where each required term is evaluated. Without the fast
// path everything is counted. With it, anti-affinity terms reject on their
// own, so every hostname-scoped one moves to the node-local check; affinity
// terms must all be satisfied by one and the same pod, so they can only move
// as a group, when none of them needs a wider domain.
func sortTerms(affinity, antiAffinity []fwk.AffinityTerm, hostnameFastPath bool) requiredTerms {
	if !hostnameFastPath {
		return requiredTerms{affinity: affinity, antiAffinity: antiAffinity}
	}
	var rt requiredTerms
	if slices.ContainsFunc(affinity, func(t fwk.AffinityTerm) bool { return !hostScoped(t) }) {
		rt.affinity = affinity
	} else {
		rt.hostAffinity = affinity
	}
	for _, t := range antiAffinity {
		if hostScoped(t) {
			rt.hostAntiAffinity = append(rt.hostAntiAffinity, t)
		} else {
			rt.antiAffinity = append(rt.antiAffinity, t)
		}
	}
	return rt
}

// preFilterState is what PreFilter learns about the cluster for the incoming
// pod. Filter answers per node from it, looking at the node's own pods only
// for the hostname fast path's node-local checks.
type preFilterState struct {
	// podInfo is the incoming pod, namespace selectors of its required terms
	// resolved. Shared by clones: it is never modified after PreFilter.
	podInfo fwk.PodInfo
	// nsLabels are the incoming pod's namespace labels, for existing pods'
	// namespaceSelectors; nil when the namespace is unknown.
	nsLabels labels.Set
	terms    requiredTerms

	// existingAntiAffinity counts, per domain, the required anti-affinity
	// terms of existing pods that select the incoming pod (with the fast
	// path, only those that are not hostname-scoped).
	existingAntiAffinity topologyCounts
	// affinity counts, per domain of each counted affinity term, the pods
	// matching all of them. For each term separately some such pod must be
	// in the candidate's domain; it need not be the same pod for every term.
	affinity topologyCounts
	// antiAffinity counts, per domain of each counted anti-affinity term,
	// the pods matching that term.
	antiAffinity topologyCounts
	// ownsCounts: the three count maps are this state's own. Until then
	// they are shared with clones, and are read-only (ownCounts).
	ownsCounts bool

	// selfMatch: the incoming pod matches all of its own required affinity
	// terms. It decides the first-pod-of-a-series exception and cannot
	// change after PreFilter, so it is evaluated once, not per node.
	selfMatch bool

	hostnameFastPath bool
	// hostAffinityMatches (fast path) counts pods anywhere matching all
	// terms.hostAffinity; the first-of-series exception needs it to be 0.
	hostAffinityMatches int64
	// existingHostAnti (fast path) is false when no pod that Filter can
	// find on a node has a hostname-scoped required anti-affinity term, so
	// Filter need not scan the node's pods for one. It starts from what the
	// snapshot holds and only AddPod sets it later.
	existingHostAnti bool

	// cache is how the counts and the nodes' labels are read (caches.go).
	cache filterCache
}

// Clone shares everything that no one modifies: terms, the pod, the
// namespace labels, and the counts as long as they are PreFilter's (sums
// handed out, never changed again). Counts that
// AddPod/RemovePod have modified belong to this state and are copied.
func (s *preFilterState) Clone() fwk.StateData {
	if s == nil {
		return nil
	}
	c := *s
	if s.ownsCounts {
		c.existingAntiAffinity = s.existingAntiAffinity.Fork()
		c.affinity = s.affinity.Fork()
		c.antiAffinity = s.antiAffinity.Fork()
	}
	return &c
}

// updateWithPod accounts for pi being added to (delta 1) or removed from
// (delta -1) the node of ni, exactly as PreFilter would have counted it.
// The first update copies the shared counts (copy on write).
func (s *preFilterState) updateWithPod(pi fwk.PodInfo, ni fwk.NodeInfo, delta int64) {
	s.ownCounts()
	nl := nodeLabels(ni)
	incoming := s.podInfo.GetPod()
	theirs := pi.GetRequiredAntiAffinityTerms()
	for i := range theirs {
		if s.hostnameFastPath && hostScoped(theirs[i]) {
			// Not counted: Filter looks for such pods on the node itself,
			// and now has one more place to look. A removal needs no
			// update: scanning a node without such a pod finds nothing.
			if delta > 0 {
				s.existingHostAnti = true
			}
			continue
		}
		if theirs[i].Matches(incoming, s.nsLabels) {
			s.existingAntiAffinity.Add(nl, theirs[i].TopologyKey, delta)
		}
	}
	pod := pi.GetPod()
	if podaffinity.MatchesAll(s.terms.affinity, pod, nil) {
		for i := range s.terms.affinity {
			s.affinity.Add(nl, s.terms.affinity[i].TopologyKey, delta)
		}
	}
	for i := range s.terms.antiAffinity {
		if s.terms.antiAffinity[i].Matches(pod, nil) {
			s.antiAffinity.Add(nl, s.terms.antiAffinity[i].TopologyKey, delta)
		}
	}
	if podaffinity.MatchesAll(s.terms.hostAffinity, pod, nil) {
		s.hostAffinityMatches += delta
	}
}

// antiAffinityHolders are the snapshot's nodes hosting pods with required
// anti-affinity, from the snapshot's own indexes.
type antiAffinityHolders struct {
	// all: nodes with a pod that has any required anti-affinity term.
	all []fwk.NodeInfo
	// nonHost (fast path only): nodes with a pod that has a term not scoped
	// to kubernetes.io/hostname. NodeInfo maintains this index only while
	// the process-wide gate is on; otherwise it is empty and every node in
	// all counts as hosting hostname-scoped terms.
	nonHost []fwk.NodeInfo
}

// none: no pod in the snapshot has required anti-affinity, so none can
// reject the incoming pod.
func (h antiAffinityHolders) none() bool { return len(h.all) == 0 && len(h.nonHost) == 0 }

// listAntiAffinityHolders reads the snapshot's indexes, in upstream's order
// and with its error texts, so that a failing lister reports the same Error.
func (pl *InterPodAffinity) listAntiAffinityHolders() (antiAffinityHolders, *fwk.Status) {
	var h antiAffinityHolders
	var err error
	infos := pl.sharedLister.NodeInfos()
	if pl.hostnameFastPath {
		if h.nonHost, err = k8sline.NodesWithNonHostScopedAntiAffinity(infos); err != nil {
			return h, fwk.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with required anti-affinity terms where topologyKey != kubernetes.io/hostname: %w", err))
		}
	}
	if h.all, err = infos.HavePodsWithRequiredAntiAffinityList(); err != nil {
		return h, fwk.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with affinity: %w", err))
	}
	return h, nil
}

// PreFilter counts, per topology domain, the existing pods relevant to the
// incoming pod's required terms and the existing pods whose required
// anti-affinity rejects it. It Skips when no rule can reject any node and
// never narrows the node set.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, allNodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.resizeDeferred(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}

	// Most pods have no pod (anti-)affinity, and then only existing pods'
	// required anti-affinity can reject them. When the snapshot indexes no
	// such pod the answer is Skip, found without parsing the pod, reading
	// its namespace or scanning anything. For these pods nothing before the
	// listing can fail, so listing first reports the same errors; pods with
	// terms list at upstream's point, after their parse and namespace errors.
	var holders antiAffinityHolders
	termless := pod != nil && !podaffinity.HasTerms(pod)
	if termless {
		var st *fwk.Status
		if holders, st = pl.listAntiAffinityHolders(); st != nil {
			return nil, st
		}
		if holders.none() {
			return nil, fwk.NewStatus(fwk.Skip)
		}
	}

	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %+v", err))
	}
	// The term slices belong to pi, which this cycle owns: resolve in place.
	affinityTerms, antiAffinityTerms := pi.GetRequiredAffinityTerms(), pi.GetRequiredAntiAffinityTerms()
	if err := pl.resolveAllNamespaces(affinityTerms); err != nil {
		return nil, fwk.AsStatus(err)
	}
	if err := pl.resolveAllNamespaces(antiAffinityTerms); err != nil {
		return nil, fwk.AsStatus(err)
	}
	s := &preFilterState{
		podInfo:          pi,
		nsLabels:         pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace),
		terms:            sortTerms(affinityTerms, antiAffinityTerms, pl.hostnameFastPath),
		selfMatch:        podaffinity.MatchesAll(affinityTerms, pod, nil),
		hostnameFastPath: pl.hostnameFastPath,
	}
	if !termless {
		var st *fwk.Status
		if holders, st = pl.listAntiAffinityHolders(); st != nil {
			return nil, st
		}
	}
	if len(affinityTerms) > 0 || len(antiAffinityTerms) > 0 || !holders.none() {
		// Some count may scan below and skip the nodes whose pods
		// cannot count.
		pl.summarizeNodes(ctx, cycleState, s, pod, allNodes)
	}
	pl.countExistingAntiAffinity(ctx, cycleState, s, holders, allNodes)
	pl.countIncomingTerms(ctx, cycleState, s, allNodes)

	ownTerms := len(affinityTerms) > 0 || len(antiAffinityTerms) > 0
	if !ownTerms && s.existingAntiAffinity.Len() == 0 && !s.existingHostAnti {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	s.prepareFilter()
	cycleState.Write(preFilterStateKey, s)
	return nil, nil
}

// countExistingAntiAffinity fills s.existingAntiAffinity: the existing pods'
// required anti-affinity terms that select the incoming pod, counted in the
// domain of the existing pod's node. With the fast path, hostname-scoped
// terms are left to Filter and only noted in s.existingHostAnti; nodes
// whose pods have nothing but such terms are not even in the nonHost index.
func (pl *InterPodAffinity) countExistingAntiAffinity(ctx context.Context, cycleState fwk.CycleState, s *preFilterState, holders antiAffinityHolders, allNodes []fwk.NodeInfo) {
	nodes := holders.all
	if s.hostnameFastPath {
		nodes = holders.nonHost
		s.existingHostAnti = len(holders.all) > len(holders.nonHost)
	}
	if len(nodes) == 0 {
		// Nothing to count, and no holders for the term table to
		// sweep: a pod with preferred terms only, in a cluster without
		// required anti-affinity, pays no bookkeeping on its way to
		// Skip.
		s.existingAntiAffinity = topologyCounts{}
		return
	}
	var hostScopedNodes int64
	s.existingAntiAffinity, hostScopedNodes = pl.existingAntiAffinityCounts(ctx, cycleState, s, nodes, allNodes)
	if hostScopedNodes > 0 {
		s.existingHostAnti = true
	}
}

// existingAntiOn is what holder node ni (labels read through nt)
// contributes to s.existingAntiAffinity: each required anti-affinity term
// of its pods that selects the incoming pod counts once in the node's
// domain of the term's key. With the fast path, a hostname-scoped term is
// not counted but noted: Filter checks it on the candidate node itself.
// The result is built in reuse's storage, which the caller holds no more.
func (s *preFilterState) existingAntiOn(ni fwk.NodeInfo, nt *nodeTopology, reuse existingAnti) existingAnti {
	incoming := s.podInfo.GetPod()
	r := existingAnti{Tally: reuse.Tally.Reset()}
	for _, existing := range ni.GetPodsWithRequiredAntiAffinity() {
		terms := existing.GetRequiredAntiAffinityTerms()
		for j := range terms {
			if s.hostnameFastPath && hostScoped(terms[j]) {
				r.HostScoped = true
				continue
			}
			if terms[j].Matches(incoming, s.nsLabels) {
				r.Tally.Add(nt, terms[j].TopologyKey, 1)
			}
		}
	}
	return r
}

// countIncomingTerms scans every pod on every node (feasible or not) for the
// incoming pod's required terms and fills s.affinity, s.antiAffinity and
// s.hostAffinityMatches. A pod on a node lacking a term's topology key
// counts in no domain of that term.
func (pl *InterPodAffinity) countIncomingTerms(ctx context.Context, cycleState fwk.CycleState, s *preFilterState, allNodes []fwk.NodeInfo) {
	t := &s.terms
	if len(t.affinity) == 0 && len(t.antiAffinity) == 0 && len(t.hostAffinity) == 0 {
		// The zero counts are empty, and read-only until forked.
		s.affinity, s.antiAffinity = topologyCounts{}, topologyCounts{}
		return
	}
	s.affinity, s.antiAffinity, s.hostAffinityMatches = pl.incomingCounts(ctx, cycleState, s, allNodes)
}

// matchesOn is what node ni (labels read through nt) contributes to the
// counts of the incoming pod's required terms t: a pod matching all
// counted affinity terms counts once in the node's domain of each; a pod
// matching a counted anti-affinity term counts in the node's domain of
// that term; a pod matching all host-scoped affinity terms counts in
// hostAffinity. The result is built in reuse's storage, which the caller
// holds no more.
func (t *requiredTerms) matchesOn(ni fwk.NodeInfo, nt *nodeTopology, reuse incomingMatches) incomingMatches {
	r := incomingMatches{Affinity: reuse.Affinity.Reset(), AntiAffinity: reuse.AntiAffinity.Reset()}
	for _, existing := range ni.GetPods() {
		pod := existing.GetPod()
		if podaffinity.MatchesAll(t.affinity, pod, nil) {
			for j := range t.affinity {
				r.Affinity.Add(nt, t.affinity[j].TopologyKey, 1)
			}
		}
		for j := range t.antiAffinity {
			if t.antiAffinity[j].Matches(pod, nil) {
				r.AntiAffinity.Add(nt, t.antiAffinity[j].TopologyKey, 1)
			}
		}
		if podaffinity.MatchesAll(t.hostAffinity, pod, nil) {
			r.HostAffinity++
		}
	}
	return r
}

// PreFilterExtensions returns the plugin itself: nominated pods and
// preemption victims change the counts.
func (pl *InterPodAffinity) PreFilterExtensions() fwk.PreFilterExtensions { return pl }

// AddPod counts podInfoToAdd as if it ran on nodeInfo's node.
func (pl *InterPodAffinity) AddPod(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, podInfoToAdd fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := preFilterStateOf(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	s.updateWithPod(podInfoToAdd, nodeInfo, 1)
	return nil
}

// RemovePod uncounts podInfoToRemove from nodeInfo's node.
func (pl *InterPodAffinity) RemovePod(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, podInfoToRemove fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := preFilterStateOf(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	s.updateWithPod(podInfoToRemove, nodeInfo, -1)
	return nil
}

// preFilterStateOf returns what PreFilter stored for this cycle. A missing
// state (PreFilter Skipped, or is not enabled) is reported in upstream's
// words, which users see in Filter's Error status; a state of another type
// keeps cyclestate.Read's own explanation.
func preFilterStateOf(cycleState fwk.CycleState) (*preFilterState, error) {
	if s, ok := stored(cycleState, preFilterStateKey).(*preFilterState); ok {
		return s, nil
	}
	return readState[*preFilterState](cycleState, preFilterStateKey, "error reading %q from cycleState: %w")
}

// Filter checks, in upstream's order (the first failure decides the status
// code and so whether preemption is tried): the incoming pod's required
// affinity, its required anti-affinity, then existing pods' required
// anti-affinity. Existing pods' required affinity is not enforced here; it
// only scores.
func (pl *InterPodAffinity) Filter(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if pl.resizeDeferred(pod) {
		return nil
	}
	s, err := preFilterStateOf(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	nt := s.topologyOf(nodeInfo)
	if !s.satisfiesAffinity(nodeInfo, &nt) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if s.violatesAntiAffinity(nodeInfo, &nt) {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if s.violatesExistingAntiAffinity(nodeInfo, &nt) {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// scanHostPods is the node-local half of the hostname fast path. A node
// without the kubernetes.io/hostname label is in no hostname domain, so
// hostname-scoped terms can be neither satisfied nor violated there:
// labelled is false and no pod is looked at. Otherwise found reports whether
// one of pods passes test.
func (s *preFilterState) scanHostPods(nt *nodeTopology, pods []fwk.PodInfo, test func(fwk.PodInfo) bool) (labelled, found bool) {
	if !s.hasHostname(nt) {
		return false, false
	}
	return true, slices.ContainsFunc(pods, test)
}

// satisfiesAffinity: every term's domain of the node must hold a pod that
// matches all terms. A node lacking a term's key is rejected outright, even
// for a pod that could satisfy its own terms.
func (s *preFilterState) satisfiesAffinity(ni fwk.NodeInfo, nt *nodeTopology) bool {
	if host := s.terms.hostAffinity; len(host) > 0 {
		labelled, found := s.scanHostPods(nt, ni.GetPods(), func(p fwk.PodInfo) bool { return podaffinity.MatchesAll(host, p.GetPod(), nil) })
		if !labelled {
			return false
		}
		return found || s.mayBeFirstOfSeries()
	}
	everyDomainHasOne := true
	for i := range s.terms.affinity {
		n, ok := s.countInDomain(nt, affinityCounts, i)
		if !ok {
			return false
		}
		if n <= 0 {
			everyDomainHasOne = false
		}
	}
	if everyDomainHasOne {
		return true
	}
	// A matching pod somewhere else (in any domain) means the group has
	// started; the pod must then join it.
	return s.affinity.Len() == 0 && s.mayBeFirstOfSeries()
}

// mayBeFirstOfSeries lets the first pod of a group with affinity to itself
// schedule: no pod anywhere satisfies its terms (checked by the caller for
// the counted terms), but it matches all of them itself. Without the
// exception such a group could never start.
func (s *preFilterState) mayBeFirstOfSeries() bool {
	return s.hostAffinityMatches <= 0 && s.selfMatch
}

// violatesAntiAffinity: some anti-affinity term's domain of the node holds a
// pod the term selects. A node lacking the key is never rejected by a term.
func (s *preFilterState) violatesAntiAffinity(ni fwk.NodeInfo, nt *nodeTopology) bool {
	if s.antiAffinity.Len() > 0 {
		for i := range s.terms.antiAffinity {
			if n, ok := s.countInDomain(nt, antiAffinityCounts, i); ok && n > 0 {
				return true
			}
		}
	}
	if host := s.terms.hostAntiAffinity; len(host) > 0 {
		_, found := s.scanHostPods(nt, ni.GetPods(), func(p fwk.PodInfo) bool { return matchesAny(host, p.GetPod()) })
		return found
	}
	return false
}

// violatesExistingAntiAffinity: some domain the node belongs to holds an
// existing pod whose required anti-affinity selects the incoming pod.
func (s *preFilterState) violatesExistingAntiAffinity(ni fwk.NodeInfo, nt *nodeTopology) bool {
	if s.inExistingAntiDomain(nt) {
		return true
	}
	if !s.existingHostAnti {
		return false
	}
	incoming := s.podInfo.GetPod()
	_, found := s.scanHostPods(nt, ni.GetPodsWithRequiredAntiAffinity(), func(p fwk.PodInfo) bool {
		theirs := p.GetRequiredAntiAffinityTerms()
		return slices.ContainsFunc(theirs, func(t fwk.AffinityTerm) bool {
			return hostScoped(t) && t.Matches(incoming, s.nsLabels)
		})
	})
	return found
}

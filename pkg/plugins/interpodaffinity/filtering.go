package interpodaffinity

import (
	"context"
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

const (
	// preFilterStateKey is upstream's key, so that the error for a missing
	// state reads exactly like upstream's. It means the in-tree plugin and
	// this one must not share a CycleState (they never do in a profile built
	// per docs §8, which disables the in-tree one).
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

// topologyPair names a topology domain: the nodes whose label key has value.
type topologyPair struct {
	key   string
	value string
}

// topologyCounts counts relevant pods per topology domain. An entry that
// drops to zero through AddPod/RemovePod is deleted, so that an empty map
// keeps meaning "no such pod anywhere" (the first-pod-of-a-series rule relies
// on it).
type topologyCounts map[topologyPair]int64

// add adds delta to the domain of key on a node with nodeLabels; a node
// without the key belongs to no domain of it and counts nowhere.
func (c topologyCounts) add(nodeLabels map[string]string, key string, delta int64) {
	v, ok := nodeLabels[key]
	if !ok {
		return
	}
	p := topologyPair{key: key, value: v}
	if n := c[p] + delta; n != 0 {
		c[p] = n
	} else {
		delete(c, p)
	}
}

func (c topologyCounts) merge(t nodeTally) {
	for _, d := range t {
		c[d.pair] += d.count
	}
}

func (c topologyCounts) clone() topologyCounts {
	out := make(topologyCounts, len(c))
	for p, n := range c {
		out[p] = n
	}
	return out
}

// nodeTally is one node's contribution to a topologyCounts (or to a score
// map), built in parallel and merged serially. On one node a topology key has
// exactly one value, so entries are unique per key; there are only as many as
// distinct term keys, which makes a linear scan cheaper than a map. Nodes that
// contribute nothing allocate nothing.
type nodeTally []domainCount

type domainCount struct {
	pair  topologyPair
	count int64
}

func (t *nodeTally) add(nodeLabels map[string]string, key string, delta int64) {
	v, ok := nodeLabels[key]
	if !ok {
		return
	}
	for i := range *t {
		if (*t)[i].pair.key == key {
			(*t)[i].count += delta
			return
		}
	}
	*t = append(*t, domainCount{pair: topologyPair{key: key, value: v}, count: delta})
}

// preFilterState is what PreFilter learns about the cluster for the incoming
// pod; Filter answers per node from it without scanning pods, except for the
// hostname fast path's node-local checks.
//
// With the fast path off (the default), affinityTerms and antiAffinityTerms
// are all of the incoming pod's required terms and the host* fields are
// empty. With it on, hostname-scoped terms move to node-local checks (§3.8):
// hostAffinityTerms holds all affinity terms when every one of them is
// hostname-scoped (affinityTerms is then empty), and hostAntiAffinityTerms
// the hostname-scoped anti-affinity terms (antiAffinityTerms keeps the rest).
type preFilterState struct {
	// podInfo is the incoming pod, namespace selectors of its required terms
	// expanded. Shared by clones: it is never modified after PreFilter.
	podInfo fwk.PodInfo
	// nsLabels are the incoming pod's namespace labels, for existing pods'
	// namespaceSelectors; nil when the namespace is unknown.
	nsLabels labels.Set

	affinityTerms     []fwk.AffinityTerm
	antiAffinityTerms []fwk.AffinityTerm

	// existingAntiAffinity counts, per domain, the required anti-affinity
	// terms of existing pods that select the incoming pod.
	existingAntiAffinity topologyCounts
	// affinity counts, per domain of each affinity term, the pods matching
	// all affinityTerms. For each term separately some such pod must be in
	// the candidate's domain; it need not be the same pod for every term.
	affinity topologyCounts
	// antiAffinity counts, per domain of each anti-affinity term, the pods
	// matching that term.
	antiAffinity topologyCounts

	// hostnameFastPath adds the node-local check of existing pods'
	// hostname-scoped anti-affinity terms, which are not counted above.
	hostnameFastPath      bool
	hostAffinityTerms     []fwk.AffinityTerm
	hostAntiAffinityTerms []fwk.AffinityTerm
	// hostAffinityMatches counts pods anywhere matching all
	// hostAffinityTerms; the self-affinity exception needs it to be 0.
	hostAffinityMatches int64
}

// Clone copies the counts, which AddPod/RemovePod modify; terms, the pod and
// the namespace labels are immutable after PreFilter and are shared.
func (s *preFilterState) Clone() fwk.StateData {
	if s == nil {
		return nil
	}
	c := *s
	c.existingAntiAffinity = s.existingAntiAffinity.clone()
	c.affinity = s.affinity.clone()
	c.antiAffinity = s.antiAffinity.clone()
	return &c
}

// updateWithPod accounts for pi being added to (delta 1) or removed from
// (delta -1) the node of ni, exactly as PreFilter would have counted it.
func (s *preFilterState) updateWithPod(pi fwk.PodInfo, ni fwk.NodeInfo, delta int64) {
	nl := nodeLabels(ni)
	incoming := s.podInfo.GetPod()
	terms := pi.GetRequiredAntiAffinityTerms()
	for i := range terms {
		t := &terms[i]
		if s.hostnameFastPath && t.TopologyKey == v1.LabelHostname {
			continue // checked against the node's own pods in Filter
		}
		if t.Matches(incoming, s.nsLabels) {
			s.existingAntiAffinity.add(nl, t.TopologyKey, delta)
		}
	}
	pod := pi.GetPod()
	if matchesAll(s.affinityTerms, pod) {
		for i := range s.affinityTerms {
			s.affinity.add(nl, s.affinityTerms[i].TopologyKey, delta)
		}
	}
	for i := range s.antiAffinityTerms {
		if s.antiAffinityTerms[i].Matches(pod, nil) {
			s.antiAffinity.add(nl, s.antiAffinityTerms[i].TopologyKey, delta)
		}
	}
	if len(s.hostAffinityTerms) > 0 && matchesAll(s.hostAffinityTerms, pod) {
		s.hostAffinityMatches += delta
	}
}

// splitByHostnameScope distributes the incoming pod's required terms for the
// hostname fast path. Affinity terms stay together unless all are
// hostname-scoped, because one pod must match all of them; anti-affinity
// terms are independent and split one by one.
func (s *preFilterState) splitByHostnameScope() {
	affinity := s.podInfo.GetRequiredAffinityTerms()
	allHost := true
	for i := range affinity {
		if affinity[i].TopologyKey != v1.LabelHostname {
			allHost = false
			break
		}
	}
	if allHost {
		s.hostAffinityTerms = affinity
	} else {
		s.affinityTerms = affinity
	}
	for _, t := range s.podInfo.GetRequiredAntiAffinityTerms() {
		if t.TopologyKey == v1.LabelHostname {
			s.hostAntiAffinityTerms = append(s.hostAntiAffinityTerms, t)
		} else {
			s.antiAffinityTerms = append(s.antiAffinityTerms, t)
		}
	}
}

// PreFilter counts, per topology domain, the existing pods relevant to the
// incoming pod's required terms and the existing pods whose required
// anti-affinity rejects it. It Skips when no rule can reject any node and
// never narrows the node set.
func (pl *InterPodAffinity) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, allNodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.resizeDeferred(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %+v", err))
	}
	// The slices belong to pi, which this cycle owns: expand in place.
	affinityTerms := pi.GetRequiredAffinityTerms()
	for i := range affinityTerms {
		if err := pl.expandNamespaceSelector(&affinityTerms[i]); err != nil {
			return nil, fwk.AsStatus(err)
		}
	}
	antiAffinityTerms := pi.GetRequiredAntiAffinityTerms()
	for i := range antiAffinityTerms {
		if err := pl.expandNamespaceSelector(&antiAffinityTerms[i]); err != nil {
			return nil, fwk.AsStatus(err)
		}
	}

	s := &preFilterState{
		podInfo:          pi,
		nsLabels:         pl.namespaceLabels(klog.FromContext(ctx), pod.Namespace),
		hostnameFastPath: pl.hostnameFastPath,
	}
	// existingHostScoped: some existing pod has a hostname-scoped required
	// anti-affinity term, left to Filter's node-local check (fast path only).
	var existingHostScoped bool
	if pl.hostnameFastPath {
		// NodeInfo fills the non-host-scoped index only while the global gate
		// is on; like upstream, trust it either way.
		nonHostNodes, err := pl.sharedLister.NodeInfos().HavePodsWithRequiredNonHostScopedAntiAffinityList()
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with required anti-affinity terms where topologyKey != kubernetes.io/hostname: %w", err))
		}
		anyNodes, err := pl.sharedLister.NodeInfos().HavePodsWithRequiredAntiAffinityList()
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with affinity: %w", err))
		}
		s.splitByHostnameScope()
		s.existingAntiAffinity, existingHostScoped = pl.countExistingAntiAffinity(ctx, s, nonHostNodes)
		// Nodes whose anti-affinity pods are all hostname-scoped are not in
		// the non-host index at all.
		existingHostScoped = existingHostScoped || len(anyNodes) > len(nonHostNodes)
	} else {
		nodes, err := pl.sharedLister.NodeInfos().HavePodsWithRequiredAntiAffinityList()
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("failed to list NodeInfos with pods with affinity: %w", err))
		}
		s.affinityTerms = affinityTerms
		s.antiAffinityTerms = antiAffinityTerms
		s.existingAntiAffinity, _ = pl.countExistingAntiAffinity(ctx, s, nodes)
	}
	pl.countIncomingTerms(ctx, s, allNodes)

	if len(s.existingAntiAffinity) == 0 && len(affinityTerms) == 0 && len(antiAffinityTerms) == 0 && !existingHostScoped {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cycleState.Write(preFilterStateKey, s)
	return nil, nil
}

// countExistingAntiAffinity counts, over nodes (those hosting pods with
// required anti-affinity), the existing pods' required anti-affinity terms
// that select the incoming pod, in the domain of the existing pod's node.
// With the fast path, hostname-scoped terms are not counted; the bool reports
// whether any was seen.
func (pl *InterPodAffinity) countExistingAntiAffinity(ctx context.Context, s *preFilterState, nodes []fwk.NodeInfo) (topologyCounts, bool) {
	incoming := s.podInfo.GetPod()
	tallies := make([]nodeTally, len(nodes))
	var sawHostScoped atomic.Bool
	pl.parallelizer.Until(ctx, len(nodes), func(i int) {
		ni := nodes[i]
		nl := nodeLabels(ni)
		var tally nodeTally
		for _, existing := range ni.GetPodsWithRequiredAntiAffinity() {
			terms := existing.GetRequiredAntiAffinityTerms()
			for j := range terms {
				t := &terms[j]
				if s.hostnameFastPath && t.TopologyKey == v1.LabelHostname {
					sawHostScoped.Store(true)
					continue
				}
				if t.Matches(incoming, s.nsLabels) {
					tally.add(nl, t.TopologyKey, 1)
				}
			}
		}
		tallies[i] = tally
	}, pl.Name())

	counts := make(topologyCounts)
	for _, t := range tallies {
		counts.merge(t)
	}
	return counts, sawHostScoped.Load()
}

// countIncomingTerms scans every pod on every node (feasible or not) for the
// incoming pod's required terms and fills s.affinity, s.antiAffinity and
// s.hostAffinityMatches. A pod on a node lacking a term's topology key
// counts in no domain of that term.
func (pl *InterPodAffinity) countIncomingTerms(ctx context.Context, s *preFilterState, allNodes []fwk.NodeInfo) {
	s.affinity = make(topologyCounts)
	s.antiAffinity = make(topologyCounts)
	if len(s.affinityTerms) == 0 && len(s.antiAffinityTerms) == 0 && len(s.hostAffinityTerms) == 0 {
		return
	}
	type nodeResult struct {
		affinity, antiAffinity nodeTally
	}
	results := make([]nodeResult, len(allNodes))
	var hostAffinityMatches atomic.Int64
	pl.parallelizer.Until(ctx, len(allNodes), func(i int) {
		ni := allNodes[i]
		nl := nodeLabels(ni)
		var r nodeResult
		var hostMatches int64
		for _, existing := range ni.GetPods() {
			pod := existing.GetPod()
			if matchesAll(s.affinityTerms, pod) {
				for j := range s.affinityTerms {
					r.affinity.add(nl, s.affinityTerms[j].TopologyKey, 1)
				}
			}
			for j := range s.antiAffinityTerms {
				if s.antiAffinityTerms[j].Matches(pod, nil) {
					r.antiAffinity.add(nl, s.antiAffinityTerms[j].TopologyKey, 1)
				}
			}
			if matchesAll(s.hostAffinityTerms, pod) {
				hostMatches++
			}
		}
		results[i] = r
		if hostMatches > 0 {
			hostAffinityMatches.Add(hostMatches)
		}
	}, pl.Name())

	for _, r := range results {
		s.affinity.merge(r.affinity)
		s.antiAffinity.merge(r.antiAffinity)
	}
	s.hostAffinityMatches = hostAffinityMatches.Load()
}

// PreFilterExtensions returns the plugin itself: nominated pods and
// preemption victims change the counts.
func (pl *InterPodAffinity) PreFilterExtensions() fwk.PreFilterExtensions { return pl }

// AddPod counts podInfoToAdd as if it ran on nodeInfo's node.
func (pl *InterPodAffinity) AddPod(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, podInfoToAdd fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readPreFilterState(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	s.updateWithPod(podInfoToAdd, nodeInfo, 1)
	return nil
}

// RemovePod uncounts podInfoToRemove from nodeInfo's node.
func (pl *InterPodAffinity) RemovePod(_ context.Context, cycleState fwk.CycleState, _ *v1.Pod, podInfoToRemove fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readPreFilterState(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	s.updateWithPod(podInfoToRemove, nodeInfo, -1)
	return nil
}

func readPreFilterState(cycleState fwk.CycleState) (*preFilterState, error) {
	c, err := cycleState.Read(preFilterStateKey)
	if err != nil {
		// PreFilter did not run or Skipped; upstream's wording.
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preFilterStateKey, err)
	}
	s, ok := c.(*preFilterState)
	if !ok {
		return nil, fmt.Errorf("%+v  convert to interpodaffinity.state error", c)
	}
	return s, nil
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
	s, err := readPreFilterState(cycleState)
	if err != nil {
		return fwk.AsStatus(err)
	}
	nl := nodeLabels(nodeInfo)
	if !s.satisfiesAffinity(nodeInfo, nl) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	if s.violatesAntiAffinity(nodeInfo, nl) {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	}
	if s.violatesExistingAntiAffinity(nodeInfo, nl) {
		return fwk.NewStatus(fwk.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	}
	return nil
}

// satisfiesAffinity: every term's domain of the node must hold a pod that
// matches all terms. A node lacking a term's key is rejected outright, even
// for a pod that could satisfy its own terms.
func (s *preFilterState) satisfiesAffinity(ni fwk.NodeInfo, nl map[string]string) bool {
	if len(s.hostAffinityTerms) > 0 {
		// Fast path, all terms hostname-scoped: only the node's own pods
		// can satisfy them.
		if _, ok := nl[v1.LabelHostname]; !ok {
			return false
		}
		for _, existing := range ni.GetPods() {
			if matchesAll(s.hostAffinityTerms, existing.GetPod()) {
				return true
			}
		}
		return s.mayBeFirstOfSeries()
	}
	if len(s.affinityTerms) == 0 {
		return true
	}
	found := true
	for i := range s.affinityTerms {
		key := s.affinityTerms[i].TopologyKey
		v, ok := nl[key]
		if !ok {
			return false
		}
		if s.affinity[topologyPair{key: key, value: v}] <= 0 {
			found = false
		}
	}
	if found {
		return true
	}
	// Only when no matching pod sits in any domain anywhere.
	return len(s.affinity) == 0 && s.mayBeFirstOfSeries()
}

// mayBeFirstOfSeries lets the first pod of a group with affinity to itself
// schedule: no pod anywhere satisfies its terms (checked by the caller for
// the counted terms), but it matches all of them itself. Without the
// exception such a group could never start.
func (s *preFilterState) mayBeFirstOfSeries() bool {
	return s.hostAffinityMatches <= 0 && matchesAll(s.podInfo.GetRequiredAffinityTerms(), s.podInfo.GetPod())
}

// violatesAntiAffinity: some anti-affinity term's domain of the node holds a
// pod the term selects. A node lacking the key is never rejected by a term.
func (s *preFilterState) violatesAntiAffinity(ni fwk.NodeInfo, nl map[string]string) bool {
	if len(s.antiAffinity) > 0 {
		for i := range s.antiAffinityTerms {
			key := s.antiAffinityTerms[i].TopologyKey
			if v, ok := nl[key]; ok && s.antiAffinity[topologyPair{key: key, value: v}] > 0 {
				return true
			}
		}
	}
	if len(s.hostAntiAffinityTerms) > 0 {
		if _, ok := nl[v1.LabelHostname]; !ok {
			return false
		}
		for _, existing := range ni.GetPods() {
			if matchesAny(s.hostAntiAffinityTerms, existing.GetPod()) {
				return true
			}
		}
	}
	return false
}

// violatesExistingAntiAffinity: some domain the node belongs to holds an
// existing pod whose required anti-affinity selects the incoming pod.
func (s *preFilterState) violatesExistingAntiAffinity(ni fwk.NodeInfo, nl map[string]string) bool {
	if n := len(s.existingAntiAffinity); n > 0 {
		// Walk whichever side is smaller; both visit every domain the node
		// is in that has a count.
		if n < len(nl) {
			for p, c := range s.existingAntiAffinity {
				if c > 0 {
					if v, ok := nl[p.key]; ok && v == p.value {
						return true
					}
				}
			}
		} else {
			for k, v := range nl {
				if s.existingAntiAffinity[topologyPair{key: k, value: v}] > 0 {
					return true
				}
			}
		}
	}
	if s.hostnameFastPath {
		if _, ok := nl[v1.LabelHostname]; !ok {
			return false
		}
		incoming := s.podInfo.GetPod()
		for _, existing := range ni.GetPodsWithRequiredAntiAffinity() {
			terms := existing.GetRequiredAntiAffinityTerms()
			for i := range terms {
				if terms[i].TopologyKey == v1.LabelHostname && terms[i].Matches(incoming, s.nsLabels) {
					return true
				}
			}
		}
	}
	return false
}

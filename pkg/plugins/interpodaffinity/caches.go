package interpodaffinity

// This file is the one place where the plugin meets its speed machinery
// (the packages under internal/, doc.go lists them): the caches a plugin
// keeps and the switch that turns them off, and the few questions the
// decisions ask of them. filtering.go and scoring.go say what a node
// contributes and how a node is judged; what is asked here returns exactly
// what a scan of the snapshot would, whether the answer comes from a cache
// or from the pass-through implementations (no caches, as upstream).

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/aggregate"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodegen"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodeindex"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/podsummary"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// The count types the decisions fill and read (package counts), and how
// they read a node's topology labels (package topology).
type (
	// topologyCounts counts relevant pods per topology domain.
	topologyCounts = counts.TopologyCounts
	// nodeTally is one node's contribution to a topologyCounts or to the
	// score sums.
	nodeTally = counts.NodeTally
	// existingAnti is one holder node's part of the existing pods'
	// anti-affinity counts.
	existingAnti = counts.ExistingAnti
	// incomingMatches is one node's part of the counts for the incoming
	// pod's required terms.
	incomingMatches = counts.IncomingMatches
	// nodeTopology reads one node's topology labels.
	nodeTopology = topology.Node
	// topologyPair names a topology domain.
	topologyPair = topology.Pair
)

// hostScoped reports whether a term's domain is a single node
// (topology.HostScoped: the one rule for the decisions and the summaries).
func hostScoped(t fwk.AffinityTerm) bool { return topology.HostScoped(t) }

// nodeLabels returns the labels of a NodeInfo's node (nil without one).
func nodeLabels(ni fwk.NodeInfo) map[string]string { return topology.NodeLabels(ni) }

// ownTopology reads ni's topology labels from the node itself.
func ownTopology(ni fwk.NodeInfo) nodeTopology { return topology.Of(nil, ni) }

// caches are the plugin's cross-cycle caches (doc.go): the table of
// distinct existing terms and classes of pods behind PreFilter's and
// PreScore's cluster-wide sums, the topology table
// Filter and Score read labels from, and the pod summaries that let the
// scans skip nodes. Each is an interface with a caching and a pass-through
// implementation.
type caches struct {
	// sums keeps the existing pods' terms by distinct term and the pods
	// by class, for PreFilter's and PreScore's cluster-wide sums.
	sums      aggregate.Sums
	topology  topology.Syncer
	summaries podsummary.Syncer
}

// options are the plugin's settings that are not configuration: nothing
// in the plugin's args turns them, so that the public config API stays
// upstream's.
type options struct {
	// noCaches turns every cache off: each cycle scans, as upstream's
	// plugin does. Tests compare cached against scanned results with it.
	noCaches bool
}

// newCaches makes the caches of the plugin registered as op (the name
// their parallel work is reported under). It enables them unless opts
// turn them off or gate GenericWorkload is on: its pod-group cycles assume
// and forget pods in the snapshot while restoring the node's previous
// generation, so a generation no longer identifies what is on a node.
// Off, every cache is its pass-through implementation.
func newCaches(op string, fts feature.Features, opts options) *caches {
	on := !k8sline.GenericWorkload(fts) && !opts.noCaches
	if !on {
		return &caches{
			sums:      aggregate.PassThrough{},
			topology:  topology.PassThrough{},
			summaries: podsummary.PassThrough{},
		}
	}
	// The sums and the topology table sweep the same lists in a cycle:
	// one read of the nodes' generations serves both.
	gens := &nodegen.Reader{}
	return &caches{
		sums:      aggregate.NewTable(gens),
		topology:  topology.NewTable(gens),
		summaries: &podsummary.Table{},
	}
}

// filterCache is what a preFilterState keeps of the machinery: how its
// counts and the nodes' labels are read. Copied by clones; what it points
// to is never modified once PreFilter wrote the state.
type filterCache struct {
	// topology holds the topology labels of the cycle's nodes (nil: read
	// them from the nodes).
	topology *topology.View
	// summaries are the incoming pod and its required terms compiled for
	// the pod summaries of the cycle's nodes (nil: none; every node is
	// computed).
	summaries *podsummary.RequiredQueries
	// reads is how Filter reads the state for each node (prepareFilter).
	reads *filterReads
	// countsRead: the counts are still the ones reads' lookups read. The
	// first AddPod or RemovePod changes the counts and clears it.
	countsRead bool
}

// filterReads is what Filter needs of a preFilterState resolved once per
// cycle, so that per node it reads the counts hashing a domain at most
// once (counts.Lookup) and the node's labels without searching the view's
// keys.
type filterReads struct {
	// The counts' lookups, while countsRead.
	affinity, antiAffinity, existingAnti counts.Lookup[int64]
	// The view's columns (topology.View.Col) of the counted terms' keys,
	// in the terms' order, and of the hostname label. They depend on the
	// view and the terms alone, which clones share and never change.
	affinityCols, antiAffinityCols []int
	hostnameCol                    int
	// existingAntiCols are the columns of the keys of
	// existingAntiAffinity, which change with the counts: read while
	// countsRead.
	existingAntiCols []int
}

// summarizeNodes compiles the incoming pod and its required terms for the
// summaries of the cycle's nodes, so that the counts skip the nodes that
// provably contribute nothing.
func (pl *InterPodAffinity) summarizeNodes(ctx context.Context, cs fwk.CycleState, s *preFilterState, pod *v1.Pod, allNodes []fwk.NodeInfo) {
	s.cache.summaries = podsummary.NewRequiredQueries(pl.caches.summaries.Sync(ctx, cs, pl.parallelizer, Name, allNodes),
		pod, s.terms.affinity, s.terms.antiAffinity, s.terms.hostAffinity)
}

// existingAntiAffinityCounts sums existingAntiOn over the holder nodes:
// the counts, and how many of the nodes hold hostname-scoped terms (fast
// path; only whether there are any is read). The table of distinct terms
// answers unless it is off or the cycle is a pod-group cycle; it sums
// over allNodes, whose order is the same from cycle to cycle while the
// holders' list is made anew whenever a node gains or loses its first
// holder: a node that holds nothing adds nothing, and a node the fast
// path leaves out of the holders holds hostname-scoped terms only, which
// the fast path does not count. Otherwise the holders are scanned, and a
// node whose summary proves that no term on it can select the incoming
// pod is not looked at.
func (pl *InterPodAffinity) existingAntiAffinityCounts(ctx context.Context, cs fwk.CycleState, s *preFilterState, nodes, allNodes []fwk.NodeInfo) (topologyCounts, int64) {
	incoming := s.podInfo.GetPod()
	if sum, ok := pl.caches.sums.ExistingAnti(cs, allNodes, aggregate.Incoming{Pod: incoming, NamespaceLabels: s.nsLabels, HostnameFastPath: s.hostnameFastPath}); ok {
		return sum.Counts, sum.HostScopedNodes
	}
	q := s.cache.summaries
	onNode := func(i int, ni fwk.NodeInfo, reuse existingAnti) existingAnti {
		if skip, hostAnti := q.SkipsExistingAnti(i, ni); skip {
			// Whether a term on the node is hostname-scoped is noted all
			// the same.
			return existingAnti{Tally: reuse.Tally.Reset(), HostScoped: s.hostnameFastPath && hostAnti}
		}
		// No view yet: its keys include these counts' (filterKeys).
		nt := ownTopology(ni)
		return s.existingAntiOn(ni, &nt, reuse)
	}
	sum := nodeindex.Scan(ctx, pl.parallelizer, Name, nodes, counts.OpsOf(counts.NewExistingAntiSum, onNode))
	return sum.Counts, sum.HostScopedNodes
}

// incomingCounts sums matchesOn over all nodes: the counts of the incoming
// pod's counted affinity and anti-affinity terms, and the pods matching
// all host-scoped affinity terms. The classes of pods answer unless they
// are off or the cycle is a pod-group cycle; then all nodes are scanned,
// and a node whose summary proves that no pod on it counts is not looked
// at.
func (pl *InterPodAffinity) incomingCounts(ctx context.Context, cs fwk.CycleState, s *preFilterState, allNodes []fwk.NodeInfo) (affinity, antiAffinity topologyCounts, hostAffinity int64) {
	t := &s.terms
	q := s.cache.summaries
	// This is the cycle's one walk over all nodes, and Filter will look
	// up the keys of the counted terms on hundreds of them: the topology
	// table reads the generations for both. The nodes' labels are read
	// through the view (nil: from the nodes); view is a parameter, never
	// assigned, so the closure copies it instead of boxing a variable in
	// every cycle.
	var sum *counts.IncomingSum
	s.cache.topology = pl.caches.topology.Sync(cs, allNodes, s.filterKeys(), func(gens []int64, view *topology.View) {
		if got, ok := pl.caches.sums.Incoming(cs, allNodes, view, aggregate.IncomingTerms{Affinity: t.affinity, AntiAffinity: t.antiAffinity, HostAffinity: t.hostAffinity}); ok {
			sum = got
			return
		}
		onNode := func(i int, ni fwk.NodeInfo, reuse incomingMatches) incomingMatches {
			if q.SkipsIncoming(gens, i, ni) {
				// No pod on the node matches a counted term.
				return incomingMatches{Affinity: reuse.Affinity.Reset(), AntiAffinity: reuse.AntiAffinity.Reset()}
			}
			nt := topology.Of(view, ni)
			return t.matchesOn(ni, &nt, reuse)
		}
		sum = nodeindex.Scan(ctx, pl.parallelizer, Name, allNodes, counts.OpsOf(counts.NewIncomingSum, onNode))
	})
	return sum.Affinity, sum.AntiAffinity, sum.HostAffinity
}

// filterKeys are the node labels Filter reads for s: the counted terms'
// topology keys, the existing anti-affinity's, and the hostname label
// where node-local checks need it.
func (s *preFilterState) filterKeys() []string {
	var keys []string
	for i := range s.terms.affinity {
		keys = topology.AddKey(keys, s.terms.affinity[i].TopologyKey)
	}
	for i := range s.terms.antiAffinity {
		keys = topology.AddKey(keys, s.terms.antiAffinity[i].TopologyKey)
	}
	for _, kc := range s.existingAntiAffinity.Keys() {
		keys = topology.AddKey(keys, kc.Key)
	}
	if len(s.terms.hostAffinity) > 0 || len(s.terms.hostAntiAffinity) > 0 || s.existingHostAnti {
		keys = topology.AddKey(keys, v1.LabelHostname)
	}
	return keys
}

// prepareFilter resolves how Filter reads s, once s is complete and
// before it is written to the cycle state. The terms, the view and the
// counts are then fixed until an AddPod or RemovePod changes the counts.
func (s *preFilterState) prepareFilter() {
	view := s.cache.topology
	r := &filterReads{}
	r.affinity = s.affinity.Lookup()
	r.antiAffinity = s.antiAffinity.Lookup()
	r.existingAnti = s.existingAntiAffinity.Lookup()
	r.hostnameCol = view.Col(v1.LabelHostname)
	// One array for the three lists of columns.
	existingKeys := s.existingAntiAffinity.Keys()
	na, nn := len(s.terms.affinity), len(s.terms.antiAffinity)
	cols := make([]int, 0, na+nn+len(existingKeys))
	for i := range s.terms.affinity {
		cols = append(cols, view.Col(s.terms.affinity[i].TopologyKey))
	}
	for i := range s.terms.antiAffinity {
		cols = append(cols, view.Col(s.terms.antiAffinity[i].TopologyKey))
	}
	for _, kc := range existingKeys {
		cols = append(cols, view.Col(kc.Key))
	}
	r.affinityCols, r.antiAffinityCols, r.existingAntiCols = cols[:na:na], cols[na:na+nn:na+nn], cols[na+nn:]
	s.cache.reads, s.cache.countsRead = r, true
}

// ownCounts makes the three count maps this state's own before their
// first change (copy on write): until then they are shared with clones
// (and, from a scan, with nothing else), and Filter reads them through
// lookups made for them.
func (s *preFilterState) ownCounts() {
	if s.ownsCounts {
		return
	}
	s.existingAntiAffinity = s.existingAntiAffinity.Fork()
	s.affinity = s.affinity.Fork()
	s.antiAffinity = s.antiAffinity.Fork()
	s.ownsCounts = true
	s.cache.countsRead = false
}

// topologyOf returns how Filter reads nodeInfo's topology labels.
func (s *preFilterState) topologyOf(nodeInfo fwk.NodeInfo) nodeTopology {
	return topology.Located(s.cache.topology, nodeInfo)
}

// countKind names one of a preFilterState's count maps.
type countKind uint8

const (
	// affinityCounts: s.affinity, by counted affinity term.
	affinityCounts countKind = iota
	// antiAffinityCounts: s.antiAffinity, by counted anti-affinity term.
	antiAffinityCounts
	// existingAntiCounts: s.existingAntiAffinity, by its keys.
	existingAntiCounts
)

// countInDomain is the count, in counts k, of the node's domain of the
// i-th key of k (a counted term's topology key, or existingAntiAffinity's
// i-th key); ok is false when the node lacks the key. The count is read
// through the lookup made for it while it is current (countsRead), and
// existingAntiCounts only then.
func (s *preFilterState) countInDomain(nt *nodeTopology, k countKind, i int) (n int64, ok bool) {
	r := s.cache.reads
	var key string
	var col int
	var c *topologyCounts
	var l *counts.Lookup[int64]
	switch k {
	case affinityCounts:
		key, col, c, l = s.terms.affinity[i].TopologyKey, r.affinityCols[i], &s.affinity, &r.affinity
	case antiAffinityCounts:
		key, col, c, l = s.terms.antiAffinity[i].TopologyKey, r.antiAffinityCols[i], &s.antiAffinity, &r.antiAffinity
	default:
		key, col, c, l = s.existingAntiAffinity.Keys()[i].Key, r.existingAntiCols[i], &s.existingAntiAffinity, &r.existingAnti
	}
	v, ok := nt.At(col, key)
	if !ok {
		return 0, false
	}
	p := topologyPair{Key: key, Value: v}
	if s.cache.countsRead {
		return l.Get(p), true
	}
	return c.Get(p), true
}

// inExistingAntiDomain reports whether the node lies in a domain where the
// existing pods' anti-affinity counts are positive. Only the keys that
// have domains are looked up: usually one or two, while nodes carry a
// dozen labels.
func (s *preFilterState) inExistingAntiDomain(nt *nodeTopology) bool {
	if !s.cache.countsRead {
		return s.existingAntiAffinity.CoversNode(nt)
	}
	for i := range s.existingAntiAffinity.Keys() {
		if n, ok := s.countInDomain(nt, existingAntiCounts, i); ok && n > 0 {
			return true
		}
	}
	return false
}

// hasHostname reports whether the node has the kubernetes.io/hostname
// label.
func (s *preFilterState) hasHostname(nt *nodeTopology) bool {
	_, ok := nt.At(s.cache.reads.hostnameCol, v1.LabelHostname)
	return ok
}

// scoreWeights are the weights PreScore summed per topology domain, as
// Score reads them: a node scores the sum, over the keys it has, of its
// domain's weight. Never modified once written.
type scoreWeights struct {
	// keys are the scored topology keys (the sum's, shared).
	keys counts.KeyTally
	// lookup reads the sum with one hashed lookup for most domains
	// (counts.Lookup), and cols are the view's columns of keys, in the
	// keys' order: Score resolves neither per node.
	lookup counts.ScoreLookup
	// topology holds the topology labels of the cycle's nodes (nil: read
	// them from the nodes).
	topology *topology.View
	cols     []int
}

// scoreSums sums tallyNode over nodes (all nodes when the incoming pod has
// preferred terms, otherwise those with pods with affinity) and returns
// the weights, or nil when no domain has any. A node whose summary proves
// that no pair on it scores is not looked at.
func (pl *InterPodAffinity) scoreSums(ctx context.Context, cs fwk.CycleState, nodes []fwk.NodeInfo, hasPreferred bool, pi fwk.PodInfo, nsLabels labels.Set) *scoreWeights {
	preferred, preferredAnti := pi.GetPreferredAffinityTerms(), pi.GetPreferredAntiAffinityTerms()
	if !hasPreferred && len(nodes) == 0 {
		// No pod has terms to score with, and the incoming pod none:
		// nothing to sum (the commonest cycle, which the sweep below
		// would cost a pass over all nodes).
		return nil
	}
	// The table sums over all nodes either way: their list keeps its
	// order from cycle to cycle, so that its sweep goes by position,
	// while the list of nodes with pods with affinity is made anew
	// whenever a node gains or loses its first such pod (a node without
	// one adds nothing). A lister that cannot list them all leaves it
	// the nodes given.
	tableNodes := nodes
	if !hasPreferred {
		if all, err := pl.sharedLister.NodeInfos().List(); err == nil {
			tableNodes = all
		}
	}
	// sumOver returns the score sum over nodes; gens are the nodes'
	// generations, if read, and view the topology view synced with them,
	// if any (the nodes' labels are read through it; view is a
	// parameter, never assigned, so the closure copies it instead of
	// boxing a variable in every cycle). The scored terms and classes of
	// pods answer unless they are off or the cycle is a pod-group cycle;
	// then the nodes are scanned, and a node whose summary proves that no
	// pair on it scores is not looked at.
	sumOver := func(gens []int64, view *topology.View) *counts.ScoreSum {
		q := aggregate.ScoreQuery{Pod: pi.GetPod(), NamespaceLabels: nsLabels, Preferred: preferred, PreferredAnti: preferredAnti,
			HardPodAffinityWeight: pl.args.hardPodAffinityWeight}
		if sum, ok := pl.caches.sums.Score(cs, tableNodes, view, q); ok {
			return sum
		}
		sq := pl.scoreQueries(ctx, cs, nodes, hasPreferred, pi)
		onNode := func(i int, ni fwk.NodeInfo, reuse nodeTally) nodeTally {
			if sq.Skips(gens, i, ni) {
				// No pair on the node scores: its summary proves it.
				return reuse.Reset()
			}
			nt := topology.Of(view, ni)
			return pl.tallyNode(ni, &nt, pi, nsLabels, hasPreferred, reuse)
		}
		return nodeindex.Scan(ctx, pl.parallelizer, Name, nodes, counts.OpsOf(counts.NewScoreSum, onNode))
	}
	var sum *counts.ScoreSum
	var view *topology.View
	if hasPreferred {
		// The walk over all nodes serves the topology table too, for
		// the keys of the incoming pod's terms (existing pods' terms
		// usually share them; others are read from the nodes).
		var keys []string
		for _, ts := range [][]fwk.WeightedAffinityTerm{preferred, preferredAnti} {
			for i := range ts {
				keys = topology.AddKey(keys, ts[i].TopologyKey)
			}
		}
		view = pl.caches.topology.Sync(cs, nodes, keys, func(gens []int64, v *topology.View) {
			sum = sumOver(gens, v)
		})
	} else {
		// The nodes with pods with affinity are not synced with the
		// topology table; PreFilter's view of this cycle's nodes, if it
		// made one, holds them all the same (a node not in it is read
		// from the node).
		if s, err := preFilterStateOf(cs); err == nil {
			view = s.cache.topology
		}
		sum = sumOver(nil, view)
	}
	if sum == nil || sum.Empty() {
		return nil
	}
	if view == nil {
		if s, err := preFilterStateOf(cs); err == nil {
			// PreFilter's view of this cycle's nodes, if it made one.
			view = s.cache.topology
		}
	}
	w := &scoreWeights{keys: sum.Keys(), lookup: sum.Lookup(), topology: view}
	w.cols = make([]int, len(w.keys))
	for i, kc := range w.keys {
		w.cols[i] = view.Col(kc.Key)
	}
	return w
}

// scoreQueries are the incoming pod's preferred terms and labels, compiled
// for the summaries of this cycle's nodes, or nil when there are none.
// With preferred terms, nodes are all nodes, which the summaries are
// synced with; otherwise the summaries are PreFilter's, if it made any:
// the list of nodes with affinity pods alone would cost a pass over all
// nodes to sync.
func (pl *InterPodAffinity) scoreQueries(ctx context.Context, cs fwk.CycleState, nodes []fwk.NodeInfo, hasPreferred bool, pi fwk.PodInfo) *podsummary.ScoreQueries {
	var v *podsummary.View
	if s, err := preFilterStateOf(cs); err == nil {
		v = s.cache.summaries.Summaries()
	}
	if v == nil && hasPreferred {
		v = pl.caches.summaries.Sync(ctx, cs, pl.parallelizer, Name, nodes)
	}
	return podsummary.NewScoreQueries(v, pi)
}

// scored reports whether any topology key is scored.
func (w *scoreWeights) scored() bool { return len(w.keys) > 0 }

// scoreOf is the node's raw score: the sum over the scored topology keys
// it has of its domain's weight.
func (w *scoreWeights) scoreOf(nodeInfo fwk.NodeInfo) int64 {
	nt := topology.Located(w.topology, nodeInfo)
	var score int64
	for i, kc := range w.keys {
		if v, ok := nt.At(w.cols[i], kc.Key); ok {
			score += w.lookup.Get(topologyPair{Key: kc.Key, Value: v}).Weight
		}
	}
	return score
}

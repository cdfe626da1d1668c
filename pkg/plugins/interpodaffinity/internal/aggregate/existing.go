package aggregate

// This file holds what the plugin asks: the interface, the table that
// answers it and the pass-through that never does.

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodegen"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// Incoming is what the existing pods' terms are matched against.
type Incoming struct {
	Pod *v1.Pod
	// NamespaceLabels are the labels of Pod's namespace, for the terms'
	// namespace selectors; nil when the namespace is unknown.
	NamespaceLabels labels.Set
	// HostnameFastPath: hostname-scoped terms are not counted, only the
	// listed nodes holding one (counts.ExistingAntiSum.HostScopedNodes).
	HostnameFastPath bool
}

// Sums answers cluster-wide sums over the existing pods and their terms.
type Sums interface {
	// ExistingAnti is the plugin's existingAntiOn summed over allNodes,
	// every node of the cycle: per domain of each term's key, the
	// required anti-affinity terms of the nodes' pods that select in.Pod
	// (with the fast path, those not scoped to the hostname), and (fast
	// path) how many nodes hold a hostname-scoped one. That is the sum
	// over the snapshot's holders, nodes without such pods adding
	// nothing; all nodes are summed because their list keeps its order
	// from cycle to cycle, and the holders' does not. ok is false when
	// the caller must scan instead; the sum is then nil. The sum is the
	// caller's to read; it may borrow the table's counts (a map lent is
	// never changed again).
	ExistingAnti(cs fwk.CycleState, allNodes []fwk.NodeInfo, in Incoming) (sum *counts.ExistingAntiSum, ok bool)
	// Incoming is the plugin's matchesOn summed over allNodes, every
	// node of the cycle: the counts of the incoming pod's required
	// terms. Labels are read through view (nil: from the nodes), whose
	// strings the domains then hold. ok and the sum as for ExistingAnti.
	Incoming(cs fwk.CycleState, allNodes []fwk.NodeInfo, view *topology.View, terms IncomingTerms) (sum *counts.IncomingSum, ok bool)
	// Score is the plugin's tallyNode summed over nodes (all nodes when
	// q has preferred terms, otherwise at least those with pods with
	// affinity): PreScore's weights per domain. ok and the sum as for
	// ExistingAnti; labels read as for Incoming.
	Score(cs fwk.CycleState, nodes []fwk.NodeInfo, view *topology.View, q ScoreQuery) (sum *counts.ScoreSum, ok bool)
}

// PassThrough is the Sums that keeps nothing and never answers: every
// cycle scans, as upstream's plugin does.
type PassThrough struct{}

// ExistingAnti never answers.
func (PassThrough) ExistingAnti(fwk.CycleState, []fwk.NodeInfo, Incoming) (*counts.ExistingAntiSum, bool) {
	return nil, false
}

// Incoming never answers.
func (PassThrough) Incoming(fwk.CycleState, []fwk.NodeInfo, *topology.View, IncomingTerms) (*counts.IncomingSum, bool) {
	return nil, false
}

// Score never answers.
func (PassThrough) Score(fwk.CycleState, []fwk.NodeInfo, *topology.View, ScoreQuery) (*counts.ScoreSum, bool) {
	return nil, false
}

// Table is the Sums that keeps the distinct terms and the classes of
// pods across cycles.
type Table struct {
	// mu guards anti, score and pods: cycles are sequential, but tests
	// and the preemption's dry runs may call from several goroutines.
	mu sync.Mutex
	// anti: the required anti-affinity terms of every node's pods
	// (those scoped to the hostname too, which the fast path skips).
	anti records
	// score: the terms PreScore weighs, of every node's pods with
	// affinity.
	score records
	// pods: every node's pods by class.
	pods classRecords
	// minLend, if set, replaces minLentDomains (tests of lending).
	minLend int
	// reads: where the sweeps read the nodes' generations.
	reads nodegen.Shared
}

// NewTable returns a Table whose sweeps read the nodes' generations
// through gens, which the caches sweeping the same lists share.
func NewTable(gens *nodegen.Reader) *Table { return &Table{reads: nodegen.Share(gens)} }

// minLentDomains is the fewest domains a term's or class's counts must
// have for PreScore's sum to read them where they are (lent) rather than
// copy them: a copy of a few domains costs less than the lookup Score
// then makes in them for every node scored. (PreFilter's sums take the
// first counts added as they are, whatever their size: their lookups cost
// the same either way.)
const minLentDomains = 32

func (t *Table) lendAt() int {
	if t.minLend > 0 {
		return t.minLend
	}
	return minLentDomains
}

// pgCycle reports a pod-group cycle, in which the table is neither read
// nor changed: its members sit on the snapshot under their nodes' old
// generations, and the table is valid again once they are forgotten.
func pgCycle(cs fwk.CycleState) bool { return k8sline.PodGroupCycle(cs) }

// ExistingAnti sweeps all nodes' generations, then matches in.Pod
// against each distinct term that may select it (its label index) and
// adds up the domains of those that select it. It does not answer in a
// pod-group cycle, whose members sit on the snapshot under their nodes'
// old generations (the table is left as it is, and is valid again once
// the members are forgotten), nor for a list it cannot record by node
// name.
func (t *Table) ExistingAnti(cs fwk.CycleState, allNodes []fwk.NodeInfo, in Incoming) (*counts.ExistingAntiSum, bool) {
	if pgCycle(cs) {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var swept bool
	t.reads.With(cs, allNodes, func(gens []int64) { swept = t.anti.sweep(allNodes, gens, nil) })
	if !swept {
		return nil, false
	}
	sum := counts.NewExistingAntiSum()
	t.anti.terms.index.each(in.Pod.Labels, func(e *termEntry) {
		if e.domains.Len() == 0 || (in.HostnameFastPath && e.hostScoped) {
			return
		}
		if !e.term.Matches(in.Pod, in.NamespaceLabels) {
			return
		}
		sum.Counts.AddDomains(e.term.TopologyKey, &e.domains)
	})
	if in.HostnameFastPath {
		sum.HostScopedNodes = t.anti.hostNodes
	}
	sum.Seal()
	return sum, true
}

// Classes counts the classes of pods the table holds.
func (t *Table) Classes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pods.classes.list)
}

// DistinctTerms counts the distinct terms the table holds: what its
// memory grows with, besides the nodes' records and the domains.
func (t *Table) DistinctTerms() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.anti.terms.list) + len(t.score.terms.list)
}

package aggregate

// This file answers PreScore's weights per domain from the distinct
// scored terms of the existing pods and, for the incoming pod's preferred
// terms, from the classes of pods.

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// ScoreQuery is what PreScore weighs the existing pods against.
type ScoreQuery struct {
	Pod *v1.Pod
	// NamespaceLabels are the labels of Pod's namespace, for the
	// existing pods' terms' namespace selectors; nil when unknown.
	NamespaceLabels labels.Set
	// Preferred and PreferredAnti are Pod's preferred terms, namespace
	// selectors resolved (matched with no namespace labels). With any,
	// the nodes summed must be all nodes, every pod of which they weigh.
	Preferred, PreferredAnti []fwk.WeightedAffinityTerm
	// HardPodAffinityWeight weighs the existing pods' required affinity
	// terms that select Pod; 0 leaves them out.
	HardPodAffinityWeight int32
}

// Score is the plugin's tallyNode summed over nodes: per domain, the
// weights of every (incoming, existing) pair, and the domains some pair
// weighed at all (counted in DomainWeight.Entries by pair, not by node:
// they are present alike). It sweeps the scored terms' records over
// nodes and, when the incoming pod has preferred terms, the classes'
// over the same (then all) nodes. It does not answer in a pod-group
// cycle, nor for a list it cannot record by node name.
func (t *Table) Score(cs fwk.CycleState, nodes []fwk.NodeInfo, view *topology.View, q ScoreQuery) (*counts.ScoreSum, bool) {
	if pgCycle(cs) {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.score.scoring = true
	preferred := len(q.Preferred) > 0 || len(q.PreferredAnti) > 0
	var swept bool
	t.reads.With(cs, nodes, func(gens []int64) {
		swept = t.score.sweep(nodes, gens, view) && (!preferred || t.pods.sweep(nodes, gens, view))
	})
	if !swept {
		return nil, false
	}
	sum := counts.NewScoreSum()
	add := func(key string, perPair int64, domains *counts.Domains) {
		sum.AddDomains(view.Key(key), domains, perPair, domains.Len() >= t.lendAt())
	}
	t.score.terms.index.each(q.Pod.Labels, func(e *termEntry) {
		if e.domains.Len() == 0 {
			return
		}
		// Each pair weighs as the scan adds it: an int32 product,
		// then widened.
		var perPair int64
		switch e.kind {
		case requiredAffinity:
			if q.HardPodAffinityWeight <= 0 {
				return
			}
			perPair = int64(q.HardPodAffinityWeight)
		case preferredAffinity:
			perPair = int64(e.weight * 1)
		default:
			perPair = int64(e.weight * -1)
		}
		if e.term.Matches(q.Pod, q.NamespaceLabels) {
			add(e.term.TopologyKey, perPair, &e.domains)
		}
	})
	if preferred {
		r := &t.pods
		var keys []string
		for _, ts := range [][]fwk.WeightedAffinityTerm{q.Preferred, q.PreferredAnti} {
			for j := range ts {
				keys = topology.AddKey(keys, ts[j].TopologyKey)
			}
		}
		r.useKeys(keys, nodes, view)
		keyOf := func(ts []fwk.WeightedAffinityTerm) []int {
			idx := make([]int, len(ts))
			for j := range ts {
				idx[j] = r.classes.key(ts[j].TopologyKey)
			}
			return idx
		}
		prefKeys, antiKeys := keyOf(q.Preferred), keyOf(q.PreferredAnti)
		for j := range q.Preferred {
			r.classes.matching(q.Preferred[j].Selector).each(q.Preferred[j].Selector, func(c *podClass) {
				if q.Preferred[j].Matches(c.pod, nil) {
					add(q.Preferred[j].TopologyKey, int64(q.Preferred[j].Weight*1), c.domainsOf(prefKeys[j]))
				}
			})
		}
		for j := range q.PreferredAnti {
			r.classes.matching(q.PreferredAnti[j].Selector).each(q.PreferredAnti[j].Selector, func(c *podClass) {
				if q.PreferredAnti[j].Matches(c.pod, nil) {
					add(q.PreferredAnti[j].TopologyKey, int64(q.PreferredAnti[j].Weight*-1), c.domainsOf(antiKeys[j]))
				}
			})
		}
	}
	sum.Seal()
	return sum, true
}

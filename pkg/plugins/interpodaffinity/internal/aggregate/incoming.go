package aggregate

// This file answers the counts of the incoming pod's own required terms
// from the classes.

import (
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// IncomingTerms are the incoming pod's required terms as the plugin sorted
// them, namespace selectors resolved (they are matched with no namespace
// labels).
type IncomingTerms struct {
	// Affinity terms count a pod matching all of them once in its
	// node's domain of each; AntiAffinity terms each count the pods
	// matching it in its own domains.
	Affinity, AntiAffinity []fwk.AffinityTerm
	// HostAffinity (hostname fast path) counts, wherever they are, the
	// pods matching all of them.
	HostAffinity []fwk.AffinityTerm
}

// Incoming sweeps all nodes' generations, then matches each term against
// the classes of existing pods its selector may select (the label index)
// and adds up the domains of those that count. It does not answer in a pod-group cycle, nor for a list it cannot
// record by node name.
func (t *Table) Incoming(cs fwk.CycleState, allNodes []fwk.NodeInfo, view *topology.View, terms IncomingTerms) (*counts.IncomingSum, bool) {
	if pgCycle(cs) {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &t.pods
	var swept bool
	t.reads.With(cs, allNodes, func(gens []int64) { swept = r.sweep(allNodes, gens, view) })
	if !swept {
		return nil, false
	}
	// Each term's key, counted from now on if it was not.
	var keys []string
	for _, ts := range [][]fwk.AffinityTerm{terms.Affinity, terms.AntiAffinity} {
		for j := range ts {
			keys = topology.AddKey(keys, ts[j].TopologyKey)
		}
	}
	r.useKeys(keys, allNodes, view)
	keyOf := func(ts []fwk.AffinityTerm) []int {
		idx := make([]int, len(ts))
		for j := range ts {
			idx[j] = r.classes.key(ts[j].TopologyKey)
		}
		return idx
	}
	affinityKeys, antiKeys := keyOf(terms.Affinity), keyOf(terms.AntiAffinity)
	sum := counts.NewIncomingSum()
	addDomains := func(c *counts.TopologyCounts, key string, domains *counts.Domains) {
		c.AddDomains(view.Key(key), domains)
	}
	// Each term is matched against the classes its selector may select
	// (the label index); terms matched as a whole, against those the
	// first may select.
	if len(terms.Affinity) > 0 {
		r.classes.matchingTerms(terms.Affinity).each(terms.Affinity[0].Selector, func(c *podClass) {
			if podaffinity.MatchesAll(terms.Affinity, c.pod, nil) {
				for j := range terms.Affinity {
					addDomains(&sum.Affinity, terms.Affinity[j].TopologyKey, c.domainsOf(affinityKeys[j]))
				}
			}
		})
	}
	for j := range terms.AntiAffinity {
		r.classes.matching(terms.AntiAffinity[j].Selector).each(terms.AntiAffinity[j].Selector, func(c *podClass) {
			if terms.AntiAffinity[j].Matches(c.pod, nil) {
				addDomains(&sum.AntiAffinity, terms.AntiAffinity[j].TopologyKey, c.domainsOf(antiKeys[j]))
			}
		})
	}
	if len(terms.HostAffinity) > 0 {
		r.classes.matchingTerms(terms.HostAffinity).each(terms.HostAffinity[0].Selector, func(c *podClass) {
			if podaffinity.MatchesAll(terms.HostAffinity, c.pod, nil) {
				sum.HostAffinity += c.pods
			}
		})
	}
	sum.Seal()
	return sum, true
}

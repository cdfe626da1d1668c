package interpodaffinity

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// explainStateKey holds what ExplainFilter learns once per cycle about the
// whole cluster. Only ExplainFilter writes it: the scheduler never does.
const explainStateKey fwk.StateKey = "PlacementExplainInterPodAffinity"

// maxExamples caps the existing pods named per cause.
const maxExamples = 3

// explainState indexes, for the incoming pod's cycle, the existing pods that
// make terms fail, so that explaining thousands of nodes scans the cluster
// once rather than once per node.
type explainState struct {
	// antiAffinity[i] maps a value of terms.antiAffinity[i]'s topology key
	// to the existing pods in that domain the term selects.
	antiAffinity []map[string][]string
	// rejecting are existing pods whose required anti-affinity selects the
	// incoming pod.
	rejecting []rejectingPod
}

type rejectingPod struct {
	pod      string // namespace/name on node
	term     fwk.AffinityTerm
	keyValue string // the holder node's value for term.TopologyKey
	hasKey   bool
}

// Clone returns the receiver: the index is read-only once built.
func (s *explainState) Clone() fwk.StateData { return s }

// ExplainFilter names, for a node Filter rejects, the incoming pod's
// required term that is unsatisfied or violated (with existing pods that
// violate it), and the existing pods whose required anti-affinity rejects
// the incoming pod. All three checks are reported, not only the first.
func (pl *InterPodAffinity) ExplainFilter(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) []explanation.Cause {
	if nodeInfo.Node() == nil || pl.resizeDeferred(pod) {
		return nil
	}
	s, err := preFilterStateOf(cycleState)
	if err != nil {
		return nil
	}
	es := pl.explainIndex(cycleState, s)
	nl := nodeLabels(nodeInfo)
	// Explanations read the node's own labels, as they read its pods.
	nt := ownTopology(nodeInfo)
	var out []explanation.Cause
	if !s.satisfiesAffinity(nodeInfo, &nt) {
		out = append(out, affinityCauses(s, nl)...)
	}
	if s.violatesAntiAffinity(nodeInfo, &nt) {
		for i, t := range s.terms.antiAffinity {
			if v, ok := nl[t.TopologyKey]; ok && len(es.antiAffinity[i][v]) > 0 {
				out = append(out, explanation.Cause{Message: fmt.Sprintf("required anti-affinity %s is violated in %s=%s by %s",
					describeTerm(t), t.TopologyKey, v, someOf(es.antiAffinity[i][v]))})
			}
		}
		for _, t := range s.terms.hostAntiAffinity {
			var on []string
			for _, p := range nodeInfo.GetPods() {
				if t.Matches(p.GetPod(), nil) {
					on = append(on, describePod(p.GetPod()))
				}
			}
			if len(on) > 0 {
				out = append(out, explanation.Cause{Message: fmt.Sprintf("required anti-affinity %s is violated on this node by %s", describeTerm(t), someOf(on))})
			}
		}
	}
	var rejecting []string
	for _, r := range es.rejecting {
		if v, ok := nl[r.term.TopologyKey]; ok && r.hasKey && v == r.keyValue {
			rejecting = append(rejecting, fmt.Sprintf("%s (anti-affinity %s)", r.pod, describeTerm(r.term)))
		}
	}
	if len(rejecting) > 0 {
		out = append(out, explanation.Cause{Message: "existing pod's required anti-affinity rejects this pod: " + someOf(rejecting)})
	}
	return out
}

// affinityCauses explains an unsatisfied required affinity: per term, the
// node lacks the topology key, or its domain holds no pod matching all
// terms (and why the first-of-a-series exception does not apply).
func affinityCauses(s *preFilterState, nl map[string]string) []explanation.Cause {
	var out []explanation.Cause
	terms := s.terms.affinity
	if len(s.terms.hostAffinity) > 0 {
		terms = s.terms.hostAffinity
	}
	for _, t := range terms {
		v, ok := nl[t.TopologyKey]
		switch {
		case !ok:
			out = append(out, explanation.Cause{Message: fmt.Sprintf("required affinity %s: node has no label %s", describeTerm(t), t.TopologyKey)})
		case len(s.terms.hostAffinity) == 0 && s.affinity.Get(topologyPair{Key: t.TopologyKey, Value: v}) > 0:
			// This term's domain is satisfied; another one is not.
		default:
			msg := fmt.Sprintf("required affinity %s: no pod matching all required affinity terms in %s=%s", describeTerm(t), t.TopologyKey, v)
			if !s.selfMatch {
				msg += " (the pod does not match its own terms, so it cannot be the first of its group)"
			}
			out = append(out, explanation.Cause{Message: msg})
		}
	}
	return out
}

// explainIndex returns the cycle's index, building it on first use.
func (pl *InterPodAffinity) explainIndex(cycleState fwk.CycleState, s *preFilterState) *explainState {
	if c, err := cycleState.Read(explainStateKey); err == nil {
		if es, ok := c.(*explainState); ok {
			return es
		}
	}
	es := &explainState{antiAffinity: make([]map[string][]string, len(s.terms.antiAffinity))}
	for i := range es.antiAffinity {
		es.antiAffinity[i] = map[string][]string{}
	}
	incoming := s.podInfo.GetPod()
	nodes, _ := pl.sharedLister.NodeInfos().List()
	for _, ni := range nodes {
		nl := nodeLabels(ni)
		for _, p := range ni.GetPods() {
			existing := p.GetPod()
			for i, t := range s.terms.antiAffinity {
				if v, ok := nl[t.TopologyKey]; ok && t.Matches(existing, nil) {
					es.antiAffinity[i][v] = append(es.antiAffinity[i][v], describePod(existing))
				}
			}
		}
		for _, p := range ni.GetPodsWithRequiredAntiAffinity() {
			for _, t := range p.GetRequiredAntiAffinityTerms() {
				if t.Matches(incoming, s.nsLabels) {
					v, ok := nl[t.TopologyKey]
					es.rejecting = append(es.rejecting, rejectingPod{pod: describePod(p.GetPod()), term: t, keyValue: v, hasKey: ok})
				}
			}
		}
	}
	// The snapshot lists nodes in no fixed order; messages must be stable.
	for _, byDomain := range es.antiAffinity {
		for _, pods := range byDomain {
			sort.Strings(pods)
		}
	}
	sort.SliceStable(es.rejecting, func(i, j int) bool { return es.rejecting[i].pod < es.rejecting[j].pod })
	cycleState.Write(explainStateKey, es)
	return es
}

// describeTerm renders an affinity term: its topology key, selector and namespaces.
func describeTerm(t fwk.AffinityTerm) string {
	where := "namespaces [" + strings.Join(sets.List(t.Namespaces), " ") + "]"
	if t.NamespaceSelector != nil && !t.NamespaceSelector.Empty() {
		if _, some := t.NamespaceSelector.Requirements(); some {
			where += " + namespaceSelector " + t.NamespaceSelector.String()
		}
	} else if t.NamespaceSelector != nil {
		where = "all namespaces"
	}
	return fmt.Sprintf("(topologyKey %s, selector %s, %s)", t.TopologyKey, explanation.Selector(t.Selector), where)
}

// describePod names an existing pod and its node.
func describePod(p *v1.Pod) string {
	return fmt.Sprintf("pod %s/%s on node %s", p.Namespace, p.Name, p.Spec.NodeName)
}

// someOf joins at most maxExamples names and counts the rest.
func someOf(names []string) string {
	if len(names) <= maxExamples {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxExamples], ", "), len(names)-maxExamples)
}

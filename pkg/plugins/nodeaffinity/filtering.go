package nodeaffinity

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

// preFilterState is the pod's parsed nodeSelector AND required node affinity,
// computed once per cycle instead of once per node.
type preFilterState struct {
	required podSelector
}

// Clone returns the receiver: the state depends only on the pod, never on
// the pods added or removed during preemption, and is read-only.
func (s *preFilterState) Clone() fwk.StateData { return s }

// requiredTerms returns the pod's required node selector, or nil when it has
// none. Only a nil Required counts as "none": an empty term list is present
// and matches no node.
func requiredTerms(pod *v1.Pod) *v1.NodeSelector {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// PreFilter parses the pod's required constraints once for Filter, Skips
// pods that have none, and narrows the candidate nodes when every required
// term pins metadata.name.
func (pl *NodeAffinity) PreFilter(ctx context.Context, cycleState fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.resizeDeferred(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	required := requiredTerms(pod)
	// The nodeSelector test is "== nil", not "len == 0": upstream writes the
	// state for `nodeSelector: {}` and runs Filter (which then passes), and
	// Skip vs. not-Skip is observable (e.g. AddPod/RemovePod and metrics).
	if required == nil && pl.addedNodeSelector == nil && pod.Spec.NodeSelector == nil {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cycleState.Write(preFilterStateKey, &preFilterState{required: newPodSelector(pod)})

	if required == nil {
		return nil, nil
	}
	names, all := pinnedNodeNames(required.NodeSelectorTerms)
	if all {
		return nil, nil
	}
	if names.Len() == 0 {
		klog.FromContext(ctx).V(5).Info("Pod's required node affinity terms pin it to no node name", "pod", klog.KObj(pod))
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, errReasonConflict)
	}
	return &fwk.PreFilterResult{NodeNames: names}, nil
}

// pinnedNodeNames computes the node names the required terms can possibly
// match, from their `metadata.name In [...]` field requirements alone.
//
// Within a term such requirements are ANDed (intersection); terms are ORed
// (union). A term without one can match any node, and so can an empty term
// list (Filter will reject everything anyway), so all is true then. Other
// keys, other operators and parse validity are ignored on purpose: upstream
// narrows by the raw values, so `In [a, b]` narrows to {a, b} even though the
// term is a parse error (field In takes exactly one value) and Filter later
// rejects both.
func pinnedNodeNames(terms []v1.NodeSelectorTerm) (names sets.Set[string], all bool) {
	if len(terms) == 0 {
		return nil, true
	}
	union := sets.New[string]()
	for i := range terms {
		var inTerm sets.Set[string] // nil: no metadata.name In seen yet
		for _, req := range terms[i].MatchFields {
			if req.Key != metav1.ObjectNameField || req.Operator != v1.NodeSelectorOpIn {
				continue
			}
			vals := sets.New(req.Values...)
			if inTerm == nil {
				inTerm = vals
			} else {
				inTerm = inTerm.Intersection(vals)
			}
		}
		if inTerm == nil {
			return nil, true
		}
		union = union.Union(inTerm)
	}
	return union, false
}

// PreFilterExtensions returns nil: the state depends only on the pod.
func (pl *NodeAffinity) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter checks the scheduler-enforced added affinity first (so its own
// reason wins), then the pod's nodeSelector AND required node affinity.
func (pl *NodeAffinity) Filter(_ context.Context, cycleState fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if pl.resizeDeferred(pod) {
		return nil
	}
	node := nodeInfo.Node()
	if pl.addedNodeSelector != nil && !pl.addedNodeSelector.match(node) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, errReasonEnforced)
	}
	s, err := cyclestate.Read[*preFilterState](cycleState, preFilterStateKey)
	if err != nil {
		// PreFilter is disabled in this profile (or Skipped, in which case
		// Filter is not called by the framework): parse here instead.
		s = &preFilterState{required: newPodSelector(pod)}
	}
	// A term that fails to parse never matches, exactly like upstream,
	// which discards the parse error for backwards compatibility with pods
	// admitted before stricter validation.
	if !s.required.match(node) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, errReasonPod)
	}
	return nil
}

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The type of the -o json/yaml output.
const (
	APIVersion = "explain.placement-scheduler.io/v1alpha1"
	Kind       = "PlacementExplanation"
)

// PlacementExplanation is the whole explanation; its JSON form is the -o
// json output, versioned by its apiVersion (a schema, not a served API) so
// scripts can rely on it.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PlacementExplanation struct {
	metav1.TypeMeta `json:",inline"`

	Pod     string `json:"pod"`
	Profile string `json:"profile"`
	// Config names the KubeSchedulerConfiguration the profile came from:
	// "--config FILE", "ConfigMap NAMESPACE/NAME" or the shipped default.
	Config string `json:"config,omitempty"`
	// BoundTo is the node the pod is bound to, when it is: the verdict is
	// then recomputed against today's cluster, without the pod.
	BoundTo string `json:"boundTo,omitempty"`
	// Nodes and Feasible count all nodes and those passing every filter.
	Nodes    int `json:"nodes"`
	Feasible int `json:"feasible"`
	// Selected is the node the scheduler would pick; empty when the pod is
	// unschedulable. When several nodes share the top score the scheduler
	// picks one of them at random: Tied lists them all.
	Selected string   `json:"selected,omitempty"`
	Tied     []string `json:"tied,omitempty"`
	// SchedulerMessage is what kube-scheduler's FailedScheduling event would
	// say (it counts only the first failing filter per node), without the
	// preemption suffix; empty when the pod fits.
	SchedulerMessage string `json:"schedulerMessage,omitempty"`
	// Reasons counts nodes per failing plugin reason over ALL filters, so a
	// node rejected by two plugins counts under both.
	Reasons []ReasonCount `json:"reasons,omitempty"`
	// PreFilter is each PreFilter plugin's outcome, when not plain success.
	PreFilter []PluginVerdict `json:"preFilter,omitempty"`
	// NodeResults holds every node, by name.
	NodeResults []NodeResult `json:"nodeResults"`
	// Ranking is the feasible nodes by total score, best first.
	Ranking []NodeScore `json:"ranking,omitempty"`
	// PostFilter is the preemption dry run, for a pod no node fits.
	PostFilter *PostFilter `json:"postFilter,omitempty"`
	// Warnings say the explanation may not be about the scheduler that
	// runs (e.g. the installed config could not be read).
	Warnings []string `json:"warnings,omitempty"`
	// Notes say where the explanation may differ from what happens,
	// including what the caller could not read.
	Notes []string `json:"notes,omitempty"`
	// Hints are cheap what-ifs: one change to the pod and how many more
	// nodes it would make feasible.
	Hints []Hint `json:"hints,omitempty"`
}

// ReasonCount is a filter reason and how many nodes report it.
type ReasonCount struct {
	Reason string `json:"reason"`
	Plugin string `json:"plugin"`
	Nodes  int    `json:"nodes"`
}

// PluginVerdict is one plugin's status at one extension point (and node).
type PluginVerdict struct {
	Plugin string `json:"plugin"`
	// Code is the framework status code: Success, Skip, Unschedulable,
	// UnschedulableAndUnresolvable, Error...
	Code    string   `json:"code"`
	Reasons []string `json:"reasons,omitempty"`
	Causes  []Cause  `json:"causes,omitempty"`
	// Resources details a NodeResourcesFit rejection: per short resource,
	// the request, what the node has free and which pods hold it.
	Resources []ResourceFit `json:"resources,omitempty"`
}

// NodeResult is every filter's verdict on one node.
type NodeResult struct {
	Node     string `json:"node"`
	Feasible bool   `json:"feasible"`
	// ExcludedByPreFilter is set when PreFilter narrowed the candidates and
	// left this node out; the scheduler does not run Filter on it.
	ExcludedByPreFilter string `json:"excludedByPreFilter,omitempty"`
	// NominatedPods is set when every filter passes on its own but the
	// node fails once the pods nominated to it (by an earlier preemption)
	// are counted, as the scheduler does: the status it then gets.
	NominatedPods string          `json:"nominatedPods,omitempty"`
	Filters       []PluginVerdict `json:"filters"`
}

// NodeScore is a feasible node's scores.
type NodeScore struct {
	Node  string `json:"node"`
	Rank  int    `json:"rank"`
	Total int64  `json:"total"`
	// Plugins lists each score plugin in profile order.
	Plugins []PluginScore `json:"plugins"`
}

// PluginScore is one score plugin on one node. Weighted = Normalized*Weight.
type PluginScore struct {
	Plugin     string `json:"plugin"`
	Skipped    bool   `json:"skipped,omitempty"`
	Raw        int64  `json:"raw"`
	Normalized int64  `json:"normalized"`
	Weight     int32  `json:"weight"`
	Weighted   int64  `json:"weighted"`
}

// Hint is one change and how many infeasible nodes it would make feasible.
type Hint struct {
	Change string `json:"change"`
	Nodes  int    `json:"nodes"`
}

// PostFilter is what the profile's PostFilter plugins would do for an
// unschedulable pod: whether preemption would make room, where, and at
// whose expense, or why it would not. It is a dry run: nothing is evicted
// and no pod is nominated.
type PostFilter struct {
	// Plugin is the PostFilter plugin that was dry-run (DefaultPreemption);
	// empty when the profile has none, and then the scheduler does not
	// preempt.
	Plugin string `json:"plugin,omitempty"`
	// WouldPreempt is set when preemption finds a node: Node, with Victims
	// evicted, is where the scheduler would nominate the pod.
	WouldPreempt bool     `json:"wouldPreempt"`
	Node         string   `json:"node,omitempty"`
	Victims      []Victim `json:"victims,omitempty"`
	// PDBViolations counts victims whose eviction a PodDisruptionBudget
	// does not allow (preemption may still evict them, as a last resort).
	PDBViolations int `json:"pdbViolations,omitempty"`
	// Candidates is every node where preemption would work, the chosen one
	// included, with its victims.
	Candidates []PreemptionCandidate `json:"candidates,omitempty"`
	// NotHelpful lists the nodes where preemption would not help, and why.
	NotHelpful []NodeWhyNot `json:"notHelpful,omitempty"`
	// Reason says why preemption would not help at all, when it would not.
	Reason string `json:"reason,omitempty"`
	// Message is what the scheduler appends to its FailedScheduling event
	// ("preemption: ...", after the reasons of PostFilter plugins that run
	// before DefaultPreemption), when preemption would not help.
	Message string `json:"message,omitempty"`
	// Notes say where this dry run may differ from the scheduler's.
	Notes []string `json:"notes,omitempty"`
}

// Victim is a pod preemption would evict.
type Victim struct {
	Pod      string `json:"pod"`
	Node     string `json:"node"`
	Priority int32  `json:"priority"`
}

// PreemptionCandidate is a node where evicting Victims makes the pod fit.
type PreemptionCandidate struct {
	Node          string   `json:"node"`
	Victims       []Victim `json:"victims"`
	PDBViolations int      `json:"pdbViolations,omitempty"`
}

// NodeWhyNot is a node preemption cannot use, and the status that says why.
type NodeWhyNot struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// ResourceFit is one resource NodeResourcesFit found short on a node, in
// the plugin's own accounting: the pod's request as its PreFilter computes
// it, the node's allocatable and what the pods on it request
// (NodeInfo.Requested, the sum of each pod's PodInfo.CalculateResource).
// Quantities are Kubernetes quantities ("500m", "4Gi"); for "pods" they are
// counts.
type ResourceFit struct {
	Resource    string `json:"resource"`
	Requested   string `json:"requested"`
	Allocatable string `json:"allocatable"`
	Used        string `json:"used"`
	Free        string `json:"free"`
	// Short is how much more the node would need free: requested - free.
	Short string `json:"short"`
	// Unresolvable is set when the pod asks for more than the node's whole
	// allocatable: evicting every pod would not make room, so preemption
	// does not consider the node.
	Unresolvable bool `json:"unresolvable,omitempty"`
	// Holders are the pods on the node requesting the most of this
	// resource, largest first (at most five); MoreHolders counts the
	// other pods requesting some of it.
	Holders     []Holder `json:"holders,omitempty"`
	MoreHolders int      `json:"moreHolders,omitempty"`
}

// Holder is a pod on the node and what it requests of one resource.
type Holder struct {
	Pod      string `json:"pod"`
	Request  string `json:"request"`
	Priority int32  `json:"priority"`
}

// Cause is one reason a plugin gives for rejecting a node, as our filter
// plugins explain it (pkg/plugins/explanation.Cause).
type Cause struct {
	// Message names the term, taint or pod that decided and what the node
	// (or the existing pod) actually has, in one line.
	Message string `json:"message"`
	// Fix, when set, is one change to the incoming pod that removes this
	// cause. Empty when there is no single obvious change.
	Fix string `json:"fix,omitempty"`
}

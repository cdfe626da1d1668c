package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
)

// The type of the -o json/yaml output.
const (
	APIVersion = "simulate.placement-scheduler.io/v1alpha1"
	Kind       = "PlacementSimulation"
)

// How a capacity search ended (cluster-capacity's terms).
const (
	StoppedUnschedulable = "Unschedulable"
	StoppedLimit         = "LimitReached"
)

// A drain's outcome, worst first: kubectl drain refuses a node (it cordons
// it and evicts none of its pods), fails on a pod the Eviction API never
// evicts, waits on a PodDisruptionBudget for replacements that stay
// Pending (until --timeout), waits for replacements to become ready, or
// completes.
const (
	DrainRefused   = "refused"
	DrainFails     = "fails"
	DrainStuck     = "stuck"
	DrainWaits     = "waits"
	DrainCompletes = "completes"
)

// Kinds of pods a drain does not re-create elsewhere.
const (
	StayDaemonSet   = "daemonset"
	StayMirror      = "mirror"
	StayBare        = "bare"
	StayFinished    = "finished"
	StayTerminating = "terminating"
	StayPDBs        = "pdbs"
)

// Capacity answers "how many more replicas of this workload fit".
type Capacity struct {
	// Workload is Kind/name of the workload replicated.
	Workload string `json:"workload"`
	// Fits counts the replicas placed as the cluster is, nothing preempted:
	// cluster-capacity's number. They are placed one at a time, each
	// reserved before the next, until one fits no node.
	Fits int `json:"fits"`
	// Preempting counts the further replicas the scheduler places only by
	// preempting lower-priority pods: the replica that first fits nowhere
	// preempts, and later ones preempt too or take the room the victims
	// left. Fits+Preempting is what the scheduler reaches.
	Preempting int `json:"preempting"`
	// Limit is the bound on the replicas placed (0: none).
	Limit int `json:"limit"`
	// StoppedBy is Unschedulable (a replica fits nowhere and preemption
	// would not help: Reason says why) or LimitReached (more may fit).
	StoppedBy string `json:"stoppedBy"`
	// Reason is the FailedScheduling message of the first replica that
	// stays Pending; its explanation is the PlacementSimulation's first reason.
	Reason string `json:"reason,omitempty"`
	// ByNode and ByTopology distribute the placed replicas over nodes and
	// over the PlacementSimulation's TopologyKey values, most first.
	ByNode     []Share `json:"byNode"`
	ByTopology []Share `json:"byTopology"`
}

// Share is how many replicas land on one node or topology value.
type Share struct {
	Name       string `json:"name"`
	Fits       int    `json:"fits"`
	Preempting int    `json:"preempting,omitempty"`
}

// Comparison is a run under a second profile (of the same config or
// another) and the replicas that land differently there.
type Comparison struct {
	Profile string `json:"profile"`
	Config  string `json:"config,omitempty"`
	// Result is the whole run under that profile.
	Result *PlacementSimulation `json:"result"`
	// Moved lists the replicas whose node differs (a Pending one has
	// none), in placement order; empty when every replica lands alike.
	Moved []Move `json:"moved"`
}

// Move is one replica that lands differently under the second profile.
type Move struct {
	Pod      string `json:"pod"`
	Workload string `json:"workload"`
	// Node and Topology are where the first profile puts it ("" Pending);
	// OtherNode and OtherTopology where the second does.
	Node          string `json:"node,omitempty"`
	Topology      string `json:"topology,omitempty"`
	OtherNode     string `json:"otherNode,omitempty"`
	OtherTopology string `json:"otherTopology,omitempty"`
	// Why is the Pending side's FailedScheduling message, or, when both
	// place it, how each side ranked the two nodes just before placing it
	// (A the first profile, B the second): a filter rejects the other's
	// node, or the scores, with the plugin that differs most.
	Why string `json:"why"`
}

// DrainReport is what draining the nodes does besides placing the pods.
type DrainReport struct {
	// Nodes in the order kubectl drain drains them.
	Nodes []string `json:"nodes"`
	// Flags are the kubectl drain flags the drain is judged with.
	Flags []string `json:"flags"`
	// Status is one of the Drain* outcomes.
	Status string `json:"status"`
	// Refused is what kubectl drain with Flags refuses, as it says it.
	// The rest of the report, and the placement, are the drain with the
	// Allow flags added.
	Refused []Refusal `json:"refused,omitempty"`
	Allow   []string  `json:"allow,omitempty"`
	// Evicted counts the pods evicted for their controllers to re-create.
	Evicted int `json:"evicted"`
	// Staying are the other pods of the drained nodes: left, deleted for
	// good, already going, or never evicted; and why.
	Staying []StayingPod `json:"staying,omitempty"`
	// PDBs are the PodDisruptionBudgets that decide evictions.
	PDBs []PDBReport `json:"pdbs,omitempty"`
}

// Refusal is one error of kubectl drain's pod filters on one node.
type Refusal struct {
	Node string `json:"node"`
	// Message is kubectl's: "cannot delete Pods with local storage (use
	// --delete-emptydir-data to override): ns/a, ns/b".
	Message string   `json:"message"`
	Flag    string   `json:"flag"`
	Pods    []string `json:"pods"`
}

// StayingPod is a pod of a drained node that is not re-created elsewhere.
type StayingPod struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	// Kind is one of the Stay* kinds.
	Kind string `json:"kind"`
	Why  string `json:"why"`
}

// PDBReport is one PodDisruptionBudget as the drain meets it.
type PDBReport struct {
	PDB string `json:"pdb"`
	// Allowed is status.disruptionsAllowed now: how many evictions it
	// lets through before replacements become ready.
	Allowed int32 `json:"allowed"`
	// Evicting are the drained pods whose eviction it decides, in
	// eviction order.
	Evicting []string `json:"evicting"`
	// Blocks are those beyond Allowed: the Eviction API answers 429 until
	// replacements become ready, and kubectl drain retries.
	Blocks []string `json:"blocks,omitempty"`
	// Forever are those of Blocks it never lets go: too few of the
	// replacements that would free the budget get a node.
	Forever []string `json:"forever,omitempty"`
}

// PlacementSimulation is a whole simulation; its JSON form is the -o json
// output.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type PlacementSimulation struct {
	metav1.TypeMeta `json:",inline"`

	Profile string `json:"profile"`
	Config  string `json:"config,omitempty"`
	// Nodes counts the nodes placed on, after the what-if edits.
	Nodes int `json:"nodes"`
	// Edits says what each what-if edit did to the snapshot.
	Edits []string `json:"edits,omitempty"`
	// Placed, Pending and Preempting count the replicas: placed on a node
	// as things are, staying Pending, and placed only by preempting
	// lower-priority pods.
	Placed     int `json:"placed"`
	Pending    int `json:"pending"`
	Preempting int `json:"preempting"`
	// TopologyKey is the node label the replicas' TOPOLOGY column shows.
	TopologyKey string `json:"topologyKey"`
	// Ties counts the replicas for which several nodes shared the top
	// score: the scheduler picks one of them at random, simulate the first
	// by name, so their node is one possible outcome.
	Ties     int             `json:"ties"`
	Replicas []ReplicaResult `json:"replicas"`
	Reasons  []PendingReason `json:"reasons,omitempty"`
	Drain    *DrainReport    `json:"drain,omitempty"`
	// Capacity is the answer of a --max-replicas run.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Comparison is the same run under a second profile, and what differs.
	Comparison *Comparison `json:"comparison,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	Notes      []string    `json:"notes,omitempty"`
}

// ReplicaResult is where one replica goes.
type ReplicaResult struct {
	Pod      string `json:"pod"`
	Workload string `json:"workload"`
	// From is the node a drained pod ran on.
	From string `json:"from,omitempty"`
	// Node is where it lands (or is nominated, when it preempts); empty
	// when it stays Pending.
	Node string `json:"node,omitempty"`
	// Topology is Node's value of the TopologyKey label.
	Topology string `json:"topology,omitempty"`
	// Tied is how many nodes shared the top score, when more than one.
	Tied int `json:"tied,omitempty"`
	// Preempts lists the pods preemption would evict to make room.
	Preempts []string `json:"preempts,omitempty"`
	// Reason is why it stays Pending: kube-scheduler's FailedScheduling
	// message, with its preemption part.
	Reason string `json:"reason,omitempty"`
}

// PendingReason is one distinct reason replicas stay Pending, with the
// explanation of the first replica it held for.
type PendingReason struct {
	Reason      string                                `json:"reason"`
	Replicas    int                                   `json:"replicas"`
	Explanation *explainv1alpha1.PlacementExplanation `json:"explanation"`
}

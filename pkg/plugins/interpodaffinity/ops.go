package interpodaffinity

// This file ties the count types (counts.go) to the caches: the set of
// caches a plugin keeps (caches, the switch that turns them off) and the
// named operation builders that tell the node index (index.go) how one
// kind of contribution adds up. What a node contributes is decided in
// filtering.go and scoring.go and passed in as compute.

import (
	"context"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// caches are the plugin's cross-cycle caches (doc.go): the node indexes
// behind PreFilter's and PreScore's cluster-wide sums, and the topology
// table Filter and Score read labels from.
type caches struct {
	existingAnti nodeIndex[existingAnti, *existingAntiSum]
	incoming     nodeIndex[incomingMatches, *incomingSum]
	score        nodeIndex[nodeTally, *scoreSum]
	// keys holds, per node list, what existing pods' terms read of an
	// incoming pod (selectorKeys): the part of the signatures of
	// existingAnti and score that the existing pods decide.
	keys nodeIndex[nodeTermInputs, *termInputs]
	// topology holds the topology labels Filter and Score read (topology.go).
	topology topologyTable
	// summaries hold what each node's pods could match, so that the
	// scans skip nodes that cannot contribute (podsummary.go).
	summaries summaryTable
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
// turn them off or gate
// GenericWorkload is on: its pod-group cycles assume and forget pods in
// the snapshot while restoring the node's previous generation, so a
// generation no longer identifies what is on a node.
func newCaches(op string, fts feature.Features, opts options) *caches {
	on := !k8sline.GenericWorkload(fts) && !opts.noCaches
	x := &caches{}
	x.existingAnti.op, x.incoming.op, x.score.op, x.keys.op = op, op, op, op
	x.existingAnti.enabled = on
	x.incoming.enabled = on
	x.score.enabled = on
	x.keys.enabled = on
	x.topology.enabled = on
	x.summaries.enabled = on
	return x
}

// at sets ops' compute to computeAt, told ni's position i in the list
// summed (-1: unknown): the plain scan and recompute know it, and per-node
// data kept by position (podsummary.go) is then found without hashing.
func (ops sumOps[V, A]) at(computeAt func(i int, ni fwk.NodeInfo, reuse V) V) sumOps[V, A] {
	ops.computeAt = computeAt
	ops.compute = func(ni fwk.NodeInfo, reuse V) V { return computeAt(-1, ni, reuse) }
	return ops
}

// The builders below take compute told the node's position (sumOps.at).

// existingAntiOps sums holder nodes' existingAnti contributions.
func existingAntiOps(computeAt func(int, fwk.NodeInfo, existingAnti) existingAnti) sumOps[existingAnti, *existingAntiSum] {
	return sumOps[existingAnti, *existingAntiSum]{
		newSum: newExistingAntiSum,
		apply:  (*existingAntiSum).apply,
		merge:  (*existingAntiSum).merge,
		clone:  (*existingAntiSum).clone,
		seal:   (*existingAntiSum).seal,
		empty:  existingAnti.empty,
	}.at(computeAt)
}

// incomingOps sums every node's matches of the incoming pod's required terms.
func incomingOps(computeAt func(int, fwk.NodeInfo, incomingMatches) incomingMatches) sumOps[incomingMatches, *incomingSum] {
	return sumOps[incomingMatches, *incomingSum]{
		newSum: newIncomingSum,
		apply:  (*incomingSum).apply,
		merge:  (*incomingSum).merge,
		clone:  (*incomingSum).clone,
		seal:   (*incomingSum).seal,
		empty:  incomingMatches.empty,
	}.at(computeAt)
}

// scoreOps sums nodes' weight tallies.
func scoreOps(computeAt func(int, fwk.NodeInfo, nodeTally) nodeTally) sumOps[nodeTally, *scoreSum] {
	return sumOps[nodeTally, *scoreSum]{
		newSum: newScoreSum,
		apply:  (*scoreSum).apply,
		merge:  (*scoreSum).merge,
		clone:  (*scoreSum).clone,
		seal:   (*scoreSum).seal,
		empty:  nodeTally.empty,
	}.at(computeAt)
}

// keyedSum is a sum of x's kind over nodes whose signature depends on
// what the existing pods' terms of the listed nodes read of the incoming
// pod (termInputs, kept in keys under list); sigOf encodes it with the
// rest. When keys does not answer for the list (its first call, or the
// caches are off) the signature cannot be known without a scan of its
// own, so the sum is scanned without consulting x: a plugin that has just
// started pays the one scan upstream pays. empty, if set, may tell from
// the inputs that the sum has nothing in it; keyedSum then returns the
// zero A (nil).
func keyedSum[V, A any](ctx context.Context, cs fwk.CycleState, par fwk.Parallelizer, nodes []fwk.NodeInfo, gens []int64,
	keys *nodeIndex[nodeTermInputs, *termInputs], list string, x *nodeIndex[V, A],
	sigOf func(*termInputs) string, empty func(*termInputs) bool, ops sumOps[V, A]) A {
	inputs, ok := keys.lookup(ctx, cs, par, list, nodes, gens, selectorKeys)
	if !ok {
		return computeSum(ctx, par, x.op, nodes, ops)
	}
	if empty != nil && empty(inputs) {
		var none A
		return none
	}
	return x.sum(ctx, cs, par, sigOf(inputs), nodes, gens, ops)
}

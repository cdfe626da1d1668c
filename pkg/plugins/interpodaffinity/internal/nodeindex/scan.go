// Package nodeindex is the scan behind the PlacementInterPodAffinity
// plugin's cluster-wide sums when its caches do not answer (topology
// counts in PreFilter, weights in PreScore): every listed node's
// contribution computed in parallel and added up, the same work as
// upstream's plugin. Ops says what a node contributes and how
// contributions add up, so that one scan serves every sum type of package
// counts and the plugin only decides what a node contributes.
//
// The list is split into parts, each summed on its own by one worker, and
// the parts' sums are then merged (Scan): a part's sum holds each domain
// once instead of a contribution per node, so the serial merge is short;
// and a part builds each node's contribution in the storage of the one
// before, so that the scan allocates per part, not per node.
//
// Invariants: Apply and Merge give the same sum whatever the order of the
// nodes and the split (the count types add integers in maps), so the
// result is the sequential sum's; nothing is kept between calls.
package nodeindex

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
)

// Ops says how per-node values of type V add up into a sum of type A (a
// pointer type, mutated in place by Apply). The plugin builds them with
// counts.OpsOf.
type Ops[V, A any] struct {
	// Compute is one node's contribution; it must depend only on the
	// node (its labels and pods) and on the cycle, since nodes are
	// computed concurrently and in no set order. reuse is the zero V or
	// the contribution of the node before, which Apply has already added:
	// Compute may build its result in reuse's storage, so that the scan
	// allocates nothing per node.
	Compute func(ni fwk.NodeInfo, reuse V) V
	// ComputeAt, if set, is Compute told ni's position i in the list
	// summed, which the scan knows: per-node data kept by position
	// (package podsummary) is then found without hashing.
	ComputeAt func(i int, ni fwk.NodeInfo, reuse V) V
	NewSum    func() A
	// Apply adds v, sign times, to the sum; the scan only adds (sign 1).
	Apply func(sum A, v V, sign int64)
	// Merge adds src, a part's sum built by Apply alone, into dst.
	Merge func(dst, src A)
	// Seal, if set, readies a sum to be handed out (counts' layered maps).
	Seal func(A)
}

// At sets ops' ComputeAt to computeAt, and Compute to computeAt told
// position -1 (unknown), for a caller that does not know where ni is in
// the list.
func (ops Ops[V, A]) At(computeAt func(i int, ni fwk.NodeInfo, reuse V) V) Ops[V, A] {
	ops.ComputeAt = computeAt
	ops.Compute = func(ni fwk.NodeInfo, reuse V) V { return computeAt(-1, ni, reuse) }
	return ops
}

// scanParts is how many parts Scan splits a node list into. Each part is
// summed on its own by one worker, so a worker's result is a sum holding
// each domain once (a handful for zone-scoped terms) instead of a
// contribution per node, and the serial merge of the parts is short. More
// parts than workers keep the workers busy to the end.
const scanParts = 32

// Scan returns the sum of ops' contributions over nodes: every node's
// contribution computed in parallel and added up. Each part of the list
// (scanParts) adds its nodes into a sum of its own, building every node's
// contribution in the storage of the one before (Ops.Compute's reuse),
// and the parts' sums are then merged. op names the work in the
// parallelizer's metrics.
func Scan[V, A any](ctx context.Context, par fwk.Parallelizer, op string, nodes []fwk.NodeInfo, ops Ops[V, A]) A {
	parts := min(len(nodes), scanParts)
	sums := make([]A, parts)
	done := make([]bool, parts)
	par.Until(ctx, parts, func(p int) {
		sum := ops.NewSum()
		var v V
		for i := p * len(nodes) / parts; i < (p+1)*len(nodes)/parts; i++ {
			if ops.ComputeAt != nil {
				v = ops.ComputeAt(i, nodes[i], v)
			} else {
				v = ops.Compute(nodes[i], v)
			}
			ops.Apply(sum, v, 1)
		}
		sums[p], done[p] = sum, true
	}, op)
	sum := ops.NewSum()
	if parts > 0 && done[0] {
		sum = sums[0]
	}
	for p := 1; p < parts; p++ {
		// A part not done belongs to an abandoned cycle, whose
		// result nobody reads.
		if done[p] {
			ops.Merge(sum, sums[p])
		}
	}
	if ops.Seal != nil {
		ops.Seal(sum)
	}
	return sum
}

// Package interpodaffinity implements PlacementInterPodAffinity, our
// re-implementation of kube-scheduler's in-tree InterPodAffinity plugin
// (k8s.io/kubernetes v1.37.2). Filter enforces the incoming pod's required pod
// affinity and anti-affinity and, symmetrically, the required anti-affinity of
// pods already placed; Score weighs preferred terms of both sides plus existing
// pods' required affinity. Statuses, Skip decisions, raw and normalized scores,
// queueing hints and signatures must match upstream exactly; the contract is
// docs/behavior.md §7.
//
// # Files
//
// The decisions, which read like upstream's: plugin.go (the plugin, term
// matching helpers), args.go, filtering.go (PreFilter, what a node
// contributes to the counts, Filter), scoring.go (PreScore, what a node
// contributes to the weights, Score, NormalizeScore), events.go (queueing
// hints), signing.go (SignPod), explain.go. caches.go is the one file that
// talks to the speed machinery, which lives in packages under internal/
// and knows none of the decisions.
//
// # Caches
//
// Each cache answers exactly what a scan of the snapshot would; each is an
// interface with a caching implementation and a pass-through one that
// keeps nothing (what upstream does). Memory bounds and the benchmarks
// that measure them are in each package's documentation and in
// docs/performance.md. All packages are under internal/; the sums'
// storage (layered maps, lookups) is in internal/counts.
//
//	cache        package    keeps                key        invariant             switched off
//	terms        aggregate  existing pods'       term,      a record holds while  aggregate.PassThrough:
//	             (Table)    required anti-       node name, its node's generation every cycle scans
//	                        affinity terms by    generation does; a term goes with (nodeindex.Scan)
//	                        distinct term, with             its last record
//	                        counts per domain
//	incoming     nodeindex  each node's part     signature, a part holds while    nodeindex.PassThrough:
//	score        (Index)    of a sum, and        node name, its node's generation every cycle scans
//	                        the sum              generation does; a sum handed    (nodeindex.Scan)
//	                                                        out never changes
//	keys         nodeindex, per node list, what  the list   as above              nodeindex.PassThrough
//	             signature  existing pods' terms
//	                        read (TermInputs)
//	topology     topology   the listed nodes'    NodeInfo,  a View handed out     topology.PassThrough:
//	             (Table)    topology labels      generation never changes         labels from the nodes
//	                        (View)
//	summaries    podsummary Bloom filters of     NodeInfo,  a node skipped        podsummary.PassThrough:
//	             (Table)    what a node's pods   generation contributes nothing   no node is skipped
//	                        could match (View)
//
// A generation names one node's pods and labels: generations come from one
// process-wide counter and change on every change the snapshot sees; 0
// (hand-built NodeInfos) proves nothing. A contribution depends only on
// the node and on what its signature encodes. AddPod and RemovePod copy
// the counts they were handed before their first write.
//
// Switching them off: options.noCaches (every cache its pass-through; the
// tests' scanning plugin, NewScanning, which TestCachedMatchesScanned
// compares with the cached one) and gate GenericWorkload (newCaches); a
// pod-group cycle (CycleState.IsPodGroupSchedulingCycle) neither reads nor
// changes them, since it assumes members on the snapshot keeping the
// node's generation.
package interpodaffinity

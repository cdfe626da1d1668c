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
//	sums         aggregate  existing pods'       term or    a record holds while  aggregate.PassThrough:
//	             (Table)    terms by distinct    class,     its node's generation every cycle scans
//	                        term, pods by class  node name, does; a term or class (nodeindex.Scan)
//	                        (namespace, labels), generation goes with its last
//	                        with counts per                 record
//	                        domain
//	topology     topology   the listed nodes'    NodeInfo,  a View handed out     topology.PassThrough:
//	             (Table)    topology labels      generation never changes         labels from the nodes
//	                        (View)
//	summaries    podsummary Bloom filters of     NodeInfo,  a node skipped        podsummary.PassThrough:
//	             (Table)    what a node's pods   generation contributes nothing   no node is skipped
//	                        could match (View)
//
// A generation names one node's pods and labels: generations come from one
// process-wide counter and change on every change the snapshot sees; 0
// (hand-built NodeInfos) proves nothing. The snapshot does not change within
// a cycle, so the caches that sweep all nodes share one read of their
// generations per cycle (internal/nodegen, into a buffer the plugin keeps).
// A node's record depends only on the node (its pods and labels); the
// incoming pod is matched against the distinct terms and classes in each
// cycle. AddPod and RemovePod copy the counts they were handed before their
// first write.
//
// Switching them off: options.noCaches (every cache its pass-through; the
// tests' scanning plugin, NewScanning, which TestCachedMatchesScanned
// compares with the cached one) and gate GenericWorkload (newCaches); a
// pod-group cycle (CycleState.IsPodGroupSchedulingCycle) neither reads nor
// changes them, since it assumes members on the snapshot keeping the
// node's generation.
package interpodaffinity

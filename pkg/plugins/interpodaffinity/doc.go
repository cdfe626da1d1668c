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
// matching helpers), signing.go (SignPod), filtering.go (PreFilter, what
// a node contributes to the counts, Filter), scoring.go (PreScore, what a
// node contributes to the weights, Score, NormalizeScore), events.go
// (queueing hints), explain.go. The speed machinery, which the decisions
// call and which refers to none of them: counts.go (the count types and how contributions
// add up), ops.go (the caches a plugin keeps, the switch that turns them
// off, named operation builders), index.go, signature.go, layered.go,
// lookup.go (how Filter and Score read a sum handed out), topology.go,
// podsummary.go.
//
// # Caches
//
// The plugin keeps four kinds of state across scheduling cycles, all in
// caches (ops.go). Each answers exactly what a scan of the snapshot would;
// options.noCaches turns them all off (every cycle then scans, as upstream's
// plugin does), and a test compares the two on the equivalence suite's
// cross-cycle histories.
//
//   - The node indexes (index.go): per signature, each node's contribution
//     to a cluster-wide sum and the sum. existingAnti: existing pods'
//     required anti-affinity matching the incoming pod (PreFilter);
//     incoming: pods matching the incoming pod's required terms
//     (PreFilter); score: preferred-term weights (PreScore); keys: what the
//     existing pods' terms read of an incoming pod, per node list, which
//     keys the existingAnti and score signatures. A signature gets an entry
//     only when it recurs among the last slotsPerNode signatures that had
//     none; otherwise the cycle scans, as upstream does. Memory: at most
//     slotsPerNode × N node slots per index (N the listed nodes) and
//     maxEntries entries, least recently used dropped first. A slot costs
//     56 bytes (the slot, its place in the entry's order, generations and
//     node numbers) plus, only when its node adds something, the node's
//     contribution and its share of the sum: about 260 bytes in all when
//     every node adds a domain of its own (hostname-scoped terms), so one
//     index holds at most about 16 × 5000 × 260 B = 21 MB at 5000 nodes,
//     whatever the number of signatures, and about 90 bytes a slot when
//     one node in eight adds something (interleaved Deployments). Per
//     index, not per entry: the node names' numbers (at most the longest
//     list plus numsSlack) and one call's scratch. BenchmarkIndexBound,
//     16 entries, 80,000 slots after 1000 signatures at 5000 nodes:
//     20.8 MB (adds=all), 7.0 MB (adds=1of8); go test
//     ./pkg/plugins/interpodaffinity -run '^$' -bench IndexBound
//     -benchtime 1x.
//   - The layered maps (layered.go) behind the indexes' sums: a sum handed
//     to a cycle is forked, not copied, for the next.
//   - The topology table (topology.go): the topology labels of the cycle's
//     nodes in arrays, for Filter and Score; built from the second call on.
//   - The pod summaries (podsummary.go): per node of the cycle's list, Bloom
//     filters of its pods' label pairs and keys and of one positive
//     requirement of each of its pods' terms, so that the compute
//     functions (existingAntiOn, matchesOn, tallyNode) return a node's
//     empty contribution without reading its pods when no term can match.
//     Invariant: a node skipped contributes exactly what the full
//     computation would (nothing; the hostScoped note is kept from the
//     summary), since a term matches a pod only if the pod satisfies each
//     of the selector's positive requirements, and a filter never denies
//     an item it holds; a term without one (an empty selector, NotIn or
//     DoesNotExist only) never lets a node be skipped. A summary is used
//     only for a NodeInfo with the generation it was made at (0: never);
//     one found out of date is made again at the next cycle. Built in
//     the second cycle that asks (one parallel pass over pod labels and
//     terms, about the cost of one scan: go test
//     ./pkg/plugins/interpodaffinity -run '^$' -bench
//     InterleavedDeployments), never in the first, PreScore included, so
//     that a plugin asked once pays no more than the scan. A filter
//     says "maybe" of an absent item about 1 time in 40 to 150 (a node
//     not skipped that could have been; the bound is in podsummary.go).
//     Memory per listed node: a 40-byte row, at most 3 filters of at
//     most 32 words (768 bytes; a few words for most nodes), an entry
//     in the view's row map, 16 bytes for the view's copy of the list
//     and a stale bit; besides, up to live+1024 words of filters no row
//     uses until a compaction drops them (at most 2×live+1024 words in
//     all), and the pages and words of views a cycle still holds.
//
// They rely on these invariants:
//
//   - A generation names one node: generations come from one process-wide
//     counter and change on every pod or label change the snapshot sees,
//     so a slot (or a table row) recorded at a node's generation is valid
//     while the node's NodeInfo still has it. 0 (hand-built NodeInfos)
//     proves nothing and is always recomputed.
//   - A sum never changes once handed out: a cycle keeps reading the sum
//     (and the topology view, and the summaries) it was given while
//     later cycles patch a copy (lent, layered.fork); AddPod/RemovePod
//     fork before their first write.
//   - A contribution depends only on the node (its labels and pods) and on
//     what the signature encodes: every input of a compute function beyond
//     the node is in the signature (signature.go).
//   - Pod-group cycles bypass the caches: they assume members on the
//     snapshot keeping the node's generation, so within one a generation
//     does not name a node's pods; such cycles scan and leave the caches
//     as they were. With gate GenericWorkload on the caches are off.
package interpodaffinity

// Package aggregate keeps, across scheduling cycles, the existing pods'
// terms of the PlacementInterPodAffinity plugin grouped by distinct term,
// each with its counts per topology domain, so that a cluster-wide sum
// over those terms costs the number of distinct terms (and the domains of
// the ones that match), not a pass over every pod of every node.
//
// A cache of sums keyed by the incoming pod would answer only a pod like
// one seen recently, and an answer would still walk the listed nodes; with
// many Deployments interleaved, nearly every cycle would scan. Here
// nothing depends on the incoming pod until the query: the table is kept
// current by a generation sweep, the one step that walks the nodes
// (comparing two integers per node), and the incoming pod is matched
// against each distinct term once.
//
// Pods are kept the same way by class, their namespace and labels (all
// the incoming pod's own terms read of a pod), each with its pods counted
// per domain of the topology keys the terms asked for (a key is counted
// from the first cycle that asks for it on, while it keeps being asked
// for).
//
// Sums is what the plugin asks; Table keeps the terms and classes,
// PassThrough keeps nothing and never answers (the caller then scans, as
// upstream does).
//
// What is answered, in the plugin's own count types: ExistingAnti, the
// existing pods' required anti-affinity counts that PreFilter gathers (the
// plugin's existingAntiOn summed over the holders, which is its sum over
// all nodes: the table sweeps all nodes, whose list keeps its order
// between cycles, while the holders' list is made anew whenever a node
// gains its first holder); Incoming, the counts of the incoming pod's own
// required terms (matchesOn summed over all nodes); Score, PreScore's
// weights per domain (tallyNode summed), from the existing pods' scored
// terms (required affinity, weighed by hardPodAffinityWeight, and
// preferred terms, each kind and weight a distinct term of its own) and,
// for the incoming pod's preferred terms, from the classes.
//
// What a cycle costs: one pass over all nodes comparing two integers each
// (the sweep; each table sweeps the list it is given, which the plugin
// makes all nodes, whose order holds between cycles; the nodes'
// generations are read from them once a cycle, package nodegen, and each
// sweep compares them by position with its own array); the records of the
// nodes that changed since (usually the one the last pod was bound to): a
// pass over the node's pods comparing pointers, a pod already recorded
// keeping its class and its terms' entries, and the encoding of the pods
// new to it; one Matches per distinct term that may select the incoming
// pod, and per incoming term and class it may select; and the domains of
// what matched, which the sums borrow (counts.Domains): the largest term's
// or class's counts of a PreFilter sum, and up to four large ones of a
// PreScore sum, cost the domains changed since their last fold (about the
// square root of theirs), not all of them; what else matched is added
// domain by domain.
// What may select what comes from label indexes (index.go): a term is
// filed under the values of one requirement its selector has a label meet
// by value (=, ==, in), a class under each of its labels, so that with a
// workload's terms and labels of its own the terms and classes matched are
// the incoming pod's workload's, not the cluster's; a selector without
// such a requirement (empty, or only !=, notin, exists, !) is matched
// against all. Classes are at most as many as pods, so matching them never
// costs more than the scan's matching of every pod; and since pods with a
// label of their own (a StatefulSet's) make a class each, a selector is
// matched against the projection of the classes onto the label keys it
// reads (projection.go): pods alike in their namespace and those labels
// added up into one projected class, made when a key set is asked for a
// second time and only if it at least halves the classes (a key set asked
// for once, or declined, is matched against the classes themselves, at no
// more than that cost).
//
// Invariants: a node's record was computed from the NodeInfo's pods and
// labels at the generation it holds (generations come from one
// process-wide counter; 0 proves nothing, so such a node is recomputed
// every cycle), and a listed node without a record held nothing at the
// generation remembered for its position; the table's counts are the sum
// of the records of the nodes listed in the last call; a distinct term
// stays in the table while some record refers to it; a pod-group cycle
// neither reads nor changes the table (its members are assumed on the
// snapshot and the nodes keep their generations); a sum handed out never
// changes: what it borrows of the table is a fork, whose maps the table
// no longer writes.
//
// Memory: per listed node and sweep, its generation; per listed node holding terms,
// a record with one part per distinct term on it (a pointer, the node's
// domain of the term's key and a count) and per pod counted a pointer to
// it and one per term (its entry); per distinct term, the parsed term and
// one count per domain it is counted in. Per node with pods, a record with
// one part per class on it, its labels of the counted keys and per pod two
// pointers (the pod and its class);
// per class, its namespace and labels and one count per domain of each
// counted key. The keys counted are at most maxCountedKeys beyond one
// query's own (the least recently asked for makes room: a key asked for
// again is counted anew, a pass over the records). Per projection kept (at
// most maxProjections, the least recently asked for makes room), a
// projected class per distinct namespace and labels of its keys with the
// same counts, and a pointer per class. It grows with pods and domains,
// never with the incoming pods seen. Classes are as many as distinct label
// sets: pods with a label of their own (a StatefulSet's pod name) make a
// class each.
package aggregate

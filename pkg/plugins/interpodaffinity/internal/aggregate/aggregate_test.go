package aggregate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// world is a random cluster the test changes between cycles: NodeInfos
// changed in place (AddPod, RemovePod, SetNode take new generations, as
// in the snapshot), removed, and added under names used before.
type world struct {
	g     at.Gen
	nodes map[string]*framework.NodeInfo
	// made numbers the nodes and pods ever made, for fresh names.
	made int
}

// The namespaces pods and terms are drawn from, and the zones.
func namespacesOf() []string { return []string{"ns1", "ns2", "ns3"} }

func zonesOf() []string { return []string{"z1", "z2", "z3"} }

// nsLabels draws a namespace's labels: nil (unknown namespace) or a few
// of the generator's keys, so that namespace selectors often match.
func (w *world) nsLabels() labels.Set {
	if w.g.P(15) {
		return nil
	}
	l := labels.Set{}
	for _, k := range []string{"app", "tier", "env"} {
		if w.g.P(50) {
			l[k] = w.g.Pick([]string{"a", "b", "c"})
		}
	}
	return l
}

// term is a random required term: any of the keys (a node may lack
// them), namespaces listed or taken from the pod, a namespace selector
// sometimes, and rarely an invalid selector (the pod's terms then fail
// to parse and it has none, though it is still listed as a holder).
func (w *world) term() v1.PodAffinityTerm {
	key := w.g.Pick([]string{at.Zone, at.Host, at.Rack})
	t := tu.AffinityTerm(key, w.g.Selector())
	switch x := w.g.R.IntN(10); {
	case x < 2:
		t = tu.InNamespaces(t, w.g.Pick(namespacesOf()))
	case x < 4:
		t = tu.WithNamespaceSelector(t, w.g.Selector())
	case x < 5:
		t = tu.WithNamespaceSelector(tu.InNamespaces(t, w.g.Pick(namespacesOf())), &metav1.LabelSelector{})
	}
	if w.g.P(3) {
		t.LabelSelector = tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn))
	}
	return t
}

// pod is a random pod: random namespace and labels, sometimes
// terminating, and required anti-affinity terms (often a pod's term
// equals another's, as a Deployment's pods do).
func (w *world) pod(node string) *v1.Pod {
	w.made++
	p := at.Placed(w.g.Pick(namespacesOf()), "p"+strconv.Itoa(w.made), node)
	if node == "" {
		p = at.Incoming(w.g.Pick(namespacesOf()))
	}
	for _, k := range []string{"app", "tier", "env", "hash"} {
		if w.g.P(45) {
			p.Label(k, w.g.Pick([]string{"a", "b", "c", "d", "e"}))
		}
	}
	// A label of the pod's own, as a StatefulSet's pods have: each such
	// pod is a class of its own, which projections add up.
	if w.g.P(40) {
		p.Label("pod-name", "p"+strconv.Itoa(w.made))
	}
	for range w.g.R.IntN(3) {
		p.RequiredPodAntiAffinity(w.term())
	}
	if w.g.P(30) {
		p.RequiredPodAffinity(w.term())
	}
	for range w.g.R.IntN(2) {
		p.PreferredPodAffinity(tu.Weighted(w.weight(), w.term()))
	}
	for range w.g.R.IntN(2) {
		p.PreferredPodAntiAffinity(tu.Weighted(w.weight(), w.term()))
	}
	obj := p.Obj()
	if w.g.P(5) {
		obj.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	}
	return obj
}

// weight is a preferred term's weight: upstream's range, and rarely the
// int32 extremes, whose products with the sign wrap as the scan's do.
func (w *world) weight() int32 {
	if w.g.P(3) {
		return w.g.R.Int32() | -1<<31
	}
	return 1 + w.g.R.Int32N(100)
}

// node is a node object with each topology label present or not.
func (w *world) node(name string) *v1.Node {
	n := tu.MakeNode(name)
	if w.g.P(85) {
		n.Label(at.Host, name)
	}
	if w.g.P(80) {
		n.Label(at.Zone, w.g.Pick(zonesOf()))
	}
	if w.g.P(40) {
		n.Label(at.Rack, w.g.Pick([]string{"r1", "r2"}))
	}
	return n.Obj()
}

func (w *world) addNode(name string) {
	ni := framework.NewNodeInfo()
	ni.SetNode(w.node(name))
	for range w.g.R.IntN(4) {
		ni.AddPod(w.pod(name))
	}
	w.nodes[name] = ni
}

// change makes one random change.
func (w *world) change() {
	names := slices.Sorted(maps.Keys(w.nodes))
	if len(names) == 0 || w.g.P(5) {
		w.addNode("n" + strconv.Itoa(w.g.R.IntN(40)))
		return
	}
	name := w.g.Pick(names)
	ni := w.nodes[name]
	switch x := w.g.R.IntN(100); {
	case x < 40:
		ni.AddPod(w.pod(name))
	case x < 70:
		if pods := ni.GetPods(); len(pods) > 0 {
			if err := ni.RemovePod(klog.Background(), pods[w.g.R.IntN(len(pods))].GetPod()); err != nil {
				panic(err)
			}
		}
	case x < 85:
		ni.SetNode(w.node(name))
	case x < 95:
		delete(w.nodes, name)
	default:
		// The same name comes back as a new NodeInfo.
		w.addNode(name)
	}
}

// holders are the snapshot's holder lists: every node with a pod with
// required anti-affinity, or (fast path) with a term whose key is not
// the hostname, read from the spec as the snapshot does.
func (w *world) holders(fastPath bool) []fwk.NodeInfo {
	var list []fwk.NodeInfo
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		ni := w.nodes[name]
		for _, p := range ni.GetPodsWithRequiredAntiAffinity() {
			nonHost := slices.ContainsFunc(p.GetPod().Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
				func(t v1.PodAffinityTerm) bool { return t.TopologyKey != at.Host })
			if !fastPath || nonHost {
				list = append(list, ni)
				break
			}
		}
	}
	w.reorder(list)
	return list
}

// reorder shuffles a list now and then: the snapshot keeps its order
// between cycles, which lets the table sweep by position, but the table
// must not depend on it.
func (w *world) reorder(list []fwk.NodeInfo) {
	if w.g.P(30) {
		w.g.R.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	}
}

// scanExistingAnti is the scan the table stands for (upstream's
// getExistingAntiAffinityCounts): every listed node's pods' terms that
// select the incoming pod, counted in the node's domain of the term's
// key; with the fast path hostname-scoped terms are not counted but the
// nodes holding one are.
func scanExistingAnti(holders []fwk.NodeInfo, in Incoming) (map[topology.Pair]int64, int64) {
	domains := map[topology.Pair]int64{}
	var hostNodes int64
	for _, ni := range holders {
		host := false
		for _, p := range ni.GetPodsWithRequiredAntiAffinity() {
			for _, t := range p.GetRequiredAntiAffinityTerms() {
				if in.HostnameFastPath && t.TopologyKey == at.Host {
					host = true
					continue
				}
				if !t.Matches(in.Pod, in.NamespaceLabels) {
					continue
				}
				if v, ok := ni.Node().Labels[t.TopologyKey]; ok {
					domains[topology.Pair{Key: t.TopologyKey, Value: v}]++
				}
			}
		}
		if host {
			hostNodes++
		}
	}
	return domains, hostNodes
}

// differentialRuns is how many random histories the test replays
// (AGGREGATE_RUNS overrides it; AGGREGATE_SEED fixes the first seed).
func differentialRuns(t *testing.T) (runs int, seed uint64) {
	runs = 200
	if testing.Short() {
		runs = 40
	}
	if s := os.Getenv("AGGREGATE_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("AGGREGATE_RUNS: %v", err)
		}
		runs = n
	}
	if s := os.Getenv("AGGREGATE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("AGGREGATE_SEED: %v", err)
		}
		seed = n
	}
	return runs, seed
}

// handedOut keeps the answers of a cycle as they were when handed out,
// to check once the table has moved on that none changed: a sum borrows
// the table's counts where they are (counts.Domains), which the table
// must copy, not change, from then on.
type handedOut []struct {
	now func() any
	was any
}

func (h *handedOut) keep(now func() any) {
	*h = append(*h, struct {
		now func() any
		was any
	}{now, now()})
}

// check fails t if an answer kept changed, and forgets them.
func (h *handedOut) check(t *testing.T, what string) {
	t.Helper()
	for _, a := range *h {
		if now := a.now(); !reflect.DeepEqual(now, a.was) {
			t.Fatalf("%s: an answer of the cycle before changed after it was handed out: %v, was %v", what, now, a.was)
		}
	}
	*h = (*h)[:0]
}

// TestExistingAntiMatchesScan is the table's invariant: over random
// histories (pods added and removed, nodes relabelled, removed and
// re-added, terms of every shape including invalid ones), after each
// batch of changes the table's answer for random incoming pods equals a
// scan of the holders, with and without the hostname fast path.
func TestExistingAntiMatchesScan(t *testing.T) {
	runs, seed := differentialRuns(t)
	var compared, nonEmpty int
	for run := range runs {
		for _, fastPath := range []bool{false, true} {
			s := seed + uint64(run)
			w := &world{g: at.Gen{R: rand.New(rand.NewPCG(s, 7))}, nodes: map[string]*framework.NodeInfo{}}
			for i := range 8 + w.g.R.IntN(25) {
				w.addNode(fmt.Sprint("n", i))
			}
			table := &Table{}
			var kept, keeping handedOut
			for cycle := range 30 {
				for range w.g.R.IntN(4) {
					w.change()
				}
				// The plugin scans the holders (with the fast path, those
				// with a term not scoped to the hostname); the table sums
				// over all nodes.
				holders, allHolders, all := w.holders(fastPath), w.holders(false), w.all()
				cs := cycleStates(cycle)
				for range 3 {
					in := Incoming{Pod: w.pod(""), NamespaceLabels: w.nsLabels(), HostnameFastPath: fastPath}
					got, ok := table.ExistingAnti(cs(), all, in)
					if !ok {
						t.Fatalf("seed %d fast path %v cycle %d: the table did not answer", s, fastPath, cycle)
					}
					keeping.keep(func() any { return got.Counts.ToMap() })
					want, wantHost := scanExistingAnti(holders, in)
					wantAll, hostAll := scanExistingAnti(allHolders, in)
					if !maps.Equal(want, wantAll) {
						t.Fatalf("seed %d fast path %v cycle %d: the holders sum to %v, all the nodes with required anti-affinity to %v",
							s, fastPath, cycle, want, wantAll)
					}
					if g := got.Counts.ToMap(); !maps.Equal(g, want) || got.HostScopedNodes != hostAll {
						t.Fatalf("seed %d fast path %v cycle %d: table %v (%d nodes with hostname-scoped terms), scan %v (%d)",
							s, fastPath, cycle, g, got.HostScopedNodes, want, hostAll)
					}
					// What the plugin reads of it: whether some node holds
					// a hostname-scoped term, as the holders' lists and
					// their scan tell.
					if fastPath && (got.HostScopedNodes > 0) != (wantHost > 0 || len(allHolders) > len(holders)) {
						t.Fatalf("seed %d fast path: cycle %d: %d nodes with hostname-scoped terms, the holders' scan %d of %d (%d in all)",
							s, cycle, got.HostScopedNodes, wantHost, len(holders), len(allHolders))
					}
					compared++
					if len(want) > 0 {
						nonEmpty++
					}
				}
				kept.check(t, fmt.Sprintf("seed %d fast path %v cycle %d", s, fastPath, cycle))
				kept, keeping = keeping, kept
			}
			// What the table keeps is what a fresh one would: terms no
			// listed pod holds any more are gone (memory grows with
			// pods and domains, not with history).
			all := w.all()
			fresh := &Table{}
			fresh.anti.sweep(all, at.Generations(all), nil)
			table.anti.sweep(all, at.Generations(all), nil)
			if kept, want := termDomains(&table.anti.terms), termDomains(&fresh.anti.terms); !maps.EqualFunc(kept, want, maps.Equal) {
				t.Fatalf("seed %d fast path %v: the table keeps %d terms, a fresh one %d", s, fastPath, len(kept), len(want))
			}
			// Records are kept for the nodes that hold a term (a pod's
			// terms that fail to parse are none), the others by their
			// generation alone.
			want := 0
			for _, ni := range w.holders(false) {
				if slices.ContainsFunc(ni.GetPodsWithRequiredAntiAffinity(), func(p fwk.PodInfo) bool { return len(p.GetRequiredAntiAffinityTerms()) > 0 }) {
					want++
				}
			}
			if n := len(table.anti.byName); n != want {
				t.Fatalf("seed %d fast path %v: %d nodes recorded, %d hold required anti-affinity terms", s, fastPath, n, want)
			}
		}
	}
	if nonEmpty == 0 || nonEmpty == compared {
		t.Fatalf("%d of %d answers have domains: the histories do not exercise both", nonEmpty, compared)
	}
	t.Logf("%d answers compared, %d with domains", compared, nonEmpty)
}

// termDomains is a table's terms and their domains, by term.
func termDomains(tt *termTable) map[string]map[topology.Pair]int64 {
	out := map[string]map[topology.Pair]int64{}
	for _, e := range tt.list {
		if tt.byID[e.id] != e || tt.list[e.pos] != e {
			panic("term table out of step with its list")
		}
		out[e.id] = maps.Collect(e.domains.All())
	}
	return out
}

// all is every node, in an order of the snapshot's own.
func (w *world) all() []fwk.NodeInfo {
	var list []fwk.NodeInfo
	for _, name := range slices.Sorted(maps.Keys(w.nodes)) {
		list = append(list, w.nodes[name])
	}
	w.reorder(list)
	return list
}

// incomingTerms draws an incoming pod's required terms and sorts them as
// the plugin does (sortTerms): with the fast path, hostname-scoped
// anti-affinity terms leave the counts, and affinity terms do as a group
// when all are hostname-scoped.
func (w *world) incomingTerms(fastPath bool) IncomingTerms {
	p := at.Incoming(w.g.Pick(namespacesOf()))
	for range w.g.R.IntN(3) {
		p.RequiredPodAffinity(w.term())
	}
	for range w.g.R.IntN(3) {
		p.RequiredPodAntiAffinity(w.term())
	}
	pi, err := framework.NewPodInfo(p.Obj())
	if err != nil {
		// An invalid term: the plugin rejects the pod before counting.
		return IncomingTerms{}
	}
	aff, anti := pi.GetRequiredAffinityTerms(), pi.GetRequiredAntiAffinityTerms()
	if !fastPath {
		return IncomingTerms{Affinity: aff, AntiAffinity: anti}
	}
	var ts IncomingTerms
	if slices.ContainsFunc(aff, func(t fwk.AffinityTerm) bool { return t.TopologyKey != at.Host }) {
		ts.Affinity = aff
	} else {
		ts.HostAffinity = aff
	}
	for _, t := range anti {
		if t.TopologyKey != at.Host {
			ts.AntiAffinity = append(ts.AntiAffinity, t)
		}
	}
	return ts
}

// matchesAll is podaffinity.MatchesAll, restated: no terms match nothing.
func matchesAll(ts []fwk.AffinityTerm, pod *v1.Pod) bool {
	if len(ts) == 0 {
		return false
	}
	for i := range ts {
		if !ts[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

// scanIncoming is the scan the classes stand for (upstream's
// getIncomingAffinityAntiAffinityCounts and
// countMatchingHostScopedAffinityPodsGlobally): every pod of every node.
func scanIncoming(nodes []fwk.NodeInfo, ts IncomingTerms) (aff, anti map[topology.Pair]int64, host int64) {
	aff, anti = map[topology.Pair]int64{}, map[topology.Pair]int64{}
	for _, ni := range nodes {
		lbls := ni.Node().Labels
		for _, p := range ni.GetPods() {
			pod := p.GetPod()
			if matchesAll(ts.Affinity, pod) {
				for _, t := range ts.Affinity {
					if v, ok := lbls[t.TopologyKey]; ok {
						aff[topology.Pair{Key: t.TopologyKey, Value: v}]++
					}
				}
			}
			for _, t := range ts.AntiAffinity {
				if v, ok := lbls[t.TopologyKey]; ok && t.Matches(pod, nil) {
					anti[topology.Pair{Key: t.TopologyKey, Value: v}]++
				}
			}
			if matchesAll(ts.HostAffinity, pod) {
				host++
			}
		}
	}
	return aff, anti, host
}

// TestIncomingMatchesScan is the classes' invariant, over the histories
// of TestExistingAntiMatchesScan: after each batch of changes the table's
// counts for random incoming terms equal a scan of every pod of every
// node. The topology keys are asked for in a random order over time, so
// keys start being counted at any point of a history.
func TestIncomingMatchesScan(t *testing.T) {
	runs, seed := differentialRuns(t)
	var compared, nonEmpty, projected int
	for run := range runs {
		for _, fastPath := range []bool{false, true} {
			s := seed + uint64(run)
			w := &world{g: at.Gen{R: rand.New(rand.NewPCG(s, 11))}, nodes: map[string]*framework.NodeInfo{}}
			for i := range 8 + w.g.R.IntN(25) {
				w.addNode(fmt.Sprint("n", i))
			}
			table := &Table{}
			// Some histories count at most one or two topology keys
			// for the classes: the three keys the terms use evict
			// one another all the time.
			table.pods.classes.maxKeys = run % 3
			// Some keep one or two projections: the key sets the
			// selectors read evict one another all the time.
			table.pods.classes.maxProjs = run % 4
			// Every other history reads the nodes' labels through a
			// topology view, as the plugin does, kept by a table of
			// its own across the cycles.
			var topo *topology.Table
			if run%2 == 1 {
				topo = &topology.Table{}
				topo.Prime()
			}
			var kept, keeping handedOut
			for cycle := range 30 {
				for range w.g.R.IntN(4) {
					w.change()
				}
				all := w.all()
				cs := cycleStates(cycle)
				var view *topology.View
				if topo != nil {
					view = topo.Sync(cs(), all, []string{at.Zone, at.Host}, func([]int64, *topology.View) {})
					if view == nil {
						t.Fatal("the primed topology table made no view")
					}
				}
				for range 3 {
					ts := w.incomingTerms(fastPath)
					got, ok := table.Incoming(cs(), all, view, ts)
					if !ok {
						t.Fatalf("seed %d fast path %v cycle %d: the table did not answer", s, fastPath, cycle)
					}
					keeping.keep(func() any { return []any{got.Affinity.ToMap(), got.AntiAffinity.ToMap(), got.HostAffinity} })
					checkProjections(t, &table.pods.classes)
					projected += len(table.pods.classes.projs)
					asked := map[string]bool{}
					for _, t := range slices.Concat(ts.Affinity, ts.AntiAffinity) {
						asked[t.TopologyKey] = true
					}
					if n, bound := len(table.pods.classes.keys), table.pods.classes.bound(); n > max(bound, len(asked)) {
						t.Fatalf("seed %d cycle %d: %d keys counted, bound %d, %d asked for", s, cycle, n, bound, len(asked))
					}
					aff, anti, host := scanIncoming(all, ts)
					if g := got.Affinity.ToMap(); !maps.Equal(g, aff) {
						t.Fatalf("seed %d fast path %v cycle %d: affinity: table %v, scan %v", s, fastPath, cycle, g, aff)
					}
					if g := got.AntiAffinity.ToMap(); !maps.Equal(g, anti) {
						t.Fatalf("seed %d fast path %v cycle %d: anti-affinity: table %v, scan %v", s, fastPath, cycle, g, anti)
					}
					if got.HostAffinity != host {
						t.Fatalf("seed %d fast path %v cycle %d: host affinity: table %d, scan %d", s, fastPath, cycle, got.HostAffinity, host)
					}
					compared++
					if len(aff)+len(anti) > 0 || host > 0 {
						nonEmpty++
					}
				}
				kept.check(t, fmt.Sprintf("seed %d fast path %v cycle %d", s, fastPath, cycle))
				kept, keeping = keeping, kept
			}
			// The classes kept are those of the pods on the nodes.
			all := w.all()
			table.pods.sweep(all, at.Generations(all), nil)
			classes := map[string]int64{}
			for _, ni := range all {
				for _, p := range ni.GetPods() {
					classes[string(classID(nil, p.GetPod()))]++
				}
			}
			held := map[string]int64{}
			for _, c := range table.pods.classes.list {
				if table.pods.classes.byID[c.id] != c || table.pods.classes.list[c.pos] != c {
					t.Fatal("class table out of step with its list")
				}
				held[c.id] = c.pods
			}
			if !maps.Equal(held, classes) {
				t.Fatalf("seed %d fast path %v: the table keeps %d classes, the nodes hold %d", s, fastPath, len(held), len(classes))
			}
		}
	}
	if nonEmpty == 0 || nonEmpty == compared {
		t.Fatalf("%d of %d answers have counts: the histories do not exercise both", nonEmpty, compared)
	}
	if projected == 0 {
		t.Fatalf("no projection was kept in %d answers", compared)
	}
	t.Logf("%d answers compared, %d with counts, %d projections kept", compared, nonEmpty, projected)
}

// scoreQuery draws an incoming pod for PreScore and the nodes it sums
// over: all nodes when it has preferred terms, otherwise those with pods
// with affinity (ok false: its terms do not parse, PreScore fails first).
func (w *world) scoreQuery() (q ScoreQuery, tableNodes, scanNodes []fwk.NodeInfo, ok bool) {
	p := at.Incoming(w.g.Pick(namespacesOf()))
	for _, k := range []string{"app", "tier", "env"} {
		if w.g.P(50) {
			p.Label(k, w.g.Pick([]string{"a", "b", "c", "d", "e"}))
		}
	}
	for range w.g.R.IntN(3) {
		p.PreferredPodAffinity(tu.Weighted(w.weight(), w.term()))
	}
	for range w.g.R.IntN(2) {
		p.PreferredPodAntiAffinity(tu.Weighted(w.weight(), w.term()))
	}
	pi, err := framework.NewPodInfo(p.Obj())
	if err != nil {
		return ScoreQuery{}, nil, nil, false
	}
	q = ScoreQuery{Pod: pi.GetPod(), NamespaceLabels: w.nsLabels(), Preferred: pi.GetPreferredAffinityTerms(),
		PreferredAnti: pi.GetPreferredAntiAffinityTerms(), HardPodAffinityWeight: int32(w.g.Pick([]string{"0", "1", "5"})[0] - '0')}
	// Without preferred terms the scan visits the nodes with pods with
	// affinity, and the table is given all nodes, as the plugin does, or
	// now and then that list itself (nodes that add nothing may be left
	// out).
	all := w.all()
	tableNodes, scanNodes = all, all
	if len(q.Preferred) == 0 && len(q.PreferredAnti) == 0 {
		scanNodes = slices.DeleteFunc(slices.Clone(all), func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithAffinity()) == 0 })
		if w.g.P(25) {
			tableNodes = scanNodes
		}
	}
	return q, tableNodes, scanNodes, true
}

// scanScore is the scan the scored terms and classes stand for (the
// plugin's tallyNode, upstream's processExistingPod): per node a tally
// with one entry per key that some pair weighed under, even to zero; a
// domain is present when some node's tally has an entry for it.
func scanScore(nodes []fwk.NodeInfo, q ScoreQuery) (weights map[topology.Pair]int64, present map[topology.Pair]bool) {
	weights, present = map[topology.Pair]int64{}, map[topology.Pair]bool{}
	preferred := len(q.Preferred) > 0 || len(q.PreferredAnti) > 0
	for _, ni := range nodes {
		lbls := ni.Node().Labels
		add := func(key string, w int64) {
			if v, ok := lbls[key]; ok {
				p := topology.Pair{Key: key, Value: v}
				weights[p] += w
				present[p] = true
			}
		}
		pods := ni.GetPodsWithAffinity()
		if preferred {
			pods = ni.GetPods()
		}
		for _, existing := range pods {
			for _, t := range q.Preferred {
				if t.Matches(existing.GetPod(), nil) {
					add(t.TopologyKey, int64(t.Weight*1))
				}
			}
			for _, t := range q.PreferredAnti {
				if t.Matches(existing.GetPod(), nil) {
					add(t.TopologyKey, int64(t.Weight*-1))
				}
			}
			if q.HardPodAffinityWeight > 0 {
				for _, t := range existing.GetRequiredAffinityTerms() {
					if t.Matches(q.Pod, q.NamespaceLabels) {
						add(t.TopologyKey, int64(q.HardPodAffinityWeight))
					}
				}
			}
			for _, t := range existing.GetPreferredAffinityTerms() {
				if t.Matches(q.Pod, q.NamespaceLabels) {
					add(t.TopologyKey, int64(t.Weight*1))
				}
			}
			for _, t := range existing.GetPreferredAntiAffinityTerms() {
				if t.Matches(q.Pod, q.NamespaceLabels) {
					add(t.TopologyKey, int64(t.Weight*-1))
				}
			}
		}
	}
	return weights, present
}

// TestScoreMatchesScan is the scored terms' and the classes' invariant
// for PreScore, over the same histories: the table's weights per domain,
// and which domains are present (also with weights cancelling to zero),
// equal a scan's, for incoming pods with and without preferred terms
// (whose node lists differ, alternating between cycles).
func TestScoreMatchesScan(t *testing.T) {
	runs, seed := differentialRuns(t)
	var compared, nonEmpty, zeroPresent, projected int
	for run := range runs {
		s := seed + uint64(run)
		w := &world{g: at.Gen{R: rand.New(rand.NewPCG(s, 13))}, nodes: map[string]*framework.NodeInfo{}}
		for i := range 8 + w.g.R.IntN(25) {
			w.addNode(fmt.Sprint("n", i))
		}
		table := &Table{}
		table.pods.classes.maxKeys = run % 3
		table.pods.classes.maxProjs = run % 4
		// Every other history lends PreScore's sum every term's and
		// class's counts it can, however few their domains.
		table.minLend = run % 2
		var kept, keeping handedOut
		for cycle := range 30 {
			for range w.g.R.IntN(4) {
				w.change()
			}
			cs := cycleStates(cycle)
			for range 3 {
				q, nodes, scanNodes, ok := w.scoreQuery()
				if !ok {
					continue
				}
				got, ok := table.Score(cs(), nodes, nil, q)
				if !ok {
					t.Fatalf("seed %d cycle %d: the table did not answer", s, cycle)
				}
				keeping.keep(func() any { return got.ToMap() })
				checkProjections(t, &table.pods.classes)
				projected += len(table.pods.classes.projs)
				weights, present := scanScore(scanNodes, q)
				gotWeights, gotPresent := map[topology.Pair]int64{}, map[topology.Pair]bool{}
				for p, dw := range got.ToMap() {
					gotPresent[p] = dw.Entries > 0
					if dw.Weight != 0 {
						gotWeights[p] = dw.Weight
					}
				}
				for p, wt := range weights {
					if wt == 0 {
						delete(weights, p)
						zeroPresent++
					}
				}
				if !maps.Equal(gotWeights, weights) || !maps.Equal(gotPresent, present) {
					t.Fatalf("seed %d cycle %d: table weights %v present %v, scan %v present %v", s, cycle, gotWeights, gotPresent, weights, present)
				}
				keys := map[string]bool{}
				for _, kc := range got.Keys() {
					keys[kc.Key] = true
				}
				for p := range present {
					if !keys[p.Key] {
						t.Fatalf("seed %d cycle %d: key %s of a present domain is not scored", s, cycle, p.Key)
					}
				}
				if len(keys) > 0 && len(present) == 0 {
					t.Fatalf("seed %d cycle %d: keys %v scored with no domain present", s, cycle, keys)
				}
				compared++
				if len(present) > 0 {
					nonEmpty++
				}
			}
			kept.check(t, fmt.Sprintf("seed %d cycle %d", s, cycle))
			kept, keeping = keeping, kept
		}
	}
	if nonEmpty == 0 || nonEmpty == compared {
		t.Fatalf("%d of %d answers have domains: the histories do not exercise both", nonEmpty, compared)
	}
	if projected == 0 {
		t.Fatalf("no projection was kept in %d answers", compared)
	}
	t.Logf("%d answers compared, %d with domains, %d domains present at weight 0, %d projections kept", compared, nonEmpty, zeroPresent, projected)
}

// cycleStates returns the CycleState for each of a cycle's calls: in odd
// cycles one for all of them, as in a scheduling cycle, whose calls then
// share one read of the nodes' generations (nodegen); in even cycles a
// new one per call, which reads them anew.
func cycleStates(cycle int) func() fwk.CycleState {
	if cycle%2 == 1 {
		cs := framework.NewCycleState()
		return func() fwk.CycleState { return cs }
	}
	return func() fwk.CycleState { return framework.NewCycleState() }
}

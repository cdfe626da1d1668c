package interpodaffinity

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// summaryGen draws random pods, labels and terms over a few keys and
// values, so that selectors often do and often do not match.
type summaryGen struct{ r *rand.Rand }

var (
	summaryKeys   = []string{"app", "tier", "env", "hash"}
	summaryValues = []string{"a", "b", "c", "d", "e"}
)

func (g summaryGen) p(pct int) bool { return g.r.IntN(100) < pct }

func (g summaryGen) pick(s []string) string { return s[g.r.IntN(len(s))] }

func (g summaryGen) values() []string {
	vs := []string{g.pick(summaryValues)}
	for g.p(40) {
		vs = append(vs, g.pick(summaryValues))
	}
	return vs
}

// selector covers every shape the summaries treat apart: nil (matches
// nothing), {} (everything), matchLabels, In with one and several values,
// Exists, and NotIn and DoesNotExist alone (no positive requirement).
func (g summaryGen) selector() *metav1.LabelSelector {
	switch x := g.r.IntN(100); {
	case x < 6:
		return nil
	case x < 12:
		return &metav1.LabelSelector{}
	case x < 20:
		// Negative requirements only.
		sel := &metav1.LabelSelector{}
		for range 1 + g.r.IntN(2) {
			if g.p(50) {
				sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(g.pick(summaryKeys), metav1.LabelSelectorOpNotIn, g.values()...))
			} else {
				sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(g.pick(summaryKeys), metav1.LabelSelectorOpDoesNotExist))
			}
		}
		return sel
	}
	sel := &metav1.LabelSelector{}
	if g.p(50) {
		sel.MatchLabels = map[string]string{g.pick(summaryKeys): g.pick(summaryValues)}
	}
	for range g.r.IntN(3) {
		k := g.pick(summaryKeys)
		switch x := g.r.IntN(4); x {
		case 0:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpIn, g.values()...))
		case 1:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpNotIn, g.values()...))
		case 2:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpExists))
		default:
			sel.MatchExpressions = append(sel.MatchExpressions, tu.SelectorExpr(k, metav1.LabelSelectorOpDoesNotExist))
		}
	}
	if sel.MatchLabels == nil && len(sel.MatchExpressions) == 0 {
		sel.MatchLabels = map[string]string{g.pick(summaryKeys): g.pick(summaryValues)}
	}
	return sel
}

func (g summaryGen) term() v1.PodAffinityTerm {
	key := zone
	if g.p(50) {
		key = host
	}
	return tu.AffinityTerm(key, g.selector())
}

// pod is a pod with random labels and, sometimes, terms of every kind.
func (g summaryGen) pod(name, node string) *v1.Pod {
	w := placed("default", name, node)
	if node == "" {
		w = incoming("default")
	}
	for _, k := range summaryKeys {
		if g.p(45) {
			w.Label(k, g.pick(summaryValues))
		}
	}
	for range g.r.IntN(2) {
		w.RequiredPodAffinity(g.term())
	}
	for range g.r.IntN(2) {
		w.RequiredPodAntiAffinity(g.term())
	}
	for range g.r.IntN(2) {
		w.PreferredPodAffinity(tu.Weighted(int32(1+g.r.IntN(10)), g.term()))
	}
	for range g.r.IntN(2) {
		w.PreferredPodAntiAffinity(tu.Weighted(int32(1+g.r.IntN(10)), g.term()))
	}
	return w.Obj()
}

// node is a node named name holding pods random pods.
func (g summaryGen) node(name string, pods int) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(tu.MakeNode(name).Label(host, name).Label(zone, g.pick([]string{"z1", "z2"})).Obj())
	for j := range pods {
		ni.AddPod(g.pod(fmt.Sprintf("%s-p%d", name, j), name))
	}
	return ni
}

// nodes are n nodes holding up to 3 random pods each.
func (g summaryGen) nodes(n int) []fwk.NodeInfo {
	var nodes []fwk.NodeInfo
	for i := range n {
		nodes = append(nodes, g.node(fmt.Sprintf("n%d", i), g.r.IntN(4)))
	}
	return nodes
}

// TestSummariesSkipOnlyEmptyContributions is the summaries' invariant: a
// node the summaries let a scan skip contributes nothing. Over random
// clusters and incoming pods, each of the three compute functions
// (existingAntiOn, matchesOn, tallyNode) gives the same result with the
// summaries as without on every node, and the nodes skipped are many and
// not all: the summaries neither change a contribution nor are vacuous.
func TestSummariesSkipOnlyEmptyContributions(t *testing.T) {
	schedmetrics.Register()
	ctx := t.Context()
	par := parallelize.NewParallelizer(2)
	r := rand.New(rand.NewPCG(1, 2))
	g := summaryGen{r: r}
	skipped := map[string]int{}
	computed := map[string]int{}
	for round := range 300 {
		nodes := g.nodes(1 + r.IntN(12))
		table := summaryTable{enabled: true, primed: true}
		v := table.sync(ctx, framework.NewCycleState(), par, "test", nodes)
		if v == nil {
			t.Fatal("sync gave no view for a list of framework NodeInfos")
		}
		pl := &InterPodAffinity{args: args{hardPodAffinityWeight: int32(r.IntN(2))}}
		for range 10 {
			pi := mustPodInfo(t, g.pod("", ""))
			fastPath := g.p(50)
			full := &preFilterState{podInfo: pi, terms: sortTerms(pi.GetRequiredAffinityTerms(), pi.GetRequiredAntiAffinityTerms(), fastPath), hostnameFastPath: fastPath}
			pruned := *full
			pruned.summaries = newRequiredQueries(v, pi.GetPod(), full.terms.affinity, full.terms.antiAffinity, full.terms.hostAffinity)
			sq := newScoreQueries(v, pi)
			var gens []int64
			if g.p(50) {
				// As the topology table hands them out.
				for _, ni := range nodes {
					gens = append(gens, ni.GetGeneration())
				}
			}
			for i, ni := range nodes {
				sum := v.of(i, ni)
				if sum == nil {
					t.Fatalf("round %d: no summary for a listed node", round)
				}
				where := fmt.Sprintf("round %d, node %s, incoming %v", round, ni.Node().Name, pi.GetPod().Spec.Affinity)

				for _, at := range []int{-1, i} {
					want, got := full.existingAntiOn(-1, ni, existingAnti{}), pruned.existingAntiOn(at, ni, existingAnti{})
					if fmt.Sprint(want) != fmt.Sprint(got) {
						t.Fatalf("%s: existingAntiOn = %v with summaries, %v without", where, got, want)
					}
				}
				skipAnti, _ := pruned.summaries.skipsExistingAnti(i, ni)
				count(skipped, computed, "existingAnti", skipAnti, len(ni.GetPodsWithRequiredAntiAffinity()) > 0)

				wantM := full.terms.matchesOn(nil, nil, nil, -1, ni, incomingMatches{})
				gotM := pruned.terms.matchesOn(nil, pruned.summaries, gens, i, ni, incomingMatches{})
				if fmt.Sprint(wantM) != fmt.Sprint(gotM) {
					t.Fatalf("%s: matchesOn = %v with summaries, %v without", where, gotM, wantM)
				}
				q := pruned.summaries
				count(skipped, computed, "incoming", q.skipsIncoming(gens, i, ni),
					len(ni.GetPods()) > 0 && len(q.affinity)+len(q.antiAffinity)+len(q.hostAffinity) > 0)

				for _, hasPreferred := range []bool{false, true} {
					wantT := pl.tallyNode(nil, nil, nil, -1, ni, pi, nil, hasPreferred, nil)
					gotT := pl.tallyNode(nil, sq, gens, i, ni, pi, nil, hasPreferred, nil)
					if fmt.Sprint(wantT) != fmt.Sprint(gotT) {
						t.Fatalf("%s: tallyNode(hasPreferred=%v) = %v with summaries, %v without", where, hasPreferred, gotT, wantT)
					}
				}
				count(skipped, computed, "score", sq.skips(gens, i, ni), len(ni.GetPods()) > 0)
			}
		}
	}
	for _, kind := range []string{"existingAnti", "incoming", "score"} {
		t.Logf("%s: %d nodes with pods skipped, %d computed", kind, skipped[kind], computed[kind])
		if skipped[kind] < 100 || computed[kind] < 100 {
			t.Errorf("%s: %d nodes with pods skipped, %d computed: the draws do not exercise the summaries both ways", kind, skipped[kind], computed[kind])
		}
	}
}

// count tallies, among nodes where something could be found (relevant),
// those skipped and those computed.
func count(skipped, computed map[string]int, kind string, skip, relevant bool) {
	if !relevant {
		return
	}
	if skip {
		skipped[kind]++
	} else {
		computed[kind]++
	}
}

// absentValue returns a value v of label app, and the query for app=v,
// that each of rows says no pod holds. A filter may say "maybe" of an
// absent item, so the value is chosen under v's seed among many: the
// assertions that follow are then exact, not right with high probability.
func absentValue(t *testing.T, v *summaryView, rows ...*nodeSummary) (string, termQuery) {
	t.Helper()
	for k := range 100 {
		value := fmt.Sprint("db-", k)
		term, err := framework.NewPodInfo(incoming("default").RequiredPodAffinity(tu.AffinityTerm(host, sel("app", value))).Obj())
		if err != nil {
			t.Fatal(err)
		}
		q := newTermQuery(v.seed, &term.GetRequiredAffinityTerms()[0])
		if !slices.ContainsFunc(rows, func(s *nodeSummary) bool { return s == nil || v.mayMatch(&q, s) }) {
			return value, q
		}
	}
	t.Fatal("every one of 100 absent values may match: the filters deny nothing")
	return "", termQuery{}
}

// TestSummaryTableFollowsGenerations: a node whose pods change gets a new
// summary at the next sync, a view handed out keeps the old one, and a
// NodeInfo not in the list (a clone) has none.
func TestSummaryTableFollowsGenerations(t *testing.T) {
	schedmetrics.Register()
	ctx := t.Context()
	par := parallelize.NewParallelizer(2)
	var nodes []fwk.NodeInfo
	for i := range 2 * summaryPage {
		name := fmt.Sprintf("n%d", i)
		ni := framework.NewNodeInfo()
		ni.SetNode(tu.MakeNode(name).Label(host, name).Obj())
		ni.AddPod(placed("default", "p-"+name, name).Label("app", "web").Obj())
		nodes = append(nodes, ni)
	}
	table := summaryTable{enabled: true}
	cs := framework.NewCycleState()
	if table.sync(ctx, cs, par, "test", nodes) != nil {
		t.Fatal("the first call built the summaries")
	}
	if table.sync(ctx, cs, par, "test", nodes) != nil {
		t.Fatal("the first cycle's second call (PreScore after PreFilter) built the summaries")
	}
	cs = framework.NewCycleState()
	first := table.sync(ctx, cs, par, "test", nodes)
	dbValue, db := absentValue(t, first, first.of(7, nodes[7]))
	if again := table.sync(ctx, cs, par, "test", nodes); again != first {
		t.Error("a sync with nothing changed made a new view")
	}
	nodes[7].(*framework.NodeInfo).AddPod(placed("default", "db", "n7").Label("app", dbValue).Obj())
	if first.of(7, nodes[7]) != nil || first.of(-1, nodes[7]) != nil {
		t.Fatal("a summary is trusted after its node's pods changed")
	}
	second := table.sync(ctx, cs, par, "test", nodes)
	if second == first {
		t.Fatal("the sync after a node was found changed kept the view handed out")
	}
	if !second.mayMatch(&db, second.of(7, nodes[7])) || !second.mayMatch(&db, second.of(-1, nodes[7])) {
		t.Error("the node with an app=db pod is skipped after the sync")
	}
	if first.mayMatch(&db, first.rowAt(7)) {
		t.Error("the view handed out before changed")
	}
	if i := summaryPage + 1; second.of(i, nodes[i]) != first.of(i, nodes[i]) {
		t.Error("an unchanged page was copied")
	}
	clone := nodes[7].Snapshot()
	if second.of(7, clone) != nil || second.of(-1, clone) != nil {
		t.Error("a clone of a listed node has a summary")
	}
	off := summaryTable{}
	if off.sync(ctx, cs, par, "test", nodes) != nil {
		t.Error("a disabled table gave a view")
	}
}

// BenchmarkSummarySync is one steady-state sync of the pod summaries at
// 5000 nodes: one node's pods changed since the last sync, as after a
// bind, and a scan found it.
//
//	go test ./pkg/plugins/interpodaffinity -run '^$' -bench SummarySync -benchmem
func BenchmarkSummarySync(b *testing.B) {
	schedmetrics.Register()
	par := parallelize.NewParallelizer(2)
	var nodes []fwk.NodeInfo
	for i := range 5000 {
		name := fmt.Sprintf("n%d", i)
		ni := framework.NewNodeInfo()
		ni.SetNode(tu.MakeNode(name).Label(host, name).Obj())
		ni.AddPod(placed("default", "p-"+name, name).Label("app", fmt.Sprint("web-", i%100)).Label("pod-template-hash", fmt.Sprint("h", i%100)).
			RequiredPodAntiAffinity(tu.AffinityTerm(host, sel("app", fmt.Sprint("web-", i%100)))).Obj())
		nodes = append(nodes, ni)
	}
	table := summaryTable{enabled: true, primed: true}
	cs := framework.NewCycleState()
	table.sync(b.Context(), cs, par, "bench", nodes)
	extra := placed("default", "extra", "n0").Label("app", "db").Obj()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ni := nodes[i%len(nodes)].(*framework.NodeInfo)
		if i%2 == 0 {
			ni.AddPod(extra)
		} else {
			_ = ni.RemovePod(klog.Background(), extra)
		}
		// The scan finds the change.
		table.sync(b.Context(), cs, par, "bench", nodes).of(i%len(nodes), ni)
	}
}

// BenchmarkInterleavedDeployments is one cycle (PreFilter and PreScore) of
// pods of 100 Deployments in turn, as scheduler_perf's
// InterleavedDeployments100 (test/perf/workloads): each Deployment's
// selector matches its own dozen pods among 2000 on 1000 nodes, and no
// signature recurs within the indexes' admission ring, so every cycle
// scans. summaries=off turns the pod summaries off, the rest of the
// caches on.
//
//	go test ./pkg/plugins/interpodaffinity -run '^$' -bench InterleavedDeployments -benchmem
func BenchmarkInterleavedDeployments(b *testing.B) {
	const nodes, deployments = 1000, 100
	shape := func(w *tu.PodWrapper, d int) *tu.PodWrapper {
		app := fmt.Sprint("web-", d)
		w.Label("app", app).Label("pod-template-hash", fmt.Sprint("h", d))
		own := tu.Selector(map[string]string{"app": app, "pod-template-hash": fmt.Sprint("h", d)})
		switch d % 4 {
		case 0:
			return w.RequiredPodAntiAffinity(tu.AffinityTerm(host, own)).PreferredPodAntiAffinity(tu.Weighted(100, tu.AffinityTerm(zone, sel("app", app))))
		case 1:
			return w.PreferredPodAntiAffinity(tu.Weighted(100, tu.AffinityTerm(host, own)), tu.Weighted(50, tu.AffinityTerm(zone, sel("app", app))))
		case 2:
			return w.RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", app))).PreferredPodAffinity(tu.Weighted(10, tu.AffinityTerm(host, sel("app", app))))
		default:
			return w.RequiredPodAntiAffinity(tu.AffinityTerm(host, own)).PreferredPodAffinity(tu.Weighted(50, tu.AffinityTerm(zone, sel("app", fmt.Sprint("web-", (d+1)%deployments)))))
		}
	}
	var pods []*v1.Pod
	var ns []*v1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		ns = append(ns, tu.MakeNode(name).Label(host, name).Label(zone, fmt.Sprintf("z%d", i%3)).Obj())
	}
	for i := range 2 * nodes {
		pods = append(pods, shape(placed("ns-0", fmt.Sprint("p-", i), fmt.Sprintf("node-%04d", i%nodes)), i%deployments).Obj())
	}
	b.Run("build", func(b *testing.B) {
		// What a first summarizing costs, against a cycle above.
		e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("ns-0", nil), tu.MakeNamespace("ns-1", nil))
		all := e.allNodes(b)
		cs := framework.NewCycleState()
		b.ReportAllocs()
		for b.Loop() {
			table := summaryTable{enabled: true, primed: true}
			table.sync(e.ctx, cs, e.pl.parallelizer, "bench", all)
		}
	})
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprint("summaries=", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("ns-0", nil), tu.MakeNamespace("ns-1", nil))
			e.ctx = klog.NewContext(e.ctx, logr.Discard())
			c := e.pl.caches
			c.existingAnti.admitFirst, c.incoming.admitFirst, c.score.admitFirst, c.keys.admitFirst = false, false, false, false
			c.summaries.enabled = on
			all := e.allNodes(b)
			incomingPods := make([]*v1.Pod, deployments)
			for d := range incomingPods {
				incomingPods[d] = shape(incoming("ns-1"), d).Obj()
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				pod := incomingPods[i%deployments]
				cs := framework.NewCycleState()
				e.pl.PreFilter(e.ctx, cs, pod, all)
				e.pl.PreScore(e.ctx, cs, pod, all)
			}
		})
	}
}

// TestSummaryRemapRedoesStaleRows: when the list changes, a row found out
// of date under the old list (or whose node changed unseen) is summarized
// again, not carried over with its old generation: the new view starts
// without the old view's stale marks, so a carried row would never be
// trusted again until found stale under an unchanged list.
func TestSummaryRemapRedoesStaleRows(t *testing.T) {
	schedmetrics.Register()
	ctx := t.Context()
	par := parallelize.NewParallelizer(2)
	var nodes []fwk.NodeInfo
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		ni := framework.NewNodeInfo()
		ni.SetNode(tu.MakeNode(name).Label(host, name).Obj())
		ni.AddPod(placed("default", "p-"+name, name).Label("app", "web").Obj())
		nodes = append(nodes, ni)
	}
	table := summaryTable{enabled: true, primed: true}
	cs := framework.NewCycleState()
	first := table.sync(ctx, cs, par, "test", nodes)
	var rows []*nodeSummary
	for i := range nodes {
		rows = append(rows, first.of(i, nodes[i]))
	}
	dbValue, db := absentValue(t, first, rows...)
	// Node 3 changes and a scan finds it; node 5 changes unseen.
	nodes[3].(*framework.NodeInfo).AddPod(placed("default", "db3", "n3").Label("app", dbValue).Obj())
	nodes[5].(*framework.NodeInfo).AddPod(placed("default", "db5", "n5").Label("app", dbValue).Obj())
	if first.of(3, nodes[3]) != nil {
		t.Fatal("a summary is trusted after its node's pods changed")
	}
	// A node joins: the list changes.
	extra := framework.NewNodeInfo()
	extra.SetNode(tu.MakeNode("n10").Label(host, "n10").Obj())
	nodes = append(nodes, extra)
	second := table.sync(ctx, cs, par, "test", nodes)
	if second.seed != first.seed {
		t.Fatal("a list change drew a new seed")
	}
	for _, i := range []int{3, 5} {
		s := second.of(i, nodes[i])
		if s == nil {
			t.Fatalf("node %d: the row changed before the list changed was carried over out of date", i)
		}
		if !second.mayMatch(&db, s) {
			t.Errorf("node %d: the new summary misses the app=db pod", i)
		}
	}
	if s := second.of(4, nodes[4]); s == nil || second.mayMatch(&db, s) {
		t.Error("an unchanged node's row was lost or changed by the list change")
	}
}

// rowImage is what a summary row says, its filters' words copied out, so
// that rows can be compared across views, compactions and list changes.
type rowImage struct {
	gen               int64
	flags             uint8
	pods, anti, score []uint64
}

func imageOf(v *summaryView, s *nodeSummary) rowImage {
	words := func(b bloomRef) []uint64 {
		if b.words == 0 {
			return nil
		}
		return slices.Clone(v.words[b.off : b.off+b.words])
	}
	return rowImage{gen: s.gen, flags: s.flags, pods: words(s.pods), anti: words(s.anti), score: words(s.score)}
}

// freshImage is ni's summary made from scratch with v's seed.
func freshImage(v *summaryView, ni fwk.NodeInfo) rowImage {
	var b summaryBuilder
	w := &summaryView{seed: v.seed}
	s := b.summarize(v.seed, ni, &w.words)
	return imageOf(w, &s)
}

// imagesOf is every row of v.
func imagesOf(v *summaryView) []rowImage {
	var out []rowImage
	for r := range v.nodes {
		out = append(out, imageOf(v, v.rowAt(r)))
	}
	return out
}

// checkCurrent fails unless every row of v is what a summary made now of
// its node would be.
func checkCurrent(t *testing.T, step string, v *summaryView) {
	t.Helper()
	for r, ni := range v.nodes {
		if got, want := imageOf(v, v.rowAt(r)), freshImage(v, ni); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: row %d (%s) = %+v, a fresh summary is %+v", step, r, ni.Node().Name, got, want)
		}
	}
}

// foreignNodeInfo is a NodeInfo of another implementation than the
// framework's.
type foreignNodeInfo struct{ *framework.NodeInfo }

// TestSummaryTableCompactsAndRemaps drives a table through refreshes that
// force compactions (rewriting every filter's offset) and through list
// changes (rows kept, reordered, dropped, added), checking after each step
// that every row equals a summary made from scratch, and that every view
// handed out earlier still says exactly what it said then.
func TestSummaryTableCompactsAndRemaps(t *testing.T) {
	schedmetrics.Register()
	ctx := t.Context()
	par := parallelize.NewParallelizer(2)
	r := rand.New(rand.NewPCG(3, 4))
	g := summaryGen{r: r}
	var nodes []fwk.NodeInfo
	for i := range 300 {
		// Enough pods that filters span several words.
		nodes = append(nodes, g.node(fmt.Sprintf("n%d", i), 4+r.IntN(20)))
	}
	table := summaryTable{enabled: true, primed: true}
	cs := framework.NewCycleState()
	type lent struct {
		v      *summaryView
		images []rowImage
	}
	var views []lent
	sync := func(step string) *summaryView {
		t.Helper()
		v := table.sync(ctx, cs, par, "test", nodes)
		if v == nil {
			t.Fatalf("%s: no view", step)
		}
		checkCurrent(t, step, v)
		views = append(views, lent{v: v, images: imagesOf(v)})
		for k, old := range views {
			if !reflect.DeepEqual(imagesOf(old.v), old.images) {
				t.Fatalf("%s: the view handed out at sync %d changed", step, k)
			}
		}
		return v
	}
	v := sync("build")
	compactions := 0
	for round := range 12 {
		// A third of the nodes gain a pod, and a scan finds them.
		for i := round % 3; i < len(nodes); i += 3 {
			ni := nodes[i].(*framework.NodeInfo)
			ni.AddPod(g.pod(fmt.Sprintf("%s-r%d", ni.Node().Name, round), ni.Node().Name))
			if v.of(i, ni) != nil {
				t.Fatalf("round %d: node %d trusted after a change", round, i)
			}
		}
		before := len(v.words)
		v = sync(fmt.Sprintf("refresh %d", round))
		if len(v.words) < before {
			compactions++
		}
	}
	if compactions == 0 {
		t.Fatal("no refresh compacted the words: the test does not exercise compaction")
	}
	t.Logf("%d compactions in 12 refreshes", compactions)

	// List changes: reversed (every row kept at another position), half
	// dropped, new nodes added, and changed nodes among the kept ones
	// (found stale or not).
	slices.Reverse(nodes)
	v = sync("reversed")
	nodes = nodes[:len(nodes)/2]
	nodes[0].(*framework.NodeInfo).AddPod(g.pod("late-0", nodes[0].Node().Name))
	nodes[1].(*framework.NodeInfo).AddPod(g.pod("late-1", nodes[1].Node().Name))
	if v.of(0, nodes[0]) != nil {
		t.Fatal("node trusted after a change")
	}
	for i := range 40 {
		nodes = append(nodes, g.node(fmt.Sprintf("m%d", i), r.IntN(6)))
	}
	v = sync("halved and grown")

	// A list naming a NodeInfo twice, or one of another implementation,
	// has no view; a good list afterwards gets one again.
	twice := append(slices.Clone(nodes), nodes[3])
	if table.sync(ctx, cs, par, "test", twice) != nil {
		t.Error("a list naming a NodeInfo twice got a view")
	}
	foreign := append(slices.Clone(nodes), fwk.NodeInfo(foreignNodeInfo{g.node("f", 2)}))
	if table.sync(ctx, cs, par, "test", foreign) != nil {
		t.Error("a list with a foreign NodeInfo got a view")
	}
	v = sync("after the bad lists")
	if v.of(-1, foreignNodeInfo{nodes[2].(*framework.NodeInfo)}) != nil {
		t.Error("a foreign NodeInfo wrapping a listed one has a summary")
	}
}

// TestSummaryFilterSizes: filters are sized by distinct items (pods of one
// workload share labels), capped at maxBloomWords; a capped filter still
// holds every item.
func TestSummaryFilterSizes(t *testing.T) {
	schedmetrics.Register()
	seed := maphash.MakeSeed()
	summarize := func(ni fwk.NodeInfo) (*summaryView, nodeSummary) {
		var b summaryBuilder
		v := &summaryView{seed: seed}
		s := b.summarize(seed, ni, &v.words)
		return v, s
	}

	// 20 pods of one workload: 40 items, 2 distinct (app=web, app).
	same := framework.NewNodeInfo()
	same.SetNode(tu.MakeNode("same").Obj())
	for j := range 20 {
		same.AddPod(placed("default", fmt.Sprint("w", j), "same").Label("app", "web").Obj())
	}
	v, s := summarize(same)
	if s.pods.words != 1 {
		t.Errorf("20 pods with one label: pods filter of %d words, want 1 (sized by distinct items)", s.pods.words)
	}
	if !v.has(s.pods, pairItem(seed, maphash.String(seed, "app"), "web")) || !v.has(s.pods, keyItem(maphash.String(seed, "app"))) {
		t.Error("the deduplicated filter lost an item")
	}

	// A node with hundreds of distinct labels: the filter is capped, holds
	// every one of them, and the node is never wrongly skipped.
	many := framework.NewNodeInfo()
	many.SetNode(tu.MakeNode("many").Obj())
	for j := range 30 {
		w := placed("default", fmt.Sprint("m", j), "many")
		for k := range 20 {
			w.Label(fmt.Sprintf("k%d-%d", j, k), fmt.Sprint("v", k))
		}
		many.AddPod(w.Obj())
	}
	v, s = summarize(many)
	if s.pods.words != maxBloomWords {
		t.Errorf("1200 distinct labels: pods filter of %d words, want the cap %d", s.pods.words, maxBloomWords)
	}
	for j := range 30 {
		for k := range 20 {
			hk := maphash.String(seed, fmt.Sprintf("k%d-%d", j, k))
			if !v.has(s.pods, pairItem(seed, hk, fmt.Sprint("v", k))) || !v.has(s.pods, keyItem(hk)) {
				t.Fatalf("the capped filter denies label k%d-%d", j, k)
			}
			term, err := framework.NewPodInfo(incoming("default").RequiredPodAffinity(tu.AffinityTerm(host, sel(fmt.Sprintf("k%d-%d", j, k), fmt.Sprint("v", k)))).Obj())
			if err != nil {
				t.Fatal(err)
			}
			if q := newTermQuery(seed, &term.GetRequiredAffinityTerms()[0]); !v.mayMatch(&q, &s) {
				t.Fatalf("a term selecting label k%d-%d would skip the node holding it", j, k)
			}
		}
	}
}

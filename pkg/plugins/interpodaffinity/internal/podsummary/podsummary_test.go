package podsummary

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// absentValue returns a value v of label app, and the query for app=v,
// that each of rows says no pod holds. A filter may say "maybe" of an
// absent item, so the value is chosen under v's seed among many: the
// assertions that follow are then exact, not right with high probability.
func absentValue(t *testing.T, v *View, rows ...*nodeSummary) (string, termQuery) {
	t.Helper()
	for k := range 100 {
		value := fmt.Sprint("db-", k)
		term, err := framework.NewPodInfo(at.Incoming("default").RequiredPodAffinity(tu.AffinityTerm(at.Host, at.Sel("app", value))).Obj())
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
		ni.SetNode(tu.MakeNode(name).Label(at.Host, name).Obj())
		ni.AddPod(at.Placed("default", "p-"+name, name).Label("app", "web").Obj())
		nodes = append(nodes, ni)
	}
	table := Table{}
	cs := framework.NewCycleState()
	if table.Sync(ctx, cs, par, "test", nodes) != nil {
		t.Fatal("the first call built the summaries")
	}
	if table.Sync(ctx, cs, par, "test", nodes) != nil {
		t.Fatal("the first cycle's second call (PreScore after PreFilter) built the summaries")
	}
	cs = framework.NewCycleState()
	first := table.Sync(ctx, cs, par, "test", nodes)
	dbValue, db := absentValue(t, first, first.Of(7, nodes[7]))
	if again := table.Sync(ctx, cs, par, "test", nodes); again != first {
		t.Error("a sync with nothing changed made a new view")
	}
	nodes[7].(*framework.NodeInfo).AddPod(at.Placed("default", "db", "n7").Label("app", dbValue).Obj())
	if first.Of(7, nodes[7]) != nil || first.Of(-1, nodes[7]) != nil {
		t.Fatal("a summary is trusted after its node's pods changed")
	}
	second := table.Sync(ctx, cs, par, "test", nodes)
	if second == first {
		t.Fatal("the sync after a node was found changed kept the view handed out")
	}
	if !second.mayMatch(&db, second.Of(7, nodes[7])) || !second.mayMatch(&db, second.Of(-1, nodes[7])) {
		t.Error("the node with an app=db pod is skipped after the sync")
	}
	if first.mayMatch(&db, first.rowAt(7)) {
		t.Error("the view handed out before changed")
	}
	if i := summaryPage + 1; second.Of(i, nodes[i]) != first.Of(i, nodes[i]) {
		t.Error("an unchanged page was copied")
	}
	clone := nodes[7].Snapshot()
	if second.Of(7, clone) != nil || second.Of(-1, clone) != nil {
		t.Error("a clone of a listed node has a summary")
	}
	off := Table{}
	if off.Sync(ctx, cs, par, "test", nodes) != nil {
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
		ni.SetNode(tu.MakeNode(name).Label(at.Host, name).Obj())
		ni.AddPod(at.Placed("default", "p-"+name, name).Label("app", fmt.Sprint("web-", i%100)).Label("pod-template-hash", fmt.Sprint("h", i%100)).
			RequiredPodAntiAffinity(tu.AffinityTerm(at.Host, at.Sel("app", fmt.Sprint("web-", i%100)))).Obj())
		nodes = append(nodes, ni)
	}
	table := Table{primed: true}
	cs := framework.NewCycleState()
	table.Sync(b.Context(), cs, par, "bench", nodes)
	extra := at.Placed("default", "extra", "n0").Label("app", "db").Obj()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ni := nodes[i%len(nodes)].(*framework.NodeInfo)
		if i%2 == 0 {
			ni.AddPod(extra)
		} else {
			_ = ni.RemovePod(klog.Background(), extra)
		}
		// The scan finds the change.
		table.Sync(b.Context(), cs, par, "bench", nodes).Of(i%len(nodes), ni)
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
		ni.SetNode(tu.MakeNode(name).Label(at.Host, name).Obj())
		ni.AddPod(at.Placed("default", "p-"+name, name).Label("app", "web").Obj())
		nodes = append(nodes, ni)
	}
	table := Table{primed: true}
	cs := framework.NewCycleState()
	first := table.Sync(ctx, cs, par, "test", nodes)
	var rows []*nodeSummary
	for i := range nodes {
		rows = append(rows, first.Of(i, nodes[i]))
	}
	dbValue, db := absentValue(t, first, rows...)
	// Node 3 changes and a scan finds it; node 5 changes unseen.
	nodes[3].(*framework.NodeInfo).AddPod(at.Placed("default", "db3", "n3").Label("app", dbValue).Obj())
	nodes[5].(*framework.NodeInfo).AddPod(at.Placed("default", "db5", "n5").Label("app", dbValue).Obj())
	if first.Of(3, nodes[3]) != nil {
		t.Fatal("a summary is trusted after its node's pods changed")
	}
	// A node joins: the list changes.
	extra := framework.NewNodeInfo()
	extra.SetNode(tu.MakeNode("n10").Label(at.Host, "n10").Obj())
	nodes = append(nodes, extra)
	second := table.Sync(ctx, cs, par, "test", nodes)
	if second.seed != first.seed {
		t.Fatal("a list change drew a new seed")
	}
	for _, i := range []int{3, 5} {
		s := second.Of(i, nodes[i])
		if s == nil {
			t.Fatalf("node %d: the row changed before the list changed was carried over out of date", i)
		}
		if !second.mayMatch(&db, s) {
			t.Errorf("node %d: the new summary misses the app=db pod", i)
		}
	}
	if s := second.Of(4, nodes[4]); s == nil || second.mayMatch(&db, s) {
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

func imageOf(v *View, s *nodeSummary) rowImage {
	words := func(b bloomRef) []uint64 {
		if b.words == 0 {
			return nil
		}
		return slices.Clone(v.words[b.off : b.off+b.words])
	}
	return rowImage{gen: s.gen, flags: s.flags, pods: words(s.pods), anti: words(s.anti), score: words(s.score)}
}

// freshImage is ni's summary made from scratch with v's seed.
func freshImage(v *View, ni fwk.NodeInfo) rowImage {
	var b summaryBuilder
	w := &View{seed: v.seed}
	s := b.summarize(v.seed, ni, &w.words)
	return imageOf(w, &s)
}

// imagesOf is every row of v.
func imagesOf(v *View) []rowImage {
	var out []rowImage
	for r := range v.nodes {
		out = append(out, imageOf(v, v.rowAt(r)))
	}
	return out
}

// checkCurrent fails unless every row of v is what a summary made now of
// its node would be.
func checkCurrent(t *testing.T, step string, v *View) {
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
	g := at.Gen{R: r}
	var nodes []fwk.NodeInfo
	for i := range 300 {
		// Enough pods that filters span several words.
		nodes = append(nodes, g.Node(fmt.Sprintf("n%d", i), 4+r.IntN(20)))
	}
	table := Table{primed: true}
	cs := framework.NewCycleState()
	type lent struct {
		v      *View
		images []rowImage
	}
	var views []lent
	sync := func(step string) *View {
		t.Helper()
		v := table.Sync(ctx, cs, par, "test", nodes)
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
			ni.AddPod(g.Pod(fmt.Sprintf("%s-r%d", ni.Node().Name, round), ni.Node().Name))
			if v.Of(i, ni) != nil {
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
	nodes[0].(*framework.NodeInfo).AddPod(g.Pod("late-0", nodes[0].Node().Name))
	nodes[1].(*framework.NodeInfo).AddPod(g.Pod("late-1", nodes[1].Node().Name))
	if v.Of(0, nodes[0]) != nil {
		t.Fatal("node trusted after a change")
	}
	for i := range 40 {
		nodes = append(nodes, g.Node(fmt.Sprintf("m%d", i), r.IntN(6)))
	}
	v = sync("halved and grown")

	// A list naming a NodeInfo twice, or one of another implementation,
	// has no view; a good list afterwards gets one again.
	twice := append(slices.Clone(nodes), nodes[3])
	if table.Sync(ctx, cs, par, "test", twice) != nil {
		t.Error("a list naming a NodeInfo twice got a view")
	}
	foreign := append(slices.Clone(nodes), fwk.NodeInfo(foreignNodeInfo{g.Node("f", 2)}))
	if table.Sync(ctx, cs, par, "test", foreign) != nil {
		t.Error("a list with a foreign NodeInfo got a view")
	}
	v = sync("after the bad lists")
	if v.Of(-1, foreignNodeInfo{nodes[2].(*framework.NodeInfo)}) != nil {
		t.Error("a foreign NodeInfo wrapping a listed one has a summary")
	}
}

// TestSummaryFilterSizes: filters are sized by distinct items (pods of one
// workload share labels), capped at maxBloomWords; a capped filter still
// holds every item.
func TestSummaryFilterSizes(t *testing.T) {
	schedmetrics.Register()
	seed := maphash.MakeSeed()
	summarize := func(ni fwk.NodeInfo) (*View, nodeSummary) {
		var b summaryBuilder
		v := &View{seed: seed}
		s := b.summarize(seed, ni, &v.words)
		return v, s
	}

	// 20 pods of one workload: 40 items, 2 distinct (app=web, app).
	same := framework.NewNodeInfo()
	same.SetNode(tu.MakeNode("same").Obj())
	for j := range 20 {
		same.AddPod(at.Placed("default", fmt.Sprint("w", j), "same").Label("app", "web").Obj())
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
		w := at.Placed("default", fmt.Sprint("m", j), "many")
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
			term, err := framework.NewPodInfo(at.Incoming("default").RequiredPodAffinity(tu.AffinityTerm(at.Host, at.Sel(fmt.Sprintf("k%d-%d", j, k), fmt.Sprint("v", k)))).Obj())
			if err != nil {
				t.Fatal(err)
			}
			if q := newTermQuery(seed, &term.GetRequiredAffinityTerms()[0]); !v.mayMatch(&q, &s) {
				t.Fatalf("a term selecting label k%d-%d would skip the node holding it", j, k)
			}
		}
	}
}

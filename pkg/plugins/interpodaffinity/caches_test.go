package interpodaffinity

import (
	"context"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	plugintesting "k8s.io/kubernetes/pkg/scheduler/framework/plugins/testing"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/aggregate"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/counts"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/podsummary"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// Tests of caches.go: what the decisions ask of the speed machinery, and
// the switch between the caches and their pass-through implementations.

// TestCachesOffArePassThrough: with gate GenericWorkload on (pod-group
// cycles restore generations, so the plugin must not trust them) and with
// options.noCaches (the scanning plugin the cached one is compared with),
// every cache is its pass-through implementation; otherwise none is. A
// cache-off mode that kept one cache on would fail here.
func TestCachesOffArePassThrough(t *testing.T) {
	for _, tc := range []struct {
		name string
		fts  feature.Features
		opts options
		off  bool
	}{
		{name: "default", off: false},
		{name: "GenericWorkload", fts: feature.Features{EnableGenericWorkload: true}, off: true},
		{name: "noCaches", opts: options{noCaches: true}, off: true},
	} {
		c := newCaches(Name, tc.fts, tc.opts)
		passThrough := map[string]bool{}
		for name, x := range map[string]any{"sums": c.sums, "topology": c.topology, "summaries": c.summaries} {
			switch x.(type) {
			case aggregate.PassThrough, topology.PassThrough, podsummary.PassThrough:
				passThrough[name] = true
			}
			if passThrough[name] != tc.off {
				t.Errorf("%s: cache %s is %T, pass-through wanted: %v", tc.name, name, x, tc.off)
			}
		}
	}
	// The scanning plugin, which TestCachedMatchesScanned compares with
	// the cached one, is built through the same switch.
	_, ctx := ktesting.NewTestContext(t)
	factory := func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return NewScanning(ctx, obj, h, feature.Features{})
	}
	scanning := plugintesting.SetupPluginWithInformers(ctx, t, frameworkruntime.PluginFactory(factory), nil, cache.NewEmptySnapshot(), nil)
	if _, ok := scanning.(*InterPodAffinity).caches.sums.(aggregate.PassThrough); !ok {
		t.Errorf("NewScanning keeps a term table: %T", scanning.(*InterPodAffinity).caches.sums)
	}
}

// TestPreFilterStateCopyOnWrite: PreFilter's counts are sums handed out,
// shared with clones; AddPod on a clone must not reach them, nor the
// original state, nor the next cycle.
func TestPreFilterStateCopyOnWrite(t *testing.T) {
	pods := []*v1.Pod{placed("default", "web-1", "n1").Label("app", "web").Obj()}
	e := newEnv(t, nil, feature.Features{}, pods, fixtureNodes())
	pod := incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
	cs, st := e.preFilter(t, pod)
	if !st.IsSuccess() {
		t.Fatalf("PreFilter = %v", st)
	}
	orig := mustState(t, cs)
	want := orig.antiAffinity.ToMap()

	clone := cs.Clone()
	other := placed("default", "web-2", "n3").Label("app", "web").Obj()
	if st := e.pl.AddPod(e.ctx, clone, pod, mustPodInfo(t, other), e.nodeInfo(t, "n3")); !st.IsSuccess() {
		t.Fatalf("AddPod = %v", st)
	}
	if got := mustState(t, clone).antiAffinity; got.Get(topologyPair{Key: zone, Value: "z2"}) != 1 {
		t.Errorf("clone after AddPod: %v, want z2 counted", got)
	}
	if !cmp.Equal(want, orig.antiAffinity.ToMap()) {
		t.Errorf("original state changed by AddPod on its clone: %v, want %v", orig.antiAffinity, want)
	}
	cs2, _ := e.preFilter(t, pod)
	if got := mustState(t, cs2).antiAffinity.ToMap(); !cmp.Equal(want, got) {
		t.Errorf("next cycle saw the clone's AddPod: %v, want %v", got, want)
	}
}

// TestSignaturesIgnoreLabelsNoTermSelectsOn: pods that differ only in a
// label no existing pod's term selects on (a StatefulSet pod's name,
// scheduler_perf's per-pod signature label) are decided alike, and leave
// nothing of their own in the caches of sums (which hold the existing
// pods' terms), while a label some term selects on is matched right.
func TestSignaturesIgnoreLabelsNoTermSelectsOn(t *testing.T) {
	pods := []*v1.Pod{
		placed("default", "guard", "n1").Label("app", "guard").
			RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).
			PreferredPodAffinity(tu.Weighted(3, tu.AffinityTerm(zone, sel("tier", "front")))).Obj(),
	}
	e := newEnv(t, nil, feature.Features{}, pods, fixtureNodes(), tu.MakeNamespace("default", nil))
	run := func(p *v1.Pod) (string, scoreResult) {
		cs, st := e.preFilter(t, p)
		out := tu.StatusString(st)
		if st.IsSuccess() {
			out = fmt.Sprint(e.filterAll(t, cs, p))
		}
		return out, e.score(t, p)
	}
	web1, score1 := run(incoming("default").Label("app", "web").Label("pod-name", "web-1").Obj())
	web2, score2 := run(incoming("default").Label("app", "web").Label("pod-name", "web-2").Obj())
	if web1 != web2 || !cmp.Equal(score1, score2, cmp.AllowUnexported(scoreResult{})) {
		t.Errorf("pods differing in an unselected label decided differently: %s %+v vs %s %+v", web1, score1, web2, score2)
	}
	if n := distinctTerms(e.pl.caches.sums); n != 2 {
		t.Errorf("%d distinct existing terms kept for the guard's two terms, want 2", n)
	}

	front, frontScore := run(incoming("default").Label("app", "api").Label("tier", "front").Obj())
	if front != skip {
		t.Errorf("app=api: PreFilter %s, want %s (no existing term selects it)", front, skip)
	}
	if want := scores(3, 3, 0, 0); !cmp.Equal(want, frontScore.raw) {
		t.Errorf("tier=front: raw scores %v, want %v", frontScore.raw, want)
	}
	if want := fmt.Sprint(statuses(existingReject, existingReject, pass, pass)); web1 != want {
		t.Errorf("app=web: Filter %s, want %s", web1, want)
	}
}

// TestSignaturesIgnoreNamespacesNoTermReads: pods from namespaces that no
// existing term lists, and whose labels agree on what the terms' namespace
// selectors read, are decided alike, though each namespace has a
// kubernetes.io/metadata.name label of its own (scheduler_perf's
// *WithNSSelector workloads: pods from 100 namespaces), and the caches of
// sums do not grow with them. A namespace a term lists by name, or one
// its selector tells apart, is matched right.
func TestSignaturesIgnoreNamespacesNoTermReads(t *testing.T) {
	devops := sel("team", "devops")
	web := tu.AffinityTerm(zone, sel("app", "web"))
	pods := []*v1.Pod{
		placed("ops", "guard", "n1").Label("app", "guard").
			RequiredPodAntiAffinity(tu.WithNamespaceSelector(web, devops)).
			PreferredPodAntiAffinity(tu.Weighted(5, tu.WithNamespaceSelector(web, devops))).Obj(),
		placed("ops", "lister", "n3").Label("app", "lister").
			RequiredPodAntiAffinity(tu.InNamespaces(web, "b")).Obj(),
	}
	namespace := func(name, team string) *v1.Namespace {
		return tu.MakeNamespace(name, map[string]string{v1.LabelMetadataName: name, "team": team})
	}
	e := newEnv(t, nil, feature.Features{}, pods, fixtureNodes(),
		namespace("ops", "ops"), namespace("a", "devops"), namespace("a2", "devops"), namespace("b", "qa"), namespace("qa", "qa"))
	run := func(ns string) (string, scoreResult) {
		p := incoming(ns).Label("app", "web").Obj()
		cs, st := e.preFilter(t, p)
		out := tu.StatusString(st)
		if st.IsSuccess() {
			out = fmt.Sprint(e.filterAll(t, cs, p))
		}
		return out, e.score(t, p)
	}
	entries := func() int { return distinctTerms(e.pl.caches.sums) }

	a, aScore := run("a")
	a2, a2Score := run("a2")
	if want := fmt.Sprint(statuses(existingReject, existingReject, pass, pass)); a != want || a2 != want {
		t.Errorf("team=devops namespaces: Filter %s and %s, want %s", a, a2, want)
	}
	if want := scores(-5, -5, 0, 0); !cmp.Equal(want, aScore.raw) || !cmp.Equal(want, a2Score.raw) {
		t.Errorf("team=devops namespaces: raw scores %v and %v, want %v", aScore.raw, a2Score.raw, want)
	}
	if n := entries(); n != 3 {
		t.Errorf("two namespaces no term tells apart: %d distinct existing terms, want 3 (the guard's two, the lister's one)", n)
	}

	b, bScore := run("b")
	if want := fmt.Sprint(statuses(pass, pass, existingReject, pass)); b != want {
		t.Errorf("namespace b (listed, team=qa): Filter %s, want %s", b, want)
	}
	if bScore.preScore != skip {
		t.Errorf("namespace b: PreScore %s, want %s (no preferred term selects it)", bScore.preScore, skip)
	}
	if qa, _ := run("qa"); qa != skip {
		t.Errorf("namespace qa (unlisted, team=qa): PreFilter %s, want %s", qa, skip)
	}
	if n := entries(); n != 3 {
		t.Errorf("%d distinct existing terms after namespaces a, a2, b and qa, want 3: the table grows with the incoming pods", n)
	}
}

// TestCountedDomainsShareTheViewsStrings: the domains PreFilter and PreScore
// count are keyed by the view's interned values, the very strings Filter
// and Score look them up by, so that a hit compares pointers, not the bytes
// of the nodes' label maps (sync). The values are equal either way: only
// this sharing is what the test can tell apart.
func TestCountedDomainsShareTheViewsStrings(t *testing.T) {
	web := placed("default", "web", "n1").Label("app", "web").Obj()
	env := newEnv(t, nil, feature.Features{}, []*v1.Pod{web}, fixtureNodes())
	// Each term's key is a string of its own, as in pods decoded from
	// the API: the view keeps the first it was asked for.
	pod := incoming("default").
		RequiredPodAntiAffinity(tu.AffinityTerm(strings.Clone(zone), sel("app", "web"))).
		PreferredPodAntiAffinity(tu.Weighted(5, tu.AffinityTerm(strings.Clone(zone), sel("app", "web")))).Obj()
	shared := func(what string, view *topology.View, domains map[topologyPair]bool) {
		t.Helper()
		if view == nil {
			t.Fatalf("%s: no view", what)
		}
		nt := topology.Of(view, env.nodeInfo(t, "n1"))
		v, ok := nt.Get(zone)
		if !ok || !nt.InView() || v != "z1" {
			t.Fatalf("%s: n1's zone through the view = %q, %v (in view: %v)", what, v, ok, nt.InView())
		}
		if !domains[topologyPair{Key: zone, Value: "z1"}] {
			t.Fatalf("%s: domains %v lack %s=z1", what, domains, zone)
		}
		k, _, _ := nt.Pair(zone)
		for p := range domains {
			if p.Key == zone && p.Value == "z1" && unsafe.StringData(p.Value) != unsafe.StringData(v) {
				t.Errorf("%s: domain %s=%s: the value is not the view's string", what, p.Key, p.Value)
			}
			if p.Key == zone && unsafe.StringData(p.Key) != unsafe.StringData(k) {
				t.Errorf("%s: domain %s=%s: the key is not the view's string", what, p.Key, p.Value)
			}
		}
	}

	cs, st := env.preFilter(t, pod)
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	s := mustState(t, cs)
	anti := map[topologyPair]bool{}
	for p := range s.antiAffinity.ToMap() {
		anti[p] = true
	}
	shared("PreFilter", s.cache.topology, anti)

	if st := env.pl.PreScore(env.ctx, cs, pod, env.allNodes(t)); !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st)
	}
	ps, err := preScoreStateOf(cs)
	if err != nil {
		t.Fatal(err)
	}
	scored := map[topologyPair]bool{}
	for p := range ps.weights.lookup.All() {
		scored[p] = true
	}
	shared("PreScore", ps.weights.topology, scored)
}

// TestSummariesSkipOnlyEmptyContributions is the summaries' invariant: a
// node the summaries let a scan skip contributes nothing. Over random
// clusters and incoming pods, each of the three contributions
// (existingAntiOn, matchesOn, tallyNode) is empty on every node the
// summaries skip (existingAntiOn's host-scoped note is the summary's), and
// the nodes skipped are many and not all: the summaries neither change a
// contribution nor are vacuous.
func TestSummariesSkipOnlyEmptyContributions(t *testing.T) {
	schedmetrics.Register()
	ctx := t.Context()
	par := parallelize.NewParallelizer(2)
	r := rand.New(rand.NewPCG(1, 2))
	g := affinitytest.Gen{R: r}
	skipped := map[string]int{}
	computed := map[string]int{}
	for round := range 300 {
		nodes := g.Nodes(1 + r.IntN(12))
		var table podsummary.Table
		table.Prime()
		v := table.Sync(ctx, framework.NewCycleState(), par, "test", nodes)
		if v == nil {
			t.Fatal("sync gave no view for a list of framework NodeInfos")
		}
		pl := &InterPodAffinity{args: args{hardPodAffinityWeight: int32(r.IntN(2))}}
		for range 10 {
			pi := mustPodInfo(t, g.Pod("", ""))
			fastPath := g.P(50)
			full := &preFilterState{podInfo: pi, terms: sortTerms(pi.GetRequiredAffinityTerms(), pi.GetRequiredAntiAffinityTerms(), fastPath), hostnameFastPath: fastPath}
			q := podsummary.NewRequiredQueries(v, pi.GetPod(), full.terms.affinity, full.terms.antiAffinity, full.terms.hostAffinity)
			sq := podsummary.NewScoreQueries(v, pi)
			var gens []int64
			if g.P(50) {
				// As the topology table hands them out.
				for _, ni := range nodes {
					gens = append(gens, ni.GetGeneration())
				}
			}
			for i, ni := range nodes {
				if v.Of(i, ni) == nil {
					t.Fatalf("round %d: no summary for a listed node", round)
				}
				where := fmt.Sprintf("round %d, node %s, incoming %v", round, ni.Node().Name, pi.GetPod().Spec.Affinity)
				nt := ownTopology(ni)

				want := full.existingAntiOn(ni, &nt, existingAnti{})
				for _, at := range []int{-1, i} {
					skip, hostAnti := q.SkipsExistingAnti(at, ni)
					if skip && (len(want.Tally) > 0 || want.HostScoped != (fastPath && hostAnti)) {
						t.Fatalf("%s: skipped (position %d, host-scoped note %v), but existingAntiOn = %v", where, at, fastPath && hostAnti, want)
					}
					if at == i {
						count(skipped, computed, "existingAnti", skip, len(ni.GetPodsWithRequiredAntiAffinity()) > 0)
					}
				}

				skip := q.SkipsIncoming(gens, i, ni)
				if m := full.terms.matchesOn(ni, &nt, incomingMatches{}); skip && !m.Empty() {
					t.Fatalf("%s: skipped, but matchesOn = %v", where, m)
				}
				count(skipped, computed, "incoming", skip,
					len(ni.GetPods()) > 0 && len(full.terms.affinity)+len(full.terms.antiAffinity)+len(full.terms.hostAffinity) > 0)

				skip = sq.Skips(gens, i, ni)
				for _, hasPreferred := range []bool{false, true} {
					if tally := pl.tallyNode(ni, &nt, pi, nil, hasPreferred, nil); skip && len(tally) > 0 {
						t.Fatalf("%s: skipped, but tallyNode(hasPreferred=%v) = %v", where, hasPreferred, tally)
					}
				}
				count(skipped, computed, "score", skip, len(ni.GetPods()) > 0)
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

// BenchmarkInterleavedDeployments is one cycle (PreFilter and PreScore) of
// pods of 100 Deployments in turn, as scheduler_perf's
// InterleavedDeployments100 (test/perf/workloads): each Deployment's
// selector matches its own dozen pods among 2000 on 1000 nodes.
// summaries=off turns the pod summaries off, the rest of the caches on.
//
//	go test ./pkg/plugins/interpodaffinity -run '^$' -bench InterleavedDeployments -benchmem
func BenchmarkInterleavedDeployments(b *testing.B) {
	const nodes, deployments = 1000, 100
	shape := interleavedShape(deployments)
	pods, ns := interleavedCluster(nodes, 2*nodes, deployments, shape)
	b.Run("build", func(b *testing.B) {
		// What a first summarizing costs, against a cycle above.
		e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("ns-0", nil), tu.MakeNamespace("ns-1", nil))
		all := e.allNodes(b)
		cs := framework.NewCycleState()
		b.ReportAllocs()
		for b.Loop() {
			var table podsummary.Table
			table.Prime()
			table.Sync(e.ctx, cs, e.pl.parallelizer, "bench", all)
		}
	})
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprint("summaries=", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("ns-0", nil), tu.MakeNamespace("ns-1", nil))
			e.ctx = klog.NewContext(e.ctx, logr.Discard())
			// A fresh set of caches, as in production, the summaries
			// on or off.
			c := newCaches(Name, feature.Features{}, options{})
			if !on {
				c.summaries = podsummary.PassThrough{}
			}
			e.pl.caches = c
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

// distinctTerms counts the distinct terms a term table holds (0 for
// the pass-through).
func distinctTerms(x aggregate.Sums) int {
	if t, ok := x.(*aggregate.Table); ok {
		return t.DistinctTerms()
	}
	return 0
}

// oneScoredKey is a PreScore state that scores key, with no weights.
func oneScoredKey(key string) *preScoreState {
	return &preScoreState{weights: &scoreWeights{keys: counts.KeyTally{{Key: key, N: 1}}}}
}

// interleavedShape gives pod w the labels and terms of Deployment d of
// scheduler_perf's interleaved workloads (test/perf/workloads: four
// shapes by d mod 4, each selecting its own Deployment's pods, shape 3
// preferring the next Deployment's zone).
func interleavedShape(deployments int) func(w *tu.PodWrapper, d int) *tu.PodWrapper {
	return func(w *tu.PodWrapper, d int) *tu.PodWrapper {
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
}

// interleavedCluster is nodes nodes over three zones and pods pods of
// the deployments Deployments, pod i on node i mod nodes.
func interleavedCluster(nodes, pods, deployments int, shape func(*tu.PodWrapper, int) *tu.PodWrapper) ([]*v1.Pod, []*v1.Node) {
	var ps []*v1.Pod
	var ns []*v1.Node
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		ns = append(ns, tu.MakeNode(name).Label(host, name).Label(zone, fmt.Sprintf("z%d", i%3)).Obj())
	}
	for i := range pods {
		ps = append(ps, shape(placed("ns-0", fmt.Sprint("p-", i), fmt.Sprintf("node-%05d", i%nodes)), i%deployments).Obj())
	}
	return ps, ns
}

// BenchmarkRetainedMemory measures what all of the plugin's caches hold
// (the term table, the topology table and the pod summaries) once 1000
// Deployments' pods, interleaved as in scheduler_perf's
// InterleavedDeployments1000, have each had two cycles (PreFilter and
// PreScore). retained-MB is the live heap the caches hold after a
// collection, against the same cluster before the first cycle; the loop
// times one more cycle.
//
//	go test ./pkg/plugins/interpodaffinity -run '^$' -bench RetainedMemory -benchtime 1x
func BenchmarkRetainedMemory(b *testing.B) {
	const deployments = 1000
	shape := interleavedShape(deployments)
	for _, nodes := range []int{5000, 15000} {
		b.Run(fmt.Sprint("nodes=", nodes), func(b *testing.B) {
			pods, ns := interleavedCluster(nodes, nodes, deployments, shape)
			e := newEnv(b, nil, feature.Features{}, pods, ns, tu.MakeNamespace("ns-0", nil), tu.MakeNamespace("ns-1", nil))
			e.ctx = klog.NewContext(e.ctx, logr.Discard())
			e.pl.caches = newCaches(Name, feature.Features{}, options{})
			all := e.allNodes(b)
			incomingPods := make([]*v1.Pod, deployments)
			for d := range incomingPods {
				incomingPods[d] = shape(incoming("ns-1"), d).Obj()
			}
			cycle := func(pod *v1.Pod) {
				cs := framework.NewCycleState()
				e.pl.PreFilter(e.ctx, cs, pod, all)
				e.pl.PreScore(e.ctx, cs, pod, all)
			}
			var before, after goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)
			for range 2 {
				for _, pod := range incomingPods {
					cycle(pod)
				}
			}
			goruntime.GC()
			goruntime.ReadMemStats(&after)
			held := float64(after.HeapAlloc) - float64(before.HeapAlloc)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				cycle(incomingPods[i%deployments])
			}
			b.ReportMetric(held/(1<<20), "retained-MB")
			b.ReportMetric(held/float64(nodes), "retained-B/node")
			goruntime.KeepAlive(e)
		})
	}
}

package interpodaffinity

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// podsByZone is a test sum: pods per zone label value, with a count of
// compute calls to see what the index recomputes.
type podsByZone map[string]int64

func zoneOps(calls *atomic.Int64) sumOps[podsByZone, podsByZone] {
	return sumOps[podsByZone, podsByZone]{
		compute: func(ni fwk.NodeInfo, _ podsByZone) podsByZone {
			calls.Add(1)
			z, ok := nodeLabels(ni)[zone]
			if !ok || len(ni.GetPods()) == 0 {
				return nil
			}
			return podsByZone{z: int64(len(ni.GetPods()))}
		},
		newSum: func() podsByZone { return podsByZone{} },
		apply: func(sum podsByZone, v podsByZone, sign int64) {
			for z, n := range v {
				if sum[z] += sign * n; sum[z] == 0 {
					delete(sum, z)
				}
			}
		},
		merge: func(dst, src podsByZone) {
			for z, n := range src {
				dst[z] += n
			}
		},
		clone: maps.Clone[podsByZone],
		empty: func(v podsByZone) bool { return len(v) == 0 },
	}
}

func zoneNode(name, z string, pods ...string) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(tu.MakeNode(name).Label(zone, z).Obj())
	for _, p := range pods {
		ni.AddPod(placed("default", p, name).Obj())
	}
	return ni
}

// TestNodeIndexFollowsTheNodes evolves a node list the ways a snapshot
// does and checks after every step that the index's sum equals a full scan
// and that only the nodes that changed were recomputed.
func TestNodeIndexFollowsTheNodes(t *testing.T) {
	ctx, par, computed, ops, x := zoneIndex()

	var nodes []fwk.NodeInfo
	for i := range 12 {
		nodes = append(nodes, zoneNode(fmt.Sprintf("n%d", i), fmt.Sprintf("z%d", i%3), fmt.Sprintf("p%d", i)))
	}
	// Every other call passes the generations as a caller that read them
	// already (the topology table) does.
	calls := 0
	check := func(step string, wantComputed int64) {
		t.Helper()
		calls++
		var gens []int64
		if calls%2 == 0 {
			for _, ni := range nodes {
				gens = append(gens, ni.GetGeneration())
			}
		}
		computed.Store(0)
		got := maps.Clone(x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, gens, ops))
		recomputed := computed.Load()
		want := computeSum(ctx, par, Name, nodes, ops)
		if !cmp.Equal(want, got) {
			t.Errorf("%s: index sum %v, full scan %v", step, got, want)
		}
		if recomputed != wantComputed {
			t.Errorf("%s: recomputed %d nodes, want %d", step, recomputed, wantComputed)
		}
		// The next cycle looks for each node where this one found it.
		// Positions are numbered lazily, so they are checked only when
		// they claim to be up to date.
		if e := x.entries["sig"]; e != nil {
			for i, s := range e.order {
				if num, ok := x.nums[nodes[min(i, len(nodes)-1)].Node().Name]; s == nil || (e.posValid && int(s.pos) != i) || i >= len(nodes) || !ok || s.num != num {
					t.Errorf("%s: order[%d] = %+v, want node %d's slot at position %d", step, i, s, i, i)
				} else if e.gens[i] != nodes[i].GetGeneration() {
					t.Errorf("%s: gens[%d] = %d, want node %d's generation %d", step, i, e.gens[i], i, nodes[i].GetGeneration())
				} else if v := ops.compute(nodes[i], nil); (s.v == nil) != (len(v) == 0) || (s.v != nil && !cmp.Equal(*s.v, v)) {
					// A node adding nothing keeps no contribution.
					t.Errorf("%s: slot of node %d holds %v, want %v", step, i, s.v, v)
				}
			}
			if e.n != len(nodes) || e.n != len(e.order) {
				t.Errorf("%s: %d slots for %d nodes", step, e.n, len(nodes))
			}
		}
	}

	check("first cycle", 12)
	check("nothing changed", 0)

	nodes[3].(*framework.NodeInfo).AddPod(placed("default", "bound", "n3").Obj())
	check("a pod bound to n3", 1)

	relabelled := nodes[5].Node().DeepCopy()
	relabelled.Labels[zone] = "z9"
	nodes[5].(*framework.NodeInfo).SetNode(relabelled)
	check("n5 moved to another zone", 1)

	// A removal as the snapshot's lists do it: the last node takes the
	// removed one's place, and is found by name there.
	nodes[2] = nodes[len(nodes)-1]
	nodes = nodes[:len(nodes)-1]
	check("n2 removed", 0)

	// A node joining mid-list, as one joins the list of nodes with
	// affinity pods: the ones after it shift, and are found by name.
	nodes = slices.Insert(nodes, 4, fwk.NodeInfo(zoneNode("n20", "z2", "q")))
	check("n20 inserted mid-list", 1)

	// Right after a move, before the positions were numbered again: a node
	// found by name away from where it was looked for, then a node joining
	// while another is listed twice (the whole list is then scanned).
	nodes[1], nodes[6] = nodes[6], nodes[1]
	check("two nodes swapped right after a move", 0)
	nodes = slices.Insert(nodes, 2, fwk.NodeInfo(zoneNode("n21", "z1", "r")))
	nodes = append(nodes, nodes[5])
	check("a node joined and another is listed twice", int64(len(nodes)))
	nodes = nodes[:len(nodes)-1]
	check("listed once again after a move", int64(len(nodes)))

	nodes = append(nodes, zoneNode("n2", "z0"))
	check("n2 re-added, empty", 1)

	// Same name, new NodeInfo: the generation tells them apart.
	nodes[0] = zoneNode("n0", "z0", "x", "y", "z")
	check("n0 replaced under the same name", 1)

	nodes = nodes[:4]
	check("most nodes gone", 0)

	nodes[0], nodes[1] = nodes[1], nodes[0]
	check("two nodes swapped places", 0)

	// A node listed twice (no snapshot does that) is counted twice, as the
	// plain scan counts it.
	nodes = append(nodes, nodes[0])
	check("a node listed twice", 5)
	nodes = nodes[:len(nodes)-1]
	check("listed once again", 4)

	// The same, in another node's place: the list keeps its length.
	gone := nodes[3]
	nodes[3] = nodes[0]
	check("a node listed twice in another's place", 4)
	nodes[3] = gone
	check("each node once again", 4)
	check("and nothing changed since", 0)

	// A node joining listed twice while another leaves: as many slots as
	// listed nodes, yet they cannot stand for the list (the index drops
	// the entry after recomputing the newcomer twice, and the list is
	// scanned).
	left := nodes[3]
	twice := fwk.NodeInfo(zoneNode("n22", "z1", "s"))
	nodes = append(nodes[:3], twice, twice)
	check("a node joined listed twice while another left", 2+5)
	nodes = append(nodes[:3], left)
	check("each node once again after the entry was dropped", 4)

	// The last node leaving while every other stays where it was, right
	// after a move (the pass's scratch still holds the order before it):
	// the new order is the old one cut short.
	nodes[0], nodes[1] = nodes[1], nodes[0]
	check("two nodes swapped back", 0)
	nodes = nodes[:len(nodes)-1]
	check("the last node gone, the rest in place", 0)
}

// zoneIndex is what the tests of one zone index share: a context, a
// parallelizer, zoneOps and an index that admits every signature.
func zoneIndex() (context.Context, fwk.Parallelizer, *atomic.Int64, sumOps[podsByZone, podsByZone], *nodeIndex[podsByZone, podsByZone]) {
	schedmetrics.Register() // Parallelizer.Until reports a metric
	calls := new(atomic.Int64)
	return context.Background(), parallelize.NewParallelizer(2), calls, zoneOps(calls), &nodeIndex[podsByZone, podsByZone]{enabled: true, admitFirst: true}
}

// TestNodeIndexEntriesShareScratch: the entries of one index, over lists
// of their own that change between calls, share the scratch of a call
// (and swap their order with it); each sum stays its list's scan.
func TestNodeIndexEntriesShareScratch(t *testing.T) {
	ctx, par, _, ops, x := zoneIndex()
	var all []fwk.NodeInfo
	for i := range 10 {
		var pods []string
		if i%3 != 0 {
			pods = append(pods, fmt.Sprint("p", i))
		}
		all = append(all, zoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%4), pods...))
	}
	// a lists every node, b every other one; both change as a snapshot's
	// lists do, one at a time, and are asked about alternately.
	a := slices.Clone(all)
	b := []fwk.NodeInfo{all[1], all[3], all[5], all[7], all[9]}
	changes := []func(){
		func() { b = slices.Insert(b, 1, all[2]) },
		func() { all[5].(*framework.NodeInfo).AddPod(placed("default", "q5", "n5").Obj()) },
		func() { a = slices.Delete(a, 3, 4) },
		func() { b = b[1:] },
		func() { a[0], a[7] = a[7], a[0] },
		func() { b = append(b, zoneNode("n10", "z1", "q10")) },
		func() { a = slices.Insert(a, 0, b[len(b)-1]) },
		func() {},
	}
	for step, change := range changes {
		change()
		for _, l := range []struct {
			sig   string
			nodes []fwk.NodeInfo
		}{{"a", a}, {"b", b}} {
			got := maps.Clone(x.sum(ctx, framework.NewCycleState(), par, l.sig, l.nodes, nil, ops))
			if want := computeSum(ctx, par, Name, l.nodes, ops); !cmp.Equal(want, got) {
				t.Errorf("step %d, list %s: index sum %v, full scan %v", step, l.sig, got, want)
			}
		}
	}
	if len(x.entries) != 2 {
		t.Errorf("%d entries, want both lists' kept", len(x.entries))
	}
}

// TestNodeIndexKeepsNoEmptyContribution: an entry whose nodes mostly add
// nothing keeps no contribution for them; what it keeps per node is the
// slot and its bookkeeping, whatever the size of a contribution.
func TestNodeIndexKeepsNoEmptyContribution(t *testing.T) {
	schedmetrics.Register()
	ctx := context.Background()
	par := parallelize.NewParallelizer(2)
	// A contribution of 1 KiB: the pods on the node, padded.
	type big struct {
		pods int64
		_    [127]int64
	}
	ops := sumOps[big, *int64]{
		compute: func(ni fwk.NodeInfo, _ big) big { return big{pods: int64(len(ni.GetPods()))} },
		newSum:  func() *int64 { return new(int64) },
		apply:   func(sum *int64, v big, sign int64) { *sum += sign * v.pods },
		merge:   func(dst, src *int64) { *dst += *src },
		clone:   func(sum *int64) *int64 { c := *sum; return &c },
		empty:   func(v big) bool { return v.pods == 0 },
	}
	var nodes []fwk.NodeInfo
	for i := range 2000 {
		var pods []string
		if i%100 == 0 {
			pods = append(pods, fmt.Sprint("p", i))
		}
		nodes = append(nodes, zoneNode(fmt.Sprint("n", i), "z1", pods...))
	}
	x := &nodeIndex[big, *int64]{enabled: true, admitFirst: true}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sum := x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if *sum != 20 {
		t.Fatalf("sum %d, want 20", *sum)
	}
	held := 0
	for _, s := range x.entries["sig"].order {
		if s.v != nil {
			held++
		}
	}
	if held != 20 {
		t.Errorf("%d contributions kept, want the 20 nodes' that add something", held)
	}
	// Slot, order, generations, numbers, scratch and the name map: about
	// 120 bytes a node; a contribution kept per node would be 1 KiB.
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 256*int64(len(nodes)) {
		t.Errorf("the index keeps %d bytes for %d nodes, want at most 256 a node", kept, len(nodes))
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(nodes)
}

// TestNodeIndexRenumbersAfterNodeChurn: the node numbers shared by an
// index's entries stay within numsSlack of the longest list while nodes
// come and go under new names, and the sums stay the scan's.
func TestNodeIndexRenumbersAfterNodeChurn(t *testing.T) {
	ctx, par, _, ops, x := zoneIndex()
	var nodes []fwk.NodeInfo
	for i := range 3 {
		nodes = append(nodes, zoneNode(fmt.Sprint("n", i), "z1", "p"))
	}
	resets := 0
	for i := 3; i < 3+2*numsSlack+10; i++ {
		// The oldest node leaves, a new one joins at the end.
		nodes = append(nodes[1:], zoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%3), "p"))
		numbered := len(x.nums)
		got := maps.Clone(x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops))
		if want := computeSum(ctx, par, Name, nodes, ops); !cmp.Equal(want, got) {
			t.Fatalf("after %d new nodes: index sum %v, full scan %v", i, got, want)
		}
		if len(x.nums) > len(nodes)+numsSlack+1 {
			t.Fatalf("after %d new nodes: %d names numbered for lists of %d", i, len(x.nums), len(nodes))
		}
		if len(x.nums) < numbered {
			resets++
		}
	}
	if resets == 0 {
		t.Errorf("the node numbers were never renumbered")
	}
}

// TestNodeIndexSumsAreImmutableOnceHandedOut: a cycle keeps reading the sum
// it was given (Filter runs long after PreFilter, clones share it) while a
// later cycle patches its own copy.
func TestNodeIndexSumsAreImmutableOnceHandedOut(t *testing.T) {
	ctx, par, _, ops, x := zoneIndex()
	nodes := []fwk.NodeInfo{zoneNode("a", "z1", "p1"), zoneNode("b", "z2", "p2")}

	first := x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
	before := maps.Clone(first)
	nodes[0].(*framework.NodeInfo).AddPod(placed("default", "p3", "a").Obj())
	second := x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)

	if !cmp.Equal(before, first) {
		t.Errorf("the first cycle's sum changed under it: %v, was %v", first, before)
	}
	if want := (podsByZone{"z1": 2, "z2": 1}); !cmp.Equal(want, second) {
		t.Errorf("second sum %v, want %v", second, want)
	}
}

// TestNodeIndexSignatures: sums of different signatures never mix, and
// the least recently used signature is dropped when the slot budget
// (slotsPerNode per listed node) is spent.
func TestNodeIndexSignatures(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	nodes := []fwk.NodeInfo{zoneNode("a", "z1", "p1"), zoneNode("b", "z2", "p2")}

	for i := range slotsPerNode + 1 {
		x.sum(ctx, framework.NewCycleState(), par, fmt.Sprint(i), nodes, nil, ops)
	}
	if len(x.entries) != slotsPerNode || x.slots != slotsPerNode*len(nodes) {
		t.Fatalf("%d signatures and %d slots kept, want %d and %d", len(x.entries), x.slots, slotsPerNode, slotsPerNode*len(nodes))
	}
	if _, ok := x.entries["0"]; ok {
		t.Errorf("the least recently used signature was kept")
	}
	calls.Store(0)
	x.sum(ctx, framework.NewCycleState(), par, "1", nodes, nil, ops)
	x.sum(ctx, framework.NewCycleState(), par, "0", nodes, nil, ops)
	if got := calls.Load(); got != int64(len(nodes)) {
		t.Errorf("recomputed %d nodes for one kept and one dropped signature, want %d", got, len(nodes))
	}

	// Empty lists cost no slot; the entries are still bounded.
	for i := range maxEntries + 5 {
		x.sum(ctx, framework.NewCycleState(), par, fmt.Sprint("empty", i), nil, nil, ops)
	}
	if len(x.entries) > maxEntries {
		t.Errorf("%d entries kept for empty lists, want at most %d", len(x.entries), maxEntries)
	}
}

// TestNodeIndexAdmission: a signature seen once is scanned and keeps
// nothing; one seen again within slotsPerNode calls gets an entry; one
// coming back only after more calls than the budget holds entries for is
// scanned again. Every answer is the scan's.
func TestNodeIndexAdmission(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	x.admitFirst = false
	nodes := []fwk.NodeInfo{zoneNode("a", "z1", "p1"), zoneNode("b", "z2", "p2"), zoneNode("c", "z1", "p3")}
	want := podsByZone{"z1": 2, "z2": 1}
	sum := func(sig string) {
		t.Helper()
		if got := x.sum(ctx, framework.NewCycleState(), par, sig, nodes, nil, ops); !cmp.Equal(want, got) {
			t.Errorf("%s: sum %v, want %v", sig, got, want)
		}
	}

	sum("once")
	if len(x.entries) != 0 {
		t.Fatalf("a signature seen once has an entry")
	}
	sum("once")
	if len(x.entries) != 1 {
		t.Fatalf("a signature seen twice in a row has %d entries, want 1", len(x.entries))
	}
	calls.Store(0)
	sum("once")
	if n := calls.Load(); n != 0 {
		t.Errorf("the admitted signature recomputed %d nodes, want 0", n)
	}

	// A round of more signatures than the budget holds: none is admitted.
	x = &nodeIndex[podsByZone, podsByZone]{enabled: true}
	for round := range 3 {
		for i := range slotsPerNode + 1 {
			sum(fmt.Sprint("far", i))
		}
		if len(x.entries) != 0 {
			t.Fatalf("round %d: %d entries for signatures recurring beyond reach, want 0", round, len(x.entries))
		}
	}
	// Within reach they are.
	for range 2 {
		for i := range slotsPerNode / 2 {
			sum(fmt.Sprint("near", i))
		}
	}
	if len(x.entries) != slotsPerNode/2 {
		t.Errorf("%d entries for signatures recurring within reach, want %d", len(x.entries), slotsPerNode/2)
	}
}

// TestNodeIndexDisabled: with the index off nothing is kept and every call
// is a full scan.
func TestNodeIndexDisabled(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	x.enabled, x.admitFirst = false, false // the zero value: disabled
	nodes := []fwk.NodeInfo{zoneNode("a", "z1", "p1"), zoneNode("b", "z1")}
	x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
	x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
	if got := calls.Load(); got != 4 || len(x.entries) != 0 {
		t.Errorf("disabled index: %d computes and %d entries, want 4 and 0", got, len(x.entries))
	}
}

// TestIndexOffUnderGenericWorkload: pod-group cycles restore generations,
// so the plugin must not trust them with that gate on.
func TestIndexOffUnderGenericWorkload(t *testing.T) {
	for _, gate := range []bool{false, true} {
		e := newEnv(t, nil, feature.Features{EnableGenericWorkload: gate}, nil, fixtureNodes())
		x := e.pl.caches
		if on := x.existingAnti.enabled && x.incoming.enabled && x.score.enabled; on == gate {
			t.Errorf("GenericWorkload=%v: indexes enabled=%v", gate, on)
		}
	}
}

// TestSignaturesTellInputsApart: inputs that match differently never share
// a signature.
func TestSignaturesTellInputsApart(t *testing.T) {
	term := func(key string, ns []string, sel, nsSel labels.Selector) fwk.AffinityTerm {
		return fwk.AffinityTerm{TopologyKey: key, Namespaces: sets.New(ns...), Selector: sel, NamespaceSelector: nsSel}
	}
	parsed := func(ls *metav1.LabelSelector) labels.Selector {
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	app := parsed(sel("app", "web"))
	encode := map[string]func(*signature){
		"everything":      func(w *signature) { w.term(term(zone, nil, labels.Everything(), labels.Nothing())) },
		"nothing":         func(w *signature) { w.term(term(zone, nil, labels.Nothing(), labels.Nothing())) },
		"app=web":         func(w *signature) { w.term(term(zone, nil, app, labels.Nothing())) },
		"app=web, all ns": func(w *signature) { w.term(term(zone, nil, app, labels.Everything())) },
		"app=web in a":    func(w *signature) { w.term(term(zone, []string{"a"}, app, labels.Nothing())) },
		"app=web in a,b":  func(w *signature) { w.term(term(zone, []string{"a", "b"}, app, labels.Nothing())) },
		"app=web in ab":   func(w *signature) { w.term(term(zone, []string{"ab"}, app, labels.Nothing())) },
		"app=web by host": func(w *signature) { w.term(term(host, nil, app, labels.Nothing())) },
		"app in (web)": func(w *signature) {
			w.term(term(zone, nil, parsed(tu.Selector(nil, tu.SelectorExpr("app", "In", "web"))), labels.Nothing()))
		},
		"nil labels":   func(w *signature) { w.labelSet(nil) },
		"empty labels": func(w *signature) { w.labelSet(map[string]string{}) },
		"labels a=bc":  func(w *signature) { w.labelSet(map[string]string{"a": "bc"}) },
		"labels ab=c":  func(w *signature) { w.labelSet(map[string]string{"ab": "c"}) },
		"weight 1": func(w *signature) {
			w.weightedTerms([]fwk.WeightedAffinityTerm{{AffinityTerm: term(zone, nil, app, labels.Nothing()), Weight: 1}})
		},
		"weight 2": func(w *signature) {
			w.weightedTerms([]fwk.WeightedAffinityTerm{{AffinityTerm: term(zone, nil, app, labels.Nothing()), Weight: 2}})
		},
		"two terms": func(w *signature) {
			w.terms([]fwk.AffinityTerm{term(zone, nil, app, labels.Nothing()), term(zone, nil, app, labels.Nothing())})
		},
		"one term, in list":  func(w *signature) { w.terms([]fwk.AffinityTerm{term(zone, nil, app, labels.Nothing())}) },
		"no terms, then one": func(w *signature) { w.terms(nil); w.terms([]fwk.AffinityTerm{term(zone, nil, app, labels.Nothing())}) },
		"one term, then none": func(w *signature) {
			w.terms([]fwk.AffinityTerm{term(zone, nil, app, labels.Nothing())})
			w.terms(nil)
		},
	}
	seen := map[string]string{}
	for name, enc := range encode {
		var w signature
		enc(&w)
		if other, dup := seen[w.String()]; dup {
			t.Errorf("%q and %q encode alike", name, other)
		}
		seen[w.String()] = name
	}
}

// TestPreFilterStateCopyOnWrite: PreFilter's counts are the index's shared
// sums; AddPod on a clone must not reach them, nor the original state, nor
// the next cycle.
func TestPreFilterStateCopyOnWrite(t *testing.T) {
	pods := []*v1.Pod{placed("default", "web-1", "n1").Label("app", "web").Obj()}
	e := newEnv(t, nil, feature.Features{}, pods, fixtureNodes())
	pod := incoming("default").Label("app", "web").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()
	cs, st := e.preFilter(t, pod)
	if !st.IsSuccess() {
		t.Fatalf("PreFilter = %v", st)
	}
	orig := mustState(t, cs)
	want := orig.antiAffinity.toMap()

	clone := cs.Clone()
	other := placed("default", "web-2", "n3").Label("app", "web").Obj()
	if st := e.pl.AddPod(e.ctx, clone, pod, mustPodInfo(t, other), e.nodeInfo(t, "n3")); !st.IsSuccess() {
		t.Fatalf("AddPod = %v", st)
	}
	if got := mustState(t, clone).antiAffinity; got.get(topologyPair{key: zone, value: "z2"}) != 1 {
		t.Errorf("clone after AddPod: %v, want z2 counted", got)
	}
	if !cmp.Equal(want, orig.antiAffinity.toMap()) {
		t.Errorf("original state changed by AddPod on its clone: %v, want %v", orig.antiAffinity, want)
	}
	cs2, _ := e.preFilter(t, pod)
	if got := mustState(t, cs2).antiAffinity.toMap(); !cmp.Equal(want, got) {
		t.Errorf("next cycle saw the clone's AddPod: %v, want %v", got, want)
	}
}

// TestNodeIndexSitsOutPodGroupCycles: a pod-group cycle assumes pods on
// the snapshot and keeps the node's generation, so the index must neither
// answer it nor learn from it.
func TestNodeIndexSitsOutPodGroupCycles(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	ni := zoneNode("a", "z1", "p1")
	nodes := []fwk.NodeInfo{ni}
	x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)

	// As Snapshot.AssumePod does: one more pod, same generation.
	gen := ni.Generation
	ni.AddPod(placed("default", "member", "a").Obj())
	ni.Generation = gen
	group := framework.NewCycleState()
	group.SetPodGroupSchedulingCycle(framework.NewCycleState())
	if got, want := x.sum(ctx, group, par, "sig", nodes, nil, ops), (podsByZone{"z1": 2}); !cmp.Equal(want, got) {
		t.Errorf("pod-group cycle: %v, want %v", got, want)
	}
	// As Snapshot.ForgetPod does.
	if err := ni.RemovePod(klog.Background(), placed("default", "member", "a").Obj()); err != nil {
		t.Fatal(err)
	}
	ni.Generation = gen
	calls.Store(0)
	if got, want := x.sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops), (podsByZone{"z1": 1}); !cmp.Equal(want, got) {
		t.Errorf("after the pod-group cycle: %v, want %v", got, want)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the index recomputed %d nodes after the pod-group cycle; it should not have learnt from it", n)
	}
}

// TestSignaturesIgnoreLabelsNoTermSelectsOn: pods that differ only in a
// label no existing pod's term selects on (a StatefulSet pod's name,
// scheduler_perf's per-pod signature label) share the index's entries,
// while a label some term selects on splits them and is matched right.
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
	if n := len(e.pl.caches.existingAnti.entries); n != 1 {
		t.Errorf("%d existing anti-affinity entries for two pods that differ only in an unselected label, want 1", n)
	}
	if n := len(e.pl.caches.score.entries); n != 1 {
		t.Errorf("%d score entries for two pods that differ only in an unselected label, want 1", n)
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
// selectors read, share the index's entries, though each namespace has a
// kubernetes.io/metadata.name label of its own (scheduler_perf's
// *WithNSSelector workloads: pods from 100 namespaces). A namespace a term
// lists by name, or one its selector tells apart, splits them and is
// matched right.
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
	entries := func() (int, int) { return len(e.pl.caches.existingAnti.entries), len(e.pl.caches.score.entries) }

	a, aScore := run("a")
	a2, a2Score := run("a2")
	if want := fmt.Sprint(statuses(existingReject, existingReject, pass, pass)); a != want || a2 != want {
		t.Errorf("team=devops namespaces: Filter %s and %s, want %s", a, a2, want)
	}
	if want := scores(-5, -5, 0, 0); !cmp.Equal(want, aScore.raw) || !cmp.Equal(want, a2Score.raw) {
		t.Errorf("team=devops namespaces: raw scores %v and %v, want %v", aScore.raw, a2Score.raw, want)
	}
	if anti, score := entries(); anti != 1 || score != 1 {
		t.Errorf("two namespaces no term tells apart: %d existing anti-affinity and %d score entries, want 1 and 1", anti, score)
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
	if anti, _ := entries(); anti != 3 {
		t.Errorf("%d existing anti-affinity entries after namespaces a, a2, b and qa, want 3", anti)
	}
}

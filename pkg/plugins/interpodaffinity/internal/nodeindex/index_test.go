package nodeindex

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
)

// podsByZone is a test sum: pods per zone label value, with a count of
// compute calls to see what the index recomputes.
type podsByZone map[string]int64

func zoneOps(calls *atomic.Int64) Ops[podsByZone, podsByZone] {
	return Ops[podsByZone, podsByZone]{
		Compute: func(ni fwk.NodeInfo, _ podsByZone) podsByZone {
			calls.Add(1)
			z, ok := ni.Node().Labels[at.Zone]
			if !ok || len(ni.GetPods()) == 0 {
				return nil
			}
			return podsByZone{z: int64(len(ni.GetPods()))}
		},
		NewSum: func() podsByZone { return podsByZone{} },
		Apply: func(sum podsByZone, v podsByZone, sign int64) {
			for z, n := range v {
				if sum[z] += sign * n; sum[z] == 0 {
					delete(sum, z)
				}
			}
		},
		Merge: func(dst, src podsByZone) {
			for z, n := range src {
				dst[z] += n
			}
		},
		Clone: maps.Clone[podsByZone],
		Empty: func(v podsByZone) bool { return len(v) == 0 },
	}
}

// TestNodeIndexFollowsTheNodes evolves a node list the ways a snapshot
// does and checks after every step that the index's sum equals a full scan
// and that only the nodes that changed were recomputed.
func TestNodeIndexFollowsTheNodes(t *testing.T) {
	ctx, par, computed, ops, x := zoneIndex()

	var nodes []fwk.NodeInfo
	for i := range 12 {
		nodes = append(nodes, at.ZoneNode(fmt.Sprintf("n%d", i), fmt.Sprintf("z%d", i%3), fmt.Sprintf("p%d", i)))
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
		got := maps.Clone(x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, gens, ops))
		recomputed := computed.Load()
		want := Scan(ctx, par, "test", nodes, ops)
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
				} else if v := ops.Compute(nodes[i], nil); (s.v == nil) != (len(v) == 0) || (s.v != nil && !cmp.Equal(*s.v, v)) {
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

	nodes[3].(*framework.NodeInfo).AddPod(at.Placed("default", "bound", "n3").Obj())
	check("a pod bound to n3", 1)

	relabelled := nodes[5].Node().DeepCopy()
	relabelled.Labels[at.Zone] = "z9"
	nodes[5].(*framework.NodeInfo).SetNode(relabelled)
	check("n5 moved to another zone", 1)

	// A removal as the snapshot's lists do it: the last node takes the
	// removed one's place, and is found by name there.
	nodes[2] = nodes[len(nodes)-1]
	nodes = nodes[:len(nodes)-1]
	check("n2 removed", 0)

	// A node joining mid-list, as one joins the list of nodes with
	// affinity pods: the ones after it shift, and are found by name.
	nodes = slices.Insert(nodes, 4, fwk.NodeInfo(at.ZoneNode("n20", "z2", "q")))
	check("n20 inserted mid-list", 1)

	// Right after a move, before the positions were numbered again: a node
	// found by name away from where it was looked for, then a node joining
	// while another is listed twice (the whole list is then scanned).
	nodes[1], nodes[6] = nodes[6], nodes[1]
	check("two nodes swapped right after a move", 0)
	nodes = slices.Insert(nodes, 2, fwk.NodeInfo(at.ZoneNode("n21", "z1", "r")))
	nodes = append(nodes, nodes[5])
	check("a node joined and another is listed twice", int64(len(nodes)))
	nodes = nodes[:len(nodes)-1]
	check("listed once again after a move", int64(len(nodes)))

	nodes = append(nodes, at.ZoneNode("n2", "z0"))
	check("n2 re-added, empty", 1)

	// Same name, new NodeInfo: the generation tells them apart.
	nodes[0] = at.ZoneNode("n0", "z0", "x", "y", "z")
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
	twice := fwk.NodeInfo(at.ZoneNode("n22", "z1", "s"))
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
func zoneIndex() (context.Context, fwk.Parallelizer, *atomic.Int64, Ops[podsByZone, podsByZone], *Index[podsByZone, podsByZone]) {
	schedmetrics.Register() // Parallelizer.Until reports a metric
	calls := new(atomic.Int64)
	return context.Background(), parallelize.NewParallelizer(2), calls, zoneOps(calls), &Index[podsByZone, podsByZone]{admitFirst: true}
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
		all = append(all, at.ZoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%4), pods...))
	}
	// a lists every node, b every other one; both change as a snapshot's
	// lists do, one at a time, and are asked about alternately.
	a := slices.Clone(all)
	b := []fwk.NodeInfo{all[1], all[3], all[5], all[7], all[9]}
	changes := []func(){
		func() { b = slices.Insert(b, 1, all[2]) },
		func() { all[5].(*framework.NodeInfo).AddPod(at.Placed("default", "q5", "n5").Obj()) },
		func() { a = slices.Delete(a, 3, 4) },
		func() { b = b[1:] },
		func() { a[0], a[7] = a[7], a[0] },
		func() { b = append(b, at.ZoneNode("n10", "z1", "q10")) },
		func() { a = slices.Insert(a, 0, b[len(b)-1]) },
		func() {},
	}
	for step, change := range changes {
		change()
		for _, l := range []struct {
			sig   string
			nodes []fwk.NodeInfo
		}{{"a", a}, {"b", b}} {
			got := maps.Clone(x.Sum(ctx, framework.NewCycleState(), par, l.sig, l.nodes, nil, ops))
			if want := Scan(ctx, par, "test", l.nodes, ops); !cmp.Equal(want, got) {
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
	ops := Ops[big, *int64]{
		Compute: func(ni fwk.NodeInfo, _ big) big { return big{pods: int64(len(ni.GetPods()))} },
		NewSum:  func() *int64 { return new(int64) },
		Apply:   func(sum *int64, v big, sign int64) { *sum += sign * v.pods },
		Merge:   func(dst, src *int64) { *dst += *src },
		Clone:   func(sum *int64) *int64 { c := *sum; return &c },
		Empty:   func(v big) bool { return v.pods == 0 },
	}
	var nodes []fwk.NodeInfo
	for i := range 2000 {
		var pods []string
		if i%100 == 0 {
			pods = append(pods, fmt.Sprint("p", i))
		}
		nodes = append(nodes, at.ZoneNode(fmt.Sprint("n", i), "z1", pods...))
	}
	x := &Index[big, *int64]{admitFirst: true}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sum := x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
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
		nodes = append(nodes, at.ZoneNode(fmt.Sprint("n", i), "z1", "p"))
	}
	resets := 0
	for i := 3; i < 3+2*numsSlack+10; i++ {
		// The oldest node leaves, a new one joins at the end.
		nodes = append(nodes[1:], at.ZoneNode(fmt.Sprint("n", i), fmt.Sprint("z", i%3), "p"))
		numbered := len(x.nums)
		got := maps.Clone(x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops))
		if want := Scan(ctx, par, "test", nodes, ops); !cmp.Equal(want, got) {
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
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1", "p1"), at.ZoneNode("b", "z2", "p2")}

	first := x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)
	before := maps.Clone(first)
	nodes[0].(*framework.NodeInfo).AddPod(at.Placed("default", "p3", "a").Obj())
	second := x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)

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
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1", "p1"), at.ZoneNode("b", "z2", "p2")}

	for i := range slotsPerNode + 1 {
		x.Sum(ctx, framework.NewCycleState(), par, fmt.Sprint(i), nodes, nil, ops)
	}
	if len(x.entries) != slotsPerNode || x.slots != slotsPerNode*len(nodes) {
		t.Fatalf("%d signatures and %d slots kept, want %d and %d", len(x.entries), x.slots, slotsPerNode, slotsPerNode*len(nodes))
	}
	if _, ok := x.entries["0"]; ok {
		t.Errorf("the least recently used signature was kept")
	}
	calls.Store(0)
	x.Sum(ctx, framework.NewCycleState(), par, "1", nodes, nil, ops)
	x.Sum(ctx, framework.NewCycleState(), par, "0", nodes, nil, ops)
	if got := calls.Load(); got != int64(len(nodes)) {
		t.Errorf("recomputed %d nodes for one kept and one dropped signature, want %d", got, len(nodes))
	}

	// Empty lists cost no slot; the entries are still bounded.
	for i := range maxEntries + 5 {
		x.Sum(ctx, framework.NewCycleState(), par, fmt.Sprint("empty", i), nil, nil, ops)
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
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1", "p1"), at.ZoneNode("b", "z2", "p2"), at.ZoneNode("c", "z1", "p3")}
	want := podsByZone{"z1": 2, "z2": 1}
	sum := func(sig string) {
		t.Helper()
		if got := x.Sum(ctx, framework.NewCycleState(), par, sig, nodes, nil, ops); !cmp.Equal(want, got) {
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
	x = &Index[podsByZone, podsByZone]{}
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

// TestNodeIndexPassThrough: with the index off (PassThrough) nothing is
// kept and every call is a full scan.
func TestNodeIndexPassThrough(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	off := PassThrough[podsByZone, podsByZone]{Op: "test"}
	nodes := []fwk.NodeInfo{at.ZoneNode("a", "z1", "p1"), at.ZoneNode("b", "z1")}
	for range 2 {
		if _, ok := off.Lookup(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops); ok {
			t.Fatal("pass-through Lookup answered")
		}
		if got, want := off.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops), (podsByZone{"z1": 1}); !cmp.Equal(want, got) {
			t.Errorf("pass-through Sum = %v, want %v", got, want)
		}
	}
	if got := calls.Load(); got != 4 || len(x.entries) != 0 {
		t.Errorf("pass-through: %d computes, want 4 (every call a scan); the index: %d entries, want 0", got, len(x.entries))
	}
}

// TestNodeIndexSitsOutPodGroupCycles: a pod-group cycle assumes pods on
// the snapshot and keeps the node's generation, so the index must neither
// answer it nor learn from it.
func TestNodeIndexSitsOutPodGroupCycles(t *testing.T) {
	ctx, par, calls, ops, x := zoneIndex()
	ni := at.ZoneNode("a", "z1", "p1")
	nodes := []fwk.NodeInfo{ni}
	x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops)

	// As Snapshot.AssumePod does: one more pod, same generation.
	gen := ni.Generation
	ni.AddPod(at.Placed("default", "member", "a").Obj())
	ni.Generation = gen
	group := framework.NewCycleState()
	group.SetPodGroupSchedulingCycle(framework.NewCycleState())
	if got, want := x.Sum(ctx, group, par, "sig", nodes, nil, ops), (podsByZone{"z1": 2}); !cmp.Equal(want, got) {
		t.Errorf("pod-group cycle: %v, want %v", got, want)
	}
	// As Snapshot.ForgetPod does.
	if err := ni.RemovePod(klog.Background(), at.Placed("default", "member", "a").Obj()); err != nil {
		t.Fatal(err)
	}
	ni.Generation = gen
	calls.Store(0)
	if got, want := x.Sum(ctx, framework.NewCycleState(), par, "sig", nodes, nil, ops), (podsByZone{"z1": 1}); !cmp.Equal(want, got) {
		t.Errorf("after the pod-group cycle: %v, want %v", got, want)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the index recomputed %d nodes after the pod-group cycle; it should not have learnt from it", n)
	}
}

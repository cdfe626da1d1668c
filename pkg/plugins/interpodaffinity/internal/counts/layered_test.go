package counts

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// contents reads every key of the test's key space through get.
func contents[V comparable](m *layered[int, V], keys int) map[int]V {
	out := map[int]V{}
	for k := range keys {
		if v, ok := m.Get(k); ok {
			out[k] = v
		}
	}
	return out
}

// handedOutMap is a map handed out, with what it held then.
type handedOutMap[V comparable] struct {
	m    layered[int, V]
	want map[int]V
}

// handOut hands m out, sealed, frozen or neither at random, with what it
// holds (want), and makes m a fork of it to go on with.
func handOut[V comparable](rng *rand.Rand, m *layered[int, V], want map[int]V, out []handedOutMap[V]) []handedOutMap[V] {
	switch rng.IntN(3) {
	case 0:
		m.Seal()
	case 1:
		m.Freeze()
	}
	out = append(out, handedOutMap[V]{m: *m, want: maps.Clone(want)})
	*m = m.Fork()
	return out
}

// TestLayeredIsAMap drives a layered map and a plain map through the same
// random sets, forking at random as a state does when it changes a sum
// handed out, and checks after every step that the two agree and that every
// fork handed out still reads what it read when it was handed out.
func TestLayeredIsAMap(t *testing.T) {
	const keys = 300
	rng := rand.New(rand.NewPCG(1, 2))
	m := newLayered[int, int]()
	want := map[int]int{}
	var handedOut []handedOutMap[int]
	for step := range 20000 {
		switch r := rng.IntN(100); {
		case r < 3:
			// Hand the current map out and go on with a fork (of the map
			// or of a copy handed out earlier, which still reads as it
			// did).
			handedOut = handOut(rng, &m, want, handedOut)
			if len(handedOut) > 1 && rng.IntN(4) == 0 {
				h := handedOut[rng.IntN(len(handedOut))]
				if f := h.m.Fork(); !maps.Equal(contents(&f, keys), h.want) || f.Len() != len(h.want) {
					t.Fatalf("step %d: a late fork of a map handed out reads %v, the map held %v", step, contents(&f, keys), h.want)
				}
			}
		case r < 40:
			// Delete (the zero value), often a key that is present.
			k := rng.IntN(keys)
			m.Set(k, 0)
			delete(want, k)
		default:
			k, v := rng.IntN(keys), 1+rng.IntN(5)
			m.Set(k, v)
			want[k] = v
		}
		if got := contents(&m, keys); !maps.Equal(got, want) {
			t.Fatalf("step %d: layered holds %v, want %v", step, got, want)
		}
		if m.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, m.Len(), len(want))
		}
		if got := maps.Collect(m.All()); !maps.Equal(got, want) {
			t.Fatalf("step %d: all() yields %v, want %v", step, got, want)
		}
	}
	if len(handedOut) < 100 {
		t.Fatalf("only %d forks: the test exercised too little", len(handedOut))
	}
	folded := 0
	for i, h := range handedOut {
		if got := contents(&h.m, keys); !maps.Equal(got, h.want) || h.m.Len() != len(h.want) {
			t.Fatalf("fork %d changed after it was handed out: holds %v (len %d), held %v", i, got, h.m.Len(), h.want)
		}
		if len(h.m.delta) == 0 {
			folded++
		}
	}
	if folded == 0 {
		t.Fatalf("no fork folded its delta into a new base: the fold was not exercised")
	}
}

// TestTopologyCountsIsACountMap drives TopologyCounts and a plain count
// map through the same random adds and removals (removals of uncounted
// pods included, which leave negative counts), forking at random as AddPod
// does, and checks after every step the counts, their
// size, and coversNode for every node against a scan of the plain map.
func TestTopologyCountsIsACountMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{"zone", "rack", "host"}
	var nodes []map[string]string
	for i := range 40 {
		nl := map[string]string{"other": "x"}
		for j, k := range keys {
			if (i+j)%5 != 0 { // some nodes lack some keys
				nl[k] = fmt.Sprintf("%s-%d", k, rng.IntN(6))
			}
		}
		nodes = append(nodes, nl)
	}
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, nl := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Labels: nl}})
		infos[i] = ni
	}
	covers := func(want map[topology.Pair]int64, nl map[string]string) bool {
		for p, n := range want {
			if n > 0 && nl[p.Key] == p.Value {
				if _, ok := nl[p.Key]; ok {
					return true
				}
			}
		}
		return false
	}
	c := NewTopologyCounts()
	want := map[topology.Pair]int64{}
	type lent struct {
		c    TopologyCounts
		want map[topology.Pair]int64
	}
	var handedOut []lent
	for step := range 5000 {
		if rng.IntN(100) < 3 {
			handedOut = append(handedOut, lent{c: c, want: maps.Clone(want)})
			c = c.Fork()
		}
		nl, key := nodes[rng.IntN(len(nodes))], keys[rng.IntN(len(keys))]
		delta := int64(1)
		if rng.IntN(100) < 45 {
			delta = -1
		}
		c.Add(nl, key, delta)
		if v, ok := nl[key]; ok {
			p := topology.Pair{Key: key, Value: v}
			if want[p] += delta; want[p] == 0 {
				delete(want, p)
			}
		}
		if got := c.ToMap(); !maps.Equal(got, want) || c.Len() != len(want) {
			t.Fatalf("step %d: counts %v (len %d), want %v", step, got, c.Len(), want)
		}
		for i, nl := range nodes {
			nt := topology.Of(nil, infos[i])
			if got, w := c.CoversNode(&nt), covers(want, nl); got != w {
				t.Fatalf("step %d: coversNode(node %d %v) = %v, want %v; counts %v", step, i, nl, got, w, want)
			}
		}
	}
	if len(handedOut) < 50 {
		t.Fatalf("only %d forks: the test exercised too little", len(handedOut))
	}
	for i, h := range handedOut {
		if got := h.c.ToMap(); !maps.Equal(got, h.want) {
			t.Fatalf("fork %d changed after it was handed out: %v, held %v", i, got, h.want)
		}
	}
}

// TestFreezeFoldsOnceOnFirstFork: a frozen map with a fold due is not
// folded until a fork needs it; then one fold, made once however many
// goroutines fork its copies at once, serves every fork, and each fork
// is a map of its own.
func TestFreezeFoldsOnceOnFirstFork(t *testing.T) {
	m := newLayered[int, int]()
	for k := range 1000 {
		m.Set(k, 1)
	}
	m.Seal() // all delta over an empty base: the base as it is
	want := map[int]int{}
	for k := range 1000 {
		want[k] = 1
	}
	m = m.Fork()
	for k := 1000; k < 2000; k++ {
		m.Set(k, 2)
		want[k] = 2
	}
	m.Set(0, 0)
	delete(want, 0)
	if !m.foldDue() {
		t.Fatal("the test's map has no fold due")
	}
	base, delta := m.base, m.delta
	m.Freeze()
	if !sameMap(m.base, base) || !sameMap(m.delta, delta) || m.fold == nil {
		t.Fatal("Freeze folded (or dropped) the layers instead of leaving the fold to a fork")
	}
	if got := contents(&m, 2000); !maps.Equal(got, want) || m.Len() != len(want) {
		t.Fatalf("frozen map reads %d keys (len %d), want %d", len(got), m.Len(), len(want))
	}
	const forks = 8
	got := make([]layered[int, int], forks)
	done := make(chan struct{})
	for i := range forks {
		c := m // the copies a cycle's clones hold
		go func() {
			defer func() { done <- struct{}{} }()
			got[i] = c.Fork()
		}()
	}
	for range forks {
		<-done
	}
	for i, f := range got {
		if !sameMap(f.base, got[0].base) || len(f.delta) != 0 {
			t.Errorf("fork %d: base not the one fold, or a delta copied (%d keys)", i, len(f.delta))
		}
		if c := contents(&f, 2000); !maps.Equal(c, want) || f.Len() != len(want) {
			t.Errorf("fork %d reads %d keys (len %d), want %d", i, len(c), f.Len(), len(want))
		}
	}
	// Forks are changed apart, and the frozen map reads as it did.
	got[0].Set(5, 9)
	if v, _ := got[1].Get(5); v != 1 {
		t.Errorf("a change to one fork shows in another: %d", v)
	}
	if v, _ := m.Get(5); v != 1 {
		t.Errorf("a change to a fork shows in the frozen map: %d", v)
	}
}

// sameMap reports whether a and b are the same map (not equal ones).
func sameMap(a, b map[int]int) bool { return fmt.Sprintf("%p", a) == fmt.Sprintf("%p", b) }

// TestAddCountIsACountMap drives addCount (with reserve now and then, as
// AddDomains calls it) and a plain count map through the same random
// additions, negative ones and ones back to zero included, over forks
// that keep a base (more keys than a delta holds before it is folded),
// and checks after every step the counts, their size, what addCount
// reported, and that every fork handed out still reads as it did.
func TestAddCountIsACountMap(t *testing.T) {
	const keys = 300
	rng := rand.New(rand.NewPCG(7, 8))
	m := newLayered[int, int64]()
	want := map[int]int64{}
	var handedOut []handedOutMap[int64]
	overBase := 0
	for step := range 20000 {
		switch r := rng.IntN(100); {
		case r < 3:
			handedOut = handOut(rng, &m, want, handedOut)
		case r < 5:
			m.reserve(rng.IntN(2 * keys))
		default:
			k := rng.IntN(keys)
			d := int64(1 + rng.IntN(3))
			if rng.IntN(100) < 45 {
				// Often exactly back to zero, which deletes k.
				if d = -d; want[k] > 0 && rng.IntN(2) == 0 {
					d = -want[k]
				}
			}
			if len(m.base) > 0 {
				overBase++
			}
			had, has := addCount(&m, k, d)
			_, wantHad := want[k]
			if want[k] += d; want[k] == 0 {
				delete(want, k)
			}
			_, wantHas := want[k]
			if had != wantHad || has != wantHas {
				t.Fatalf("step %d: addCount(%d, %d) reported had %v has %v, want %v %v", step, k, d, had, has, wantHad, wantHas)
			}
		}
		if got := contents(&m, keys); !maps.Equal(got, want) || m.Len() != len(want) {
			t.Fatalf("step %d: counts %v (len %d), want %v", step, got, m.Len(), want)
		}
		if got := maps.Collect(m.All()); !maps.Equal(got, want) {
			t.Fatalf("step %d: All yields %v, want %v", step, got, want)
		}
	}
	if len(handedOut) < 100 || overBase < 10000 {
		t.Fatalf("%d forks, %d additions over a base: the test exercised too little", len(handedOut), overBase)
	}
	for i, h := range handedOut {
		if got := contents(&h.m, keys); !maps.Equal(got, h.want) || h.m.Len() != len(h.want) {
			t.Fatalf("fork %d changed after it was handed out: holds %v, held %v", i, got, h.want)
		}
	}
}

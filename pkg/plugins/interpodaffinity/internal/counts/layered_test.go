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
func contents(m *layered[int, int], keys int) map[int]int {
	out := map[int]int{}
	for k := range keys {
		if v, ok := m.Get(k); ok {
			out[k] = v
		}
	}
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
	type lent struct {
		m    layered[int, int]
		want map[int]int
	}
	var handedOut []lent
	for step := range 20000 {
		switch r := rng.IntN(100); {
		case r < 3:
			// Hand the current map out, sealed or not, and go on
			// with a fork.
			if rng.IntN(2) == 0 {
				m.Seal()
			}
			handedOut = append(handedOut, lent{m: m, want: maps.Clone(want)})
			m = m.Fork()
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

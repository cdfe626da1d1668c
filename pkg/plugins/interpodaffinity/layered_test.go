package interpodaffinity

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// contents reads every key of the test's key space through get.
func contents(m *layered[int, int], keys int) map[int]int {
	out := map[int]int{}
	for k := range keys {
		if v, ok := m.get(k); ok {
			out[k] = v
		}
	}
	return out
}

// TestLayeredIsAMap drives a layered map and a plain map through the same
// random sets, forking at random as the index does when it has handed a
// sum out, and checks after every step that the two agree and that every
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
			// Hand the current map out and go on with a fork.
			handedOut = append(handedOut, lent{m: m, want: maps.Clone(want)})
			m = m.fork()
		case r < 40:
			// Delete (the zero value), often a key that is present.
			k := rng.IntN(keys)
			m.set(k, 0)
			delete(want, k)
		default:
			k, v := rng.IntN(keys), 1+rng.IntN(5)
			m.set(k, v)
			want[k] = v
		}
		if got := contents(&m, keys); !maps.Equal(got, want) {
			t.Fatalf("step %d: layered holds %v, want %v", step, got, want)
		}
		if m.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, m.len(), len(want))
		}
	}
	if len(handedOut) < 100 {
		t.Fatalf("only %d forks: the test exercised too little", len(handedOut))
	}
	folded := 0
	for i, h := range handedOut {
		if got := contents(&h.m, keys); !maps.Equal(got, h.want) || h.m.len() != len(h.want) {
			t.Fatalf("fork %d changed after it was handed out: holds %v (len %d), held %v", i, got, h.m.len(), h.want)
		}
		if len(h.m.delta) == 0 {
			folded++
		}
	}
	if folded == 0 {
		t.Fatalf("no fork folded its delta into a new base: the fold was not exercised")
	}
}

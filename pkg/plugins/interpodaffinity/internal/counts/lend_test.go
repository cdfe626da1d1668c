package counts

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// randomDomains is counts of key over up to n domains, with their model.
func randomDomains(r *rand.Rand, key string, n int) (*Domains, map[topology.Pair]int64) {
	d, model := &Domains{}, map[topology.Pair]int64{}
	for range r.IntN(3 * n) {
		p := topology.Pair{Key: key, Value: fmt.Sprint("v", r.IntN(n))}
		delta := int64(1 + r.IntN(3))
		if model[p] > 0 && r.IntN(2) == 0 {
			delta = -min(delta, model[p])
		}
		d.Add(p, delta)
		if model[p] += delta; model[p] == 0 {
			delete(model, p)
		}
	}
	return d, model
}

// TestDomainsLentStayAsLent: a map lent to a sum keeps what it held while
// the Domains it came from goes on changing, and the Domains keeps
// counting from where it was.
func TestDomainsLentStayAsLent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		d, model := randomDomains(r, "k", 20)
		var total int64
		for _, n := range model {
			total += n
		}
		if d.Len() != len(model) || d.total != total || !maps.Equal(maps.Collect(d.All()), model) {
			t.Fatalf("domains %v (total %d), model %v (total %d)", maps.Collect(d.All()), d.total, model, total)
		}
		var c TopologyCounts
		c.AddDomains("k", d)
		lent := maps.Clone(model)
		more, _ := randomDomains(r, "k", 20)
		for p, n := range more.All() {
			d.Add(p, n)
			model[p] += n
		}
		d.Add(topology.Pair{Key: "k", Value: "v0"}, -model[topology.Pair{Key: "k", Value: "v0"}])
		delete(model, topology.Pair{Key: "k", Value: "v0"})
		if got := c.ToMap(); !maps.Equal(got, lent) {
			t.Fatalf("the sum changed with the domains it borrowed: %v, was %v", got, lent)
		}
		if !maps.Equal(maps.Collect(d.All()), model) {
			t.Fatalf("domains %v after lending, model %v", maps.Collect(d.All()), model)
		}
	}
}

// TestAddDomainsEqualsAddTo: adding a table's counts whole (lent or not)
// makes the sum that adding each domain does, for PreFilter's counts (also
// once forked and changed, as AddPod does) and PreScore's weights (also
// with more maps than are lent), and leaves the counts lent unchanged.
func TestAddDomainsEqualsAddTo(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	keys := []string{"zone", "host"}
	for range 300 {
		n := 1 + r.IntN(maxLentWeights+3)
		srcs := make([]*Domains, n)
		models := make([]map[topology.Pair]int64, n)
		for i := range srcs {
			srcs[i], models[i] = randomDomains(r, keys[r.IntN(2)], 1+r.IntN(40))
		}
		srcKey := func(i int) string {
			for p := range models[i] {
				return p.Key
			}
			return "zone"
		}

		got, want := NewTopologyCounts(), NewTopologyCounts()
		gotW, wantW := NewScoreSum(), NewScoreSum()
		for i, src := range srcs {
			got.AddDomains(srcKey(i), src)
			perPair := int64(r.IntN(7) - 3)
			gotW.AddDomains(srcKey(i), src, perPair, r.IntN(3) > 0)
			for p, c := range models[i] {
				want.AddTo(p, c)
				wantW.AddTo(p, perPair*c, c)
			}
		}
		got.Seal()
		want.Seal()
		gotW.Seal()
		wantW.Seal()
		if !maps.Equal(got.ToMap(), want.ToMap()) || got.Len() != want.Len() || !maps.Equal(keyMap(got.Keys()), keyMap(want.Keys())) {
			t.Fatalf("counts %v keys %v, added one by one %v keys %v", got.ToMap(), got.Keys(), want.ToMap(), want.Keys())
		}
		if !maps.Equal(gotW.ToMap(), wantW.ToMap()) || gotW.Empty() != (len(wantW.ToMap()) == 0) ||
			!maps.Equal(keyMap(gotW.Keys()), keyMap(wantW.Keys())) {
			t.Fatalf("weights %v keys %v, added one by one %v keys %v", gotW.ToMap(), gotW.Keys(), wantW.ToMap(), wantW.Keys())
		}
		lw, wl := gotW.Lookup(), wantW.Lookup()
		lc := got.Lookup()
		for _, k := range keys {
			for v := range 41 {
				p := topology.Pair{Key: k, Value: fmt.Sprint("v", v)}
				if lw.Get(p) != wl.Get(p) {
					t.Fatalf("weight of %v: %v, added one by one %v", p, lw.Get(p), wl.Get(p))
				}
				if lc.Get(p) != want.Get(p) {
					t.Fatalf("count of %v: %v, added one by one %v", p, lc.Get(p), want.Get(p))
				}
			}
		}

		// A cycle's own changes to the counts (AddPod, RemovePod) go to
		// a fork, never to the counts lent.
		f := got.Fork()
		for range 10 {
			i := r.IntN(n)
			for p, c := range models[i] {
				f.AddTo(p, -c)
				break
			}
			f.AddTo(topology.Pair{Key: srcKey(i), Value: fmt.Sprint("v", r.IntN(40))}, 1)
		}
		for i, src := range srcs {
			if !maps.Equal(maps.Collect(src.All()), models[i]) {
				t.Fatalf("counts lent changed: %v, were %v", maps.Collect(src.All()), models[i])
			}
		}
		if !maps.Equal(got.ToMap(), want.ToMap()) {
			t.Fatalf("the sum changed with its fork: %v, was %v", got.ToMap(), want.ToMap())
		}
	}
}

// keyMap is a KeyTally as a map, whose order does not matter.
func keyMap(t KeyTally) map[string]int64 {
	m := map[string]int64{}
	for _, kc := range t {
		m[kc.Key] = kc.N
	}
	return m
}

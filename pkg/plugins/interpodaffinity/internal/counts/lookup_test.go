package counts

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// TestLookupReadsAsLayered drives layered sums of domains through random
// changes, forking and sealing as a state does when it changes a sum handed
// out, and checks that a lookup of each sum handed out answers as the sum's
// own get, for every domain of the key space and for absent ones, then and
// after the sum's forks have changed further. The key spaces cover sums
// compared one by one (at most maxSmallLookup domains) and hashed ones with
// a delta, and values that differ in their last bytes only, in their length
// only, or are shorter than three bytes.
func TestLookupReadsAsLayered(t *testing.T) {
	for _, domains := range []int{2, maxSmallLookup, maxSmallLookup + 1, 40, 400} {
		t.Run(fmt.Sprintf("domains=%d", domains), func(t *testing.T) {
			var space []topology.Pair
			for i := range domains {
				space = append(space, topology.Pair{Key: "zone", Value: fmt.Sprintf("n-%d", i)})
			}
			space = append(space,
				topology.Pair{Key: "zone", Value: ""}, topology.Pair{Key: "zone", Value: "a"},
				topology.Pair{Key: "zone", Value: "ab"}, topology.Pair{Key: "rack", Value: "n-1"})
			absent := []topology.Pair{{Key: "zone", Value: "n-x"}, {Key: "host", Value: "n-1"}, {Key: "zone", Value: "n-10000"}}
			rng := rand.New(rand.NewPCG(uint64(domains), 7))
			m := newLayered[topology.Pair, int64]()
			type lent struct {
				m    layered[topology.Pair, int64]
				look Lookup[int64]
			}
			var handedOut []lent
			check := func(step int, h lent) {
				t.Helper()
				for _, p := range append(space, absent...) {
					want, _ := h.m.Get(p)
					if got := h.look.Get(p); got != want {
						t.Fatalf("step %d: lookup of %v = %d, layered get %d (small %v, %d domains)", step, p, got, want, h.look.isSmall, h.m.Len())
					}
				}
			}
			smallSeen, deltaSeen := false, false
			for step := range 3000 {
				switch r := rng.IntN(100); {
				case r < 4:
					if rng.IntN(2) == 0 {
						m.Seal()
					}
					h := lent{m: m, look: LookupOf(&m)}
					smallSeen = smallSeen || h.look.isSmall
					deltaSeen = deltaSeen || h.look.delta != nil
					check(step, h)
					handedOut = append(handedOut, h)
					m = m.Fork()
				case r < 35:
					m.Set(space[rng.IntN(len(space))], 0)
				default:
					m.Set(space[rng.IntN(len(space))], 1+rng.Int64N(5))
				}
				if step%500 == 0 {
					for _, h := range handedOut {
						check(step, h)
					}
				}
			}
			if domains <= maxSmallLookup && !smallSeen || domains >= 40 && !deltaSeen {
				t.Fatalf("small lookups %v, lookups with a delta %v: the test proves nothing", smallSeen, deltaSeen)
			}
		})
	}
}

// TestDomainBitSpreads checks that node names differing in their last
// characters fall on many bits: a lookup whose changed domains share the
// bits of most others would hash twice for them.
func TestDomainBitSpreads(t *testing.T) {
	seen := map[uint8]bool{}
	for i := range 1000 {
		seen[domainBit(fmt.Sprintf("node-%d", i))] = true
	}
	if len(seen) < 200 {
		t.Errorf("1000 node names fall on %d of 256 bits, want at least 200", len(seen))
	}
}

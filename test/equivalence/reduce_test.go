package equivalence

import (
	"slices"
	"testing"
)

// TestReduceGreedily: the shrinkers' loop keeps the first reduction that
// still reproduces, starts over from it, never tries a reduction that
// changes nothing, never mutates what it was given, and stops at the
// attempt budget.
func TestReduceGreedily(t *testing.T) {
	// Reductions of a list: drop one element.
	drops := func(xs []int) []func([]int) bool {
		var out []func([]int) bool
		for i := range xs {
			out = append(out, func(c []int) bool {
				copy(c[i:], c[i+1:])
				c[len(c)-1] = -1 // marks the dropped tail; filtered by still
				return true
			})
		}
		return out
	}
	trim := func(c []int) []int { return slices.DeleteFunc(slices.Clone(c), func(v int) bool { return v < 0 }) }
	clone := func(xs []int) []int { return slices.Clone(xs) }
	// A "mismatch" reproduces while 3 and 7 are both present.
	reproduces := func(c []int) bool { return slices.Contains(c, 3) && slices.Contains(c, 7) }

	in := []int{1, 2, 3, 4, 5, 6, 7, 8}
	attempts := 0
	got := reduceGreedily(in, &attempts, 1000, drops, clone, func(c []int) bool {
		attempts++
		return reproduces(c)
	})
	if want := []int{3, 7}; !slices.Equal(trim(got), want) {
		t.Errorf("reduced to %v, want %v", trim(got), want)
	}
	if !slices.Equal(in, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("the input was changed: %v", in)
	}

	// A budget stops it early, with the reductions found so far kept.
	attempts = 0
	got = reduceGreedily(in, &attempts, 2, drops, clone, func(c []int) bool {
		attempts++
		return reproduces(c)
	})
	if attempts != 2 {
		t.Errorf("%d attempts, want the budget of 2", attempts)
	}
	if n := len(trim(got)); n != len(in)-2 {
		t.Errorf("after 2 attempts %d elements left, want %d", n, len(in)-2)
	}

	// A reduction that changes nothing is not replayed.
	attempts = 0
	noop := func([]int) []func([]int) bool { return []func([]int) bool{func([]int) bool { return false }} }
	reduceGreedily(in, &attempts, 10, noop, clone, func([]int) bool { attempts++; return true })
	if attempts != 0 {
		t.Errorf("%d replays of reductions that changed nothing, want 0", attempts)
	}
}

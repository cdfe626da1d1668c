package equivalence

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// emptyPaths lists v's empty-but-not-nil maps and slices.
func emptyPaths(v any) []string {
	var out []string
	walkEmpty(reflect.ValueOf(v).Elem(), "", func(p string) { out = append(out, p) })
	return out
}

// TestLosslessYAML: a scenario and a sequence survive the YAML round trip,
// including uint64 seeds above 2^53 and empty-but-not-nil maps and slices
// (which equality.Semantic does not tell from nil, hence emptyPaths).
func TestLosslessYAML(t *testing.T) {
	sawEmpty := false
	for i := range uint64(20) {
		sc := Generate(math.MaxUint64-i, i)
		got := CloneScenario(sc)
		sawEmpty = sawEmpty || len(emptyPaths(sc)) > 0
		if !slices.Equal(emptyPaths(got), emptyPaths(sc)) {
			t.Fatalf("scenario %d: empty non-nil values %v became %v", i, emptyPaths(sc), emptyPaths(got))
		}
		if !equality.Semantic.DeepEqual(got, sc) {
			t.Fatalf("scenario %d changed in the round trip:\n%s", i, scenarioYAML(sc))
		}
		seq := GenerateSequence(math.MaxUint64-i, i, SequenceOptions{Steps: 30, MaxNodes: 8})
		gotSeq := CloneSequence(seq)
		if !slices.Equal(emptyPaths(gotSeq), emptyPaths(seq)) || !equality.Semantic.DeepEqual(gotSeq, seq) {
			t.Fatalf("sequence %d changed in the round trip", i)
		}
	}
	if !sawEmpty {
		t.Errorf("no generated scenario had an empty non-nil value: the round trip of those is untested")
	}
}

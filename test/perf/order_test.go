package perf

import (
	"regexp"
	"slices"
	"testing"
)

func TestPlanIsABBAPerCase(t *testing.T) {
	all := []Case{
		{Name: "SchedulingPodAffinity", Workloads: []Workload{{Name: "500Nodes"}, {Name: "5000Nodes"}}},
		{Name: "SchedulingPodMatchingAntiAffinity", Workloads: []Workload{{Name: "500Nodes"}, {Name: "5000Nodes_5000Pods"}}},
		{Name: "SchedulingBasic", Workloads: []Workload{{Name: "5000Nodes"}}},
		{Name: "SchedulingNodeAffinity", Workloads: []Workload{{Name: "5000Nodes"}}},
	}
	runs, skipped := Plan(all, regexp.MustCompile(`^(Scheduling.*Affinity|SchedulingBasic)$`), "5000Nodes", 2)
	var got []string
	for _, r := range runs {
		got = append(got, r.Case+"/"+r.Name())
	}
	want := []string{
		"SchedulingPodAffinity/r1-upstream", "SchedulingPodAffinity/r1-ours",
		"SchedulingPodAffinity/r2-ours", "SchedulingPodAffinity/r2-upstream",
		"SchedulingBasic/r1-upstream", "SchedulingBasic/r1-ours",
		"SchedulingBasic/r2-ours", "SchedulingBasic/r2-upstream",
		"SchedulingNodeAffinity/r1-upstream", "SchedulingNodeAffinity/r1-ours",
		"SchedulingNodeAffinity/r2-ours", "SchedulingNodeAffinity/r2-upstream",
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(skipped, []string{"SchedulingPodMatchingAntiAffinity"}) {
		t.Errorf("skipped = %q, want the case without a 5000Nodes workload", skipped)
	}
}

func TestRunOrderBalancesOverEvenRepeats(t *testing.T) {
	for _, repeats := range []int{2, 4, 6} {
		first := map[Profile]int{}
		for rep := 1; rep <= repeats; rep++ {
			order := RunOrder(rep)
			if len(order) != len(Profiles) {
				t.Fatalf("RunOrder(%d) = %v, want every profile once", rep, order)
			}
			first[order[0]]++
		}
		if first[Upstream] != first[Ours] {
			t.Errorf("%d repeats: first runs %v, want balanced", repeats, first)
		}
	}
}

func TestRunBenchPatternSelectsOnlyThatRun(t *testing.T) {
	r := Run{Case: "SchedulingBasic", Workload: "5000Nodes", Rep: 2, Profile: Ours}
	levels := regexp.MustCompile("/").Split(r.BenchPattern(), -1)
	names := []string{"BenchmarkPerfScheduling", "SchedulingBasic", "r2-ours", "SchedulingBasic", "5000Nodes"}
	if len(levels) != len(names) {
		t.Fatalf("pattern %q has %d levels, want %d", r.BenchPattern(), len(levels), len(names))
	}
	for i, name := range names {
		if !regexp.MustCompile(levels[i]).MatchString(name) {
			t.Errorf("level %d %q does not match %q", i, levels[i], name)
		}
	}
	// The neighbours must not match: another repeat, profile, scale.
	for i, other := range []string{"", "SchedulingBasicX", "r2-upstream", "", "5000Nodes_10000Pods"} {
		if other != "" && regexp.MustCompile(levels[i]).MatchString(other) {
			t.Errorf("level %d %q also matches %q", i, levels[i], other)
		}
	}
}

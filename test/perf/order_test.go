package perf

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestPlanIsABBAPerCase(t *testing.T) {
	all := []Case{
		{Name: "SchedulingPodAffinity", Workloads: []Workload{{Name: "500Nodes"}, {Name: "5000Nodes"}}},
		{Name: "SchedulingPodMatchingAntiAffinity", Workloads: []Workload{{Name: "500Nodes"}, {Name: "5000Nodes_5000Pods"}}},
		{Name: "SchedulingBasic", Workloads: []Workload{{Name: "5000Nodes"}}},
		{Name: "SchedulingNodeAffinity", Workloads: []Workload{{Name: "5000Nodes"}}},
	}
	runs, skipped := Plan(all, regexp.MustCompile(`^(Scheduling.*Affinity|SchedulingBasic)$`), "5000Nodes", 2, AllProfiles())
	var got []string
	for _, r := range runs {
		got = append(got, r.Case+"/"+r.Name())
	}
	var want []string
	for _, c := range []string{"SchedulingPodAffinity", "SchedulingBasic", "SchedulingNodeAffinity"} {
		for _, run := range []string{"r1-upstream", "r1-ours", "r1-floor", "r2-floor", "r2-ours", "r2-upstream"} {
			want = append(want, c+"/"+run)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(skipped, []string{"SchedulingPodMatchingAntiAffinity"}) {
		t.Errorf("skipped = %q, want the case without a 5000Nodes workload", skipped)
	}
}

// Over an even number of repeats, every profile must hold every position
// in the sequence equally often: none always runs first, or last, or
// after the same neighbour only.
func TestRunOrderBalancesOverEvenRepeats(t *testing.T) {
	for _, profiles := range [][]Profile{AllProfiles(), {Upstream, Ours}, {Ours, Floor}, {Upstream, Floor}} {
		for _, repeats := range []int{2, 4, 6} {
			position := map[Profile]map[int]int{}
			for rep := 1; rep <= repeats; rep++ {
				order := RunOrder(rep, profiles)
				if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(profiles))) {
					t.Fatalf("RunOrder(%d, %v) = %v, want every profile once", rep, profiles, order)
				}
				for i, p := range order {
					if position[p] == nil {
						position[p] = map[int]int{}
					}
					position[p][i]++
				}
			}
			// Balanced: each profile's positions sum to the same total.
			sums := map[Profile]int{}
			for p, at := range position {
				for i, n := range at {
					sums[p] += i * n
				}
			}
			for _, p := range profiles {
				if sums[p] != sums[profiles[0]] {
					t.Errorf("%v, %d repeats: positions %v, want the same mean position for every profile", profiles, repeats, position)
					break
				}
			}
			for _, p := range profiles {
				if len(profiles) > 1 && (position[p][0] == repeats || position[p][len(profiles)-1] == repeats) {
					t.Errorf("%v, %d repeats: %s always at one end: %v", profiles, repeats, p, position[p])
				}
			}
		}
	}
}

func TestPlanRunsOnlyChosenProfiles(t *testing.T) {
	all := []Case{{Name: "SchedulingBasic", Workloads: []Workload{{Name: "500Nodes"}}}}
	runs, _ := Plan(all, regexp.MustCompile(".*"), "500Nodes", 2, []Profile{Ours, Floor})
	var got []string
	for _, r := range runs {
		got = append(got, r.Name())
	}
	if want := []string{"r1-ours", "r1-floor", "r2-floor", "r2-ours"}; !slices.Equal(got, want) {
		t.Errorf("plan = %q, want %q", got, want)
	}
}

func TestParseProfiles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Profile
	}{
		{"upstream,ours,floor", []Profile{Upstream, Ours, Floor}},
		// The order given does not matter: RunOrder owns the order.
		{"floor, upstream", []Profile{Upstream, Floor}},
		{"ours,ours", []Profile{Ours}},
		{"floor", []Profile{Floor}},
	} {
		got, err := ParseProfiles(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseProfiles(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, err := ParseProfiles(JoinProfiles(got, ",")); err != nil || !slices.Equal(back, got) {
			t.Errorf("ParseProfiles(JoinProfiles(%v)) = %v, %v", got, back, err)
		}
	}
	for _, in := range []string{"upstream,flor", "", " , ", "Ours"} {
		_, err := ParseProfiles(in)
		if err == nil {
			t.Errorf("ParseProfiles(%q): no error", in)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "upstream, ours, floor") {
			t.Errorf("ParseProfiles(%q) = %q, want one line naming the valid profiles", in, msg)
		}
	}
}

func TestRunBenchPatternSelectsOnlyThatRun(t *testing.T) {
	r := Run{Case: "SchedulingBasic", Workload: "5000Nodes", Rep: 2, Profile: Floor}
	levels := regexp.MustCompile("/").Split(r.BenchPattern(), -1)
	names := []string{"BenchmarkPerfScheduling", "SchedulingBasic", "r2-floor", "SchedulingBasic", "5000Nodes"}
	if len(levels) != len(names) {
		t.Fatalf("pattern %q has %d levels, want %d", r.BenchPattern(), len(levels), len(names))
	}
	for i, name := range names {
		if !regexp.MustCompile(levels[i]).MatchString(name) {
			t.Errorf("level %d %q does not match %q", i, levels[i], name)
		}
	}
	// The neighbours must not match: another repeat, profile, scale.
	for i, others := range [][]string{nil, {"SchedulingBasicX"}, {"r2-upstream", "r2-ours", "r1-floor"}, nil, {"5000Nodes_10000Pods"}} {
		for _, other := range others {
			if regexp.MustCompile(levels[i]).MatchString(other) {
				t.Errorf("level %d %q also matches %q", i, levels[i], other)
			}
		}
	}
}

package perf

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ParseProfiles reads a comma-separated list of profile names (the bench
// driver's -profiles, `make bench`'s BENCH_PROFILES) into the profiles to
// run, in AllProfiles' order whatever the order given: the order of a
// repeat is RunOrder's business, not the caller's.
func ParseProfiles(list string) ([]Profile, error) {
	all := AllProfiles()
	valid := JoinProfiles(all, ", ")
	want := map[Profile]bool{}
	for _, f := range strings.Split(list, ",") {
		name := strings.TrimSpace(f)
		if name == "" {
			continue
		}
		if !slices.Contains(all, Profile(name)) {
			return nil, fmt.Errorf("unknown profile %q: valid profiles are %s", name, valid)
		}
		want[Profile(name)] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("no profile in %q: name one or more of %s, comma-separated", list, valid)
	}
	var out []Profile
	for _, p := range all {
		if want[p] {
			out = append(out, p)
		}
	}
	return out, nil
}

// JoinProfiles is the profiles' names joined by sep: with "," what
// ParseProfiles reads back.
func JoinProfiles(profiles []Profile, sep string) string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = string(p)
	}
	return strings.Join(names, sep)
}

// RunOrder is the order in which repeat rep (1-based) runs profiles:
// ABBA, i.e. profiles as given in odd repeats and reversed in even ones
// (upstream, ours, floor; then floor, ours, upstream), so that over an even
// number of repeats every profile's mean position in the sequence is the
// same and none always runs first or last. At 5000 nodes the order
// mattered: with "ours" always second, SchedulingBasic measured
// ours/upstream 0.76–0.78 late in a multi-case process and ≈1.07 alone in
// a fresh one.
func RunOrder(rep int, profiles []Profile) []Profile {
	out := slices.Clone(profiles)
	if rep%2 == 0 {
		slices.Reverse(out)
	}
	return out
}

// Run is one workload run of one profile: what one process of
// test/perf/cmd/bench measures.
type Run struct {
	Case     string
	Workload string
	Rep      int
	Profile  Profile
}

// Name is the run's sub-benchmark name below the test case (r<rep>-<profile>).
func (r Run) Name() string { return fmt.Sprintf("r%d-%s", r.Rep, r.Profile) }

// BenchPattern is the -test.bench pattern that selects exactly this run of
// BenchmarkPerfScheduling (one regexp per sub-benchmark level).
func (r Run) BenchPattern() string {
	q := regexp.QuoteMeta
	return fmt.Sprintf("^BenchmarkPerfScheduling$/^%s$/^%s$/^%s$/^%s$", q(r.Case), q(r.Name()), q(r.Case), q(r.Workload))
}

// ResultPrefix starts every line go test prints for this run's results, so
// a caller can tell that the pattern selected it.
func (r Run) ResultPrefix() string {
	return fmt.Sprintf("BenchmarkPerfScheduling/%s/%s/%s/%s", r.Case, r.Name(), r.Case, r.Workload)
}

// Plan lists the runs of a measurement in execution order: per test case
// whose name matches cases and that has the workload, repeats × profiles
// in RunOrder. Test cases without the workload are returned in skipped
// (e.g. SchedulingPodMatchingAntiAffinity has no 5000Nodes).
func Plan(all []Case, cases *regexp.Regexp, workload string, repeats int, profiles []Profile) (runs []Run, skipped []string) {
	for _, c := range all {
		if !cases.MatchString(c.Name) {
			continue
		}
		if !slices.ContainsFunc(c.Workloads, func(w Workload) bool { return w.Name == workload }) {
			skipped = append(skipped, c.Name)
			continue
		}
		for rep := 1; rep <= repeats; rep++ {
			for _, p := range RunOrder(rep, profiles) {
				runs = append(runs, Run{Case: c.Name, Workload: workload, Rep: rep, Profile: p})
			}
		}
	}
	return runs, skipped
}

package perf

import (
	"fmt"
	"regexp"
	"slices"
)

// RunOrder is the order in which repeat rep (1-based) runs the profiles:
// ABBA, i.e. upstream first in odd repeats and ours first in even ones, so
// that over an even number of repeats neither profile always runs second.
// At 5000 nodes the order mattered: with "ours" always second, SchedulingBasic
// measured ours/upstream 0.76–0.78 late in a multi-case process and ≈1.07
// alone in a fresh one.
func RunOrder(rep int) []Profile {
	if rep%2 == 0 {
		return []Profile{Ours, Upstream}
	}
	return []Profile{Upstream, Ours}
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
// whose name matches cases and that has the workload, repeats × both
// profiles in RunOrder. Test cases without the workload are returned in
// skipped (e.g. SchedulingPodMatchingAntiAffinity has no 5000Nodes).
func Plan(all []Case, cases *regexp.Regexp, workload string, repeats int) (runs []Run, skipped []string) {
	for _, c := range all {
		if !cases.MatchString(c.Name) {
			continue
		}
		if !slices.ContainsFunc(c.Workloads, func(w Workload) bool { return w.Name == workload }) {
			skipped = append(skipped, c.Name)
			continue
		}
		for rep := 1; rep <= repeats; rep++ {
			for _, p := range RunOrder(rep) {
				runs = append(runs, Run{Case: c.Name, Workload: workload, Rep: rep, Profile: p})
			}
		}
	}
	return runs, skipped
}

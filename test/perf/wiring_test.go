package perf

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/test/perf/report"
)

// wiringCases are the test cases the CI check runs, at their smallest
// workload. Together they reach every plugin we replace: required and
// preferred inter-pod (anti-)affinity, namespaceSelector terms, node
// affinity, and SchedulingBasic for the path without affinity (NodeName and
// TaintToleration run for every pod); and two of our own test cases: one
// interleaved (the three differ only in how many Deployments, and its
// 10Nodes size has 20, of all four shapes) and the cold start, whose init
// pods are bound at creation (on a line whose scheduler_perf runs them:
// LineGaps). PERF_WIRING_ALL=1 runs every prepared test case instead.
var wiringCases = []string{
	"SchedulingPodAntiAffinity",
	"SchedulingPreferredPodAffinity",
	"SchedulingNodeAffinity",
	"SchedulingRequiredPodAntiAffinityWithNSSelector",
	"MixedSchedulingBasePod",
	"SchedulingBasic",
	"InterleavedDeployments1000",
	"ColdStartDeployments100",
}

// TestSchedulerPerfWiring proves the benchmark's wiring, not its numbers: it
// runs the smallest workloads of upstream's files through
// BenchmarkPerfScheduling (scheduler_perf's RunBenchmarkPerfScheduling, the
// only entry point that takes an out-of-tree registry) with every profile,
// and checks that every selected workload ran and measured for each.
//
// scheduler_perf fails a workload unless all its pods get scheduled (each
// createPods op waits for them), and the benchmark fails an "ours" workload
// unless the scheduler instantiated all four of our plugins, and a "floor"
// one unless it instantiated all but the inter-pod affinity one (and not
// that), so a passing child run means every profile scheduled every pod,
// ours and the floor with our plugins.
//
// It runs in a child process (this test binary, -test.bench) because
// benchmarks need a *testing.B with the real -bench matcher and output.
func TestSchedulerPerfWiring(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, an apiserver and a scheduler per workload; skipped with -short")
	}
	requireCluster(t)
	setup := prepareForTest(t, nil)
	all := os.Getenv("PERF_WIRING_ALL") == "1"

	// This line's scheduler_perf may not run our own test cases, or write
	// SchedulingDuration (LineGaps).
	gaps := report.RunInfo{Unavailable: LineGaps()}
	_, noOwn := gaps.Lacks(report.OwnWorkloads)
	_, noDuration := gaps.Lacks(report.SchedulingDurationMetric)
	cases := wiringCases
	if noOwn {
		cases = slices.DeleteFunc(slices.Clone(wiringCases), func(c string) bool { return slices.Contains(ownCases, c) })
	}

	type caseWorkload struct{ c, w string }
	var want []caseWorkload
	var alternatives []string
	for _, c := range setup.Cases {
		if !all && !slices.Contains(cases, c.Name) {
			continue
		}
		w := smallestWorkload(c)
		if w == "" {
			t.Fatalf("%s has no integration-test workload", c.Name)
		}
		want = append(want, caseWorkload{c.Name, w})
		alternatives = append(alternatives, fmt.Sprintf("^BenchmarkPerfScheduling$/^%s$///^%s$", regexp.QuoteMeta(c.Name), regexp.QuoteMeta(w)))
	}
	if !all && len(want) != len(cases) {
		t.Fatalf("found %d of the %d wiring test cases in the prepared files: %v", len(want), len(cases), want)
	}

	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0],
		"-test.run=^$",
		"-test.bench="+strings.Join(alternatives, "|"),
		"-test.benchtime=1x",
		"-test.timeout=15m",
		"-perf-scheduling-label-filter=", // the smallest workloads are labelled integration-test, not performance
		"-data-items-dir="+dir,
		"-placement-repeats=1",
		"-placement-pods-timeout=2m",
	)
	// ARTIFACTS: scheduler_perf then logs each workload to its own file,
	// deleted when it passes, instead of flooding this test's output.
	cmd.Env = append(os.Environ(), "ARTIFACTS="+logs)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	if runErr != nil || bytes.Contains(out.Bytes(), []byte("--- FAIL")) {
		t.Errorf("benchmark child failed: %v\n%s", runErr, tail(out.String(), 120))
		dumpLogs(t, logs)
		t.FailNow()
	}

	res, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, cw := range want {
		for _, p := range AllProfiles() {
			var got []report.Sample
			for k, samples := range res.Samples {
				if k.Case != cw.c || k.Workload != cw.w {
					continue
				}
				for _, s := range samples {
					if s.Profile == string(p) {
						got = append(got, s)
					}
				}
			}
			switch {
			case len(got) == 0:
				t.Errorf("%s/%s, profile %s: no data items: the workload did not run (check the -bench pattern and label filter)", cw.c, cw.w, p)
			case len(got) > 1:
				t.Errorf("%s/%s, profile %s: %d measured ops, want 1", cw.c, cw.w, p, len(got))
			case math.IsNaN(got[0].PeakHeapMB):
				t.Errorf("%s/%s, profile %s: heap_memory_usage missing: %+v", cw.c, cw.w, p, got[0])
			case !noDuration && math.IsNaN(got[0].DurationS):
				t.Errorf("%s/%s, profile %s: SchedulingDuration missing: %+v", cw.c, cw.w, p, got[0])
			case noDuration && !math.IsNaN(got[0].DurationS):
				t.Errorf("%s/%s, profile %s: SchedulingDuration %v, but LineGaps says this line's scheduler_perf writes none", cw.c, cw.w, p, got[0].DurationS)
			}
		}
	}
	if t.Failed() {
		t.Logf("child output:\n%s", tail(out.String(), 60))
	}
}

// smallestWorkload is the test case's first integration-test workload:
// upstream's own choice of its smallest size (5Nodes, 10Nodes, ...).
func smallestWorkload(c Case) string {
	for _, w := range c.Workloads {
		if slices.Contains(w.Labels, "integration-test") {
			return w.Name
		}
	}
	return ""
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = append([]string{fmt.Sprintf("... (%d lines omitted)", len(l)-lines)}, l[len(l)-lines:]...)
	}
	return strings.Join(l, "\n")
}

// dumpLogs prints the per-workload logs scheduler_perf kept (it deletes
// those of passing workloads).
func dumpLogs(t *testing.T, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		t.Logf("%s:\n%s", filepath.Base(f), tail(string(data), 80))
	}
}

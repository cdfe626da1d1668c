// Command bench runs test/perf's side-by-side scheduler_perf benchmark with
// every workload run in a process of its own, in ABBA order per test case
// over the chosen profiles (perf.Plan). `make bench` compiles the test
// binary once and calls this.
//
// One process per run keeps what a run leaves behind in the process (heap,
// informer goroutines, GC pacing) from reaching the next run: at 5000 nodes
// the same workload measured 20–25% slower as the last case of a
// multi-case process than alone in a fresh one.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/placement-scheduler/placement-scheduler/test/perf"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		testBinary  = flag.String("test-binary", "", "test/perf compiled with `go test -c` (required)")
		dir         = flag.String("dir", "", "results directory: data items, bench.log, run info (required)")
		scale       = flag.Int("scale", 500, "workload size: runs the <scale>Nodes workload of each test case (500, 5000; 15000 for upstream's scaled inter-pod affinity cases, SchedulingBasic and ours)")
		cases       = flag.String("cases", ".*", "regexp selecting test cases by full name")
		repeats     = flag.Int("repeats", 2, "runs per profile and test case; even numbers balance the ABBA order")
		profileList = flag.String("profiles", "upstream,ours,floor", "comma-separated profiles to run: upstream (kube-scheduler's default), "+
			"ours (manifests/scheduler-config.yaml), floor (ours without the inter-pod affinity plugin)")
		timeout     = flag.Duration("timeout", 24*time.Hour, "limit for each run's process")
		podsTimeout = flag.Duration("pods-timeout", 0, "how long each createPods op may wait for its pods to be scheduled; 0 keeps scheduler_perf's 10m, "+
			"which upstream's slowest affinity cases can exceed at 15000 nodes")
		cpuProfiles = flag.Bool("cpu-profiles", false, "have scheduler_perf write a CPU profile of each run's measured op (-perf-cpuprofile) into -dir; "+
			"the report then shows CPU time per measured pod")
		dryRun = flag.Bool("dry-run", false, "print the runs in order and exit")
	)
	flag.Parse()
	if *testBinary == "" || *dir == "" {
		return errors.New("-test-binary and -dir are required (see `make bench`)")
	}
	if *repeats < 1 {
		return fmt.Errorf("-repeats=%d: need at least 1", *repeats)
	}
	profiles, err := perf.ParseProfiles(*profileList)
	if err != nil {
		return fmt.Errorf("-profiles: %w", err)
	}
	caseRE, err := regexp.Compile("^(" + *cases + ")$")
	if err != nil {
		return fmt.Errorf("-cases: %w", err)
	}
	if err := perf.CheckPodsTimeout(*podsTimeout); err != nil {
		return fmt.Errorf("-pods-timeout: %w", err)
	}
	if err := perf.CheckCPUProfiles(*cpuProfiles); err != nil {
		return fmt.Errorf("-cpu-profiles: %w", err)
	}
	for _, g := range perf.LineGaps() {
		fmt.Printf("bench: n/a on this Kubernetes line: %s: %s\n", g.What, g.Why)
	}
	repoRoot, err := perf.RepoRoot()
	if err != nil {
		return err
	}
	upstreamDir, err := perf.UpstreamDir(repoRoot)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-plan-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	setup, err := perf.Prepare(perf.Options{UpstreamDir: upstreamDir, OwnDir: filepath.Join(repoRoot, "test", "perf"), Dir: tmp})
	if err != nil {
		return err
	}
	workload := strconv.Itoa(*scale) + "Nodes"
	runs, skipped := perf.Plan(setup.Cases, caseRE, workload, *repeats, profiles)
	for _, c := range skipped {
		fmt.Printf("bench: %s has no %s workload, skipped\n", c, workload)
	}
	if len(runs) == 0 {
		return fmt.Errorf("no test case matches -cases=%q with a %s workload", *cases, workload)
	}
	if *dryRun {
		for _, r := range runs {
			fmt.Println(r.Case + "/" + r.Name() + "/" + r.Workload)
		}
		return nil
	}

	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(*dir, "bench.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	binary, err := filepath.Abs(*testBinary)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	var extra []string
	if *cpuProfiles {
		extra = append(extra, "-perf-cpuprofile")
	}
	var failed []string
	for i, r := range runs {
		fmt.Fprintf(io.MultiWriter(os.Stdout, logFile), "bench: run %d/%d: %s/%s/%s\n", i+1, len(runs), r.Case, r.Name(), r.Workload)
		if err := runOne(binary, filepath.Join(repoRoot, "test", "perf"), absDir, r, *repeats, perf.JoinProfiles(profiles, ","), *timeout, *podsTimeout, extra, logFile); err != nil {
			fmt.Fprintf(io.MultiWriter(os.Stderr, logFile), "bench: %s/%s: %v\n", r.Case, r.Name(), err)
			failed = append(failed, r.Case+"/"+r.Name())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s (see %s)", len(failed), len(runs), strings.Join(failed, ", "), filepath.Join(*dir, "bench.log"))
	}
	return nil
}

// runOne measures one run in a fresh process of the test binary, working in
// the package directory as `go test` would; extra are more flags for it.
func runOne(binary, pkgDir, dataDir string, r perf.Run, repeats int, profiles string, timeout, podsTimeout time.Duration, extra []string, log io.Writer) error {
	args := []string{
		"-test.run", "^$",
		"-test.bench", r.BenchPattern(),
		"-test.benchtime", "1x",
		"-test.timeout", timeout.String(),
		"-perf-scheduling-label-filter=",
		"-data-items-dir", dataDir,
		"-placement-repeats", strconv.Itoa(repeats),
		"-placement-profiles", profiles,
		"-placement-process-per-run",
	}
	if podsTimeout > 0 {
		args = append(args, "-placement-pods-timeout", podsTimeout.String())
	}
	args = append(args, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Dir = pkgDir
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(os.Stdout, log, &out)
	cmd.Stderr = io.MultiWriter(os.Stderr, log)
	if err := cmd.Run(); err != nil {
		return err
	}
	// A pattern that selects nothing still exits 0: make sure it ran.
	if !bytes.Contains(out.Bytes(), []byte(r.ResultPrefix())) {
		return fmt.Errorf("the process reported no result for %s", r.ResultPrefix())
	}
	return nil
}

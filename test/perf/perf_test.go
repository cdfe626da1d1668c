package perf

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/component-base/logs/json/register"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/test/perf/report"
)

// Flags of our own; scheduler_perf's (-perf-scheduling-label-filter,
// -data-items-dir, ...) are registered by InitTests. InitTests re-creates
// flag.CommandLine from the flags defined so far, so these survive.
var (
	repeats = flag.Int("placement-repeats", 2,
		"how many times each profile runs each selected workload; runs are interleaved per test case in ABBA order "+
			"(upstream, ours, floor, then floor, ours, upstream, ...)")
	profileList = flag.String("placement-profiles", "upstream,ours,floor",
		"comma-separated profiles to run (upstream, ours, floor); test/perf/cmd/bench passes its -profiles")
	processPerRun = flag.Bool("placement-process-per-run", false,
		"set by test/perf/cmd/bench, which starts one process per workload run and selects it with -test.bench: "+
			"the run info is written once per results directory and says so")
	podsTimeout = flag.Duration("placement-pods-timeout", 0,
		"if set, how long a measured createPods op may wait for its pods (scheduler_perf's default is 10m)")
)

// env is set once by TestMain.
var env struct {
	repoRoot    string
	upstreamDir string
	setupErr    error // repo or upstream sources not found
	etcdErr     error // etcd not found: benchmarks cannot run
}

func TestMain(m *testing.M) {
	// Per-plugin timings for ours. Appending is what upstream documents;
	// on its own it has no effect (see CollectorConfig), so the
	// same list also goes into each test case's metricsCollectorConfig.
	benchmark.PluginNames = append(benchmark.PluginNames, ourPluginNames()...)
	if err := benchmark.InitTests(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cleanup, err := EnsureShortTempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env.repoRoot, env.setupErr = RepoRoot()
	if env.setupErr == nil {
		env.upstreamDir, env.setupErr = UpstreamDir(env.repoRoot)
		_, env.etcdErr = EnsureEtcd(env.repoRoot)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// requireCluster stops tb unless workloads can run here.
func requireCluster(tb testing.TB) {
	tb.Helper()
	if env.setupErr != nil {
		tb.Fatal(env.setupErr)
	}
	if env.etcdErr != nil {
		tb.Fatal(env.etcdErr)
	}
}

func ourPluginNames() []string {
	var names []string
	for _, p := range plugins.Set() {
		names = append(names, p.Name)
	}
	return names
}

// BenchmarkPerfScheduling runs each selected workload with each profile of
// -placement-profiles, -placement-repeats times, interleaved. Sub-benchmarks are
//
//	BenchmarkPerfScheduling/<case>/r<rep>-<profile>/<case>/<workload>
//
// where the last two levels are scheduler_perf's own. Pick the scale with
// the workload level, e.g. -bench 'BenchmarkPerfScheduling////^500Nodes$'
// -perf-scheduling-label-filter= (the 500Nodes workloads carry no labels).
// `make bench` does this and then writes the report.
func BenchmarkPerfScheduling(b *testing.B) {
	requireCluster(b)
	if *repeats < 1 {
		b.Fatalf("-placement-repeats=%d: need at least 1", *repeats)
	}
	profiles, err := ParseProfiles(*profileList)
	if err != nil {
		b.Fatalf("-placement-profiles: %v", err)
	}
	setup := prepareForTest(b, nil)
	dataDir := ensureDataItemsDir(b)
	writeRunInfo(b, dataDir, setup, profiles)

	var opts []benchmark.SchedulerPerfOption
	timeoutOpt, err := podsTimeoutOption(*podsTimeout)
	if err != nil {
		b.Fatalf("-placement-pods-timeout: %v", err)
	}
	if timeoutOpt != nil {
		opts = append(opts, timeoutOpt)
	}
	for _, c := range setup.Cases {
		b.Run(c.Name, func(b *testing.B) {
			for rep := 1; rep <= *repeats; rep++ {
				for _, p := range RunOrder(rep, profiles) {
					name := fmt.Sprintf("r%d-%s", rep, p)
					b.Run(name, func(b *testing.B) {
						var registry frameworkruntime.Registry // nil: upstream runs in-tree plugins only
						runOpts := opts
						if p != Upstream {
							var check func() error
							var err error
							if registry, check, err = verifiedRegistry(p, plugins.Registry()); err != nil {
								b.Fatal(err)
							}
							runOpts = append(slices.Clone(opts), withPrepareCheck(check))
						}
						// The topic makes scheduler_perf's per-workload
						// files (.dat progress, profiles) unique per run;
						// they would overwrite each other otherwise.
						topic := c.Topic + "_" + name
						stopProfiles, err := profileHeap(dataDir, topic)
						if err != nil {
							b.Fatal(err)
						}
						benchmark.RunBenchmarkPerfScheduling(b, c.Files[p], topic, registry, runOpts...)
						stopProfiles()
						// Inside the run, so that runs -test.bench filters
						// out record nothing.
						recordLoad(b, dataDir, c.Name+"/"+name)
					})
				}
			}
		})
	}
}

// verifiedRegistry returns reg (our registry, pkg/plugins.Registry()) with
// factories that count their calls, and a check for scheduler_perf's prepare hook (run after the
// scheduler of each workload is built) that fails the workload unless the
// scheduler instantiated exactly the plugins of ours that profile p runs:
// all of them for ours, all but report.FloorPlugin for the floor (and that one
// not at all). A profile mix-up then cannot silently measure upstream, or
// ours, twice.
//
// Nothing else of a run depends on the profile: scheduler_perf fails a
// workload unless every pod of each createPods op is scheduled (for the
// floor too, which places pods without regard to their affinity terms: our
// own test cases are sized so that every pod fits with every required term,
// and none checks where a pod landed).
func verifiedRegistry(p Profile, reg frameworkruntime.Registry) (frameworkruntime.Registry, func() error, error) {
	want := map[string]bool{}
	for name := range reg {
		want[name] = true
	}
	switch p {
	case Ours:
	case Floor:
		left, err := report.FloorPlugin()
		if err != nil {
			return nil, nil, err
		}
		want[left.Name] = false
	default:
		return nil, nil, fmt.Errorf("profile %s runs no plugin of ours", p)
	}
	counts := map[string]*atomic.Int64{}
	for name, factory := range reg {
		n := &atomic.Int64{}
		counts[name] = n
		reg[name] = func(ctx context.Context, args k8sruntime.Object, h fwk.Handle) (fwk.Plugin, error) {
			n.Add(1)
			return factory(ctx, args, h)
		}
	}
	seen := map[string]int64{}
	check := func() error {
		var missing, unexpected []string
		for name, n := range counts {
			v := n.Load()
			switch {
			case want[name] && v <= seen[name]:
				missing = append(missing, name)
			case !want[name] && v > seen[name]:
				unexpected = append(unexpected, name)
			}
			seen[name] = max(seen[name], v)
		}
		slices.Sort(missing)
		slices.Sort(unexpected)
		switch {
		case len(missing) > 0:
			return fmt.Errorf("profile %s did not instantiate %v: is the config pointing at the derived profile?", p, missing)
		case len(unexpected) > 0:
			return fmt.Errorf("profile %s instantiated %v, which it leaves out: is the config pointing at the derived profile?", p, unexpected)
		}
		return nil
	}
	return reg, check, nil
}

// The prepare check of a run fails unless the scheduler built exactly the
// plugins of ours the profile runs, for each workload anew: all four for
// ours; for the floor all but the inter-pod affinity one, and not that.
func TestVerifiedRegistryChecksEachWorkload(t *testing.T) {
	left, err := report.FloorPlugin()
	if err != nil {
		t.Fatal(err)
	}
	// Factories that build nothing: the check counts calls, not plugins.
	stubs := frameworkruntime.Registry{}
	for _, p := range plugins.Set() {
		stubs[p.Name] = func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) { return nil, nil }
	}
	build := func(reg frameworkruntime.Registry, skip string) {
		for name, factory := range reg {
			if name != skip {
				if _, err := factory(context.Background(), nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, tc := range []struct {
		profile Profile
		skip    string // the plugin a workload's scheduler does not build
		want    string // "": the check passes
	}{
		{Ours, "", ""},
		{Ours, left.Name, "did not instantiate [" + left.Name + "]"},
		{Floor, left.Name, ""},
		{Floor, "", "instantiated [" + left.Name + "], which it leaves out"},
	} {
		reg, check, err := verifiedRegistry(tc.profile, stubs)
		if err != nil {
			t.Fatal(err)
		}
		// A first workload built right, then the one under test: counts
		// carry over between workloads, the check must not.
		build(reg, map[Profile]string{Ours: "", Floor: left.Name}[tc.profile])
		if err := check(); err != nil {
			t.Fatalf("%s, first workload: %v", tc.profile, err)
		}
		build(reg, tc.skip)
		got := ""
		if err := check(); err != nil {
			got = err.Error()
		}
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s, second workload without %q: check = %q, want %q", tc.profile, tc.skip, got, tc.want)
		}
	}
	if _, _, err := verifiedRegistry(Upstream, stubs); err == nil {
		t.Error("upstream runs no plugin of ours: verifiedRegistry must refuse it")
	}
}

// ensureDataItemsDir returns -data-items-dir, defaulting it to a fresh
// results/bench-<time> so that files never land in the package directory
// (scheduler_perf writes to the working directory when it is unset).
func ensureDataItemsDir(b *testing.B) string {
	f := flag.Lookup("data-items-dir")
	if f == nil {
		b.Fatal("scheduler_perf's -data-items-dir flag is not registered")
	}
	if dir := f.Value.String(); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	dir := filepath.Join(env.repoRoot, "results", "bench-"+time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := f.Value.Set(dir); err != nil {
		b.Fatal(err)
	}
	b.Logf("data items go to %s", dir)
	return dir
}

func writeRunInfo(b *testing.B, dir string, setup *Setup, profiles []Profile) {
	file := filepath.Join(dir, report.RunInfoFile)
	abba := fmt.Sprintf("ABBA per test case (r1: %s; r2: %s; ...)", JoinProfiles(RunOrder(1, profiles), ", "), JoinProfiles(RunOrder(2, profiles), ", "))
	order := abba + ", all runs in one process, one etcd+apiserver+scheduler per workload run"
	if *processPerRun {
		if _, err := os.Stat(file); err == nil {
			return // the first run of the invocation wrote it
		}
		order = abba + ", each workload run in its own process (test/perf/cmd/bench) with its own etcd+apiserver+scheduler"
	}
	floorLeaves := "?"
	if pl, err := report.FloorPlugin(); err == nil {
		floorLeaves = pl.Name
	}
	pattern := flagValue("test.bench")
	if *processPerRun {
		pattern = "one run per process, each selected by its own -test.bench (bench.log lists them); first: " + pattern
	}
	info := report.RunInfo{
		Started:      time.Now().UTC().Format(time.RFC3339),
		GoVersion:    runtime.Version(),
		K8sVersion:   moduleVersion(env.upstreamDir),
		NumCPU:       runtime.NumCPU(),
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
		Repeats:      *repeats,
		Order:        order,
		BenchPattern: pattern,
		LabelFilter:  benchmark.PerfSchedulingLabelFilter,
		UpstreamDir:  env.upstreamDir,
		OurConfigBasis: "manifests/scheduler-config.yaml, profile renamed default-scheduler, leader election off, with pkg/plugins.Registry() " +
			"(upstream = scheduler_perf's default component config, no out-of-tree registry)",
		FloorConfigBasis: "profile ours without " + floorLeaves + " (gone from every extension point and pluginConfig): " +
			"nothing enforces or scores inter-pod (anti-)affinity, the speed limit of any inter-pod affinity plugin",
		Unavailable: LineGaps(),
	}
	for _, p := range profiles {
		info.Profiles = append(info.Profiles, string(p))
	}
	info.MeasuredPods = map[string]int{}
	for _, c := range setup.Cases {
		info.Cases = append(info.Cases, c.Name)
		for _, w := range c.Workloads {
			if w.MeasuredPods > 0 {
				info.MeasuredPods[report.MeasuredPodsKey(c.Name, w.Name)] = w.MeasuredPods
			}
		}
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(file, append(data, '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
}

// recordLoad appends the machine's load average after a run, so a report
// can say how busy the machine was (other work on it is the main source of
// noise). Linux only; silently skipped elsewhere.
func recordLoad(b *testing.B, dir, run string) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	fields := strings.Fields(string(raw))
	if len(fields) < 3 {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, report.LoadFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Logf("recording load: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%s\t%s\t%s\n", run, fields[0], fields[1], fields[2])
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// moduleVersion reads the version from the module cache path
// (.../k8s.io/kubernetes@v1.37.2/test/integration/scheduler_perf).
func moduleVersion(perfDir string) string {
	for d := perfDir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, v, ok := strings.Cut(filepath.Base(d), "@"); ok {
			return v
		}
	}
	return "unknown"
}

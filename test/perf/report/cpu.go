package report

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// CPU time per measured pod, read from the CPU profile scheduler_perf writes
// for each run's measured op when the benchmark passes -perf-cpuprofile
// (make bench BENCH_CPU_PROFILES=1).
//
// Why beside the extension-point table: its per-cycle times are wall
// times, and on a machine with few cores they include waiting for one. A
// profile that schedules faster runs more binding and apiserver work per
// second beside its cycles, so its Filter can take longer per cycle while
// doing less. CPU time per pod is the work itself, whatever the machine
// did beside it.

// cpuProfileRE matches scheduler_perf's CPU profile name; the case and
// workload are matched as in datRE.
var cpuProfileRE = runFileRE(`-cpu\.prof`)

// CPU is one run's CPU time during its measured op, in ms per measured pod.
// A sample counts in a share when any frame of its stack is in it (as with
// pprof's -focus), so the shares nest: Filter and InterPodAffinity are
// parts of Scheduler, and the plugin's Filter is in both.
type CPU struct {
	// Process is every sample of the test process: the in-process
	// apiserver, the scheduler, the harness and the garbage collector
	// (whose work is no one's frame).
	Process float64 `json:"processMsPerPod"`
	// Scheduler: a frame of kube-scheduler's packages or of our plugins'.
	Scheduler float64 `json:"schedulerMsPerPod"`
	// Filter: the filtering phase (findNodesThatPassFilters and the
	// parallel node checks it starts), every Filter plugin included.
	Filter float64 `json:"filterMsPerPod"`
	// InterPodAffinity: a frame of the inter-pod affinity plugin's package
	// (upstream's, or ours and its internal packages), whatever the
	// extension point, queueing hints included. The floor has none.
	InterPodAffinity float64 `json:"interPodAffinityMsPerPod"`
}

// cpuShares says which frames make a sample count in each share of CPU.
type cpuShares struct {
	scheduler, interPodAffinity []string // package paths
}

// filterPhase is the scheduler's function whose frames are the filtering
// phase: the parallel node checks run its closures.
const filterPhase = "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).findNodesThatPassFilters"

// sharesOf derives the packages from the plugin set: kube-scheduler's own,
// each of our plugins', and both sides of the floor's plugin.
func sharesOf() (cpuShares, error) {
	floor, err := FloorPlugin()
	if err != nil {
		return cpuShares{}, err
	}
	s := cpuShares{
		scheduler:        []string{"k8s.io/kubernetes/pkg/scheduler"},
		interPodAffinity: []string{packageOf(floor.New), packageOf(floor.InTree)},
	}
	for _, p := range plugins.Set() {
		s.scheduler = append(s.scheduler, packageOf(p.New))
	}
	return s, nil
}

// FloorPlugin is the plugin the floor leaves out: the row of
// pkg/plugins.Set() that replaces the in-tree InterPodAffinity.
func FloorPlugin() (plugins.Plugin, error) {
	for _, p := range plugins.Set() {
		if p.Replaces == names.InterPodAffinity {
			return p, nil
		}
	}
	return plugins.Plugin{}, fmt.Errorf("pkg/plugins.Set() has no plugin replacing %s: the floor has nothing to leave out", names.InterPodAffinity)
}

// packageOf is the import path of the package that declares function f.
func packageOf(f any) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	slash := max(strings.LastIndex(name, "/"), 0)
	if dot := strings.Index(name[slash:], "."); dot >= 0 {
		return name[:slash+dot]
	}
	return name
}

// inPackage reports whether a profile's function name (package path, then
// the symbol) belongs to pkg or one of its sub-packages.
func inPackage(fn, pkg string) bool {
	rest, ok := strings.CutPrefix(fn, pkg)
	return ok && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "/"))
}

// cpuOf reads a CPU profile and divides each share by pods.
func cpuOf(path string, shares cpuShares, pods int) (CPU, error) {
	f, err := os.Open(path)
	if err != nil {
		return CPU{}, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return CPU{}, fmt.Errorf("%s: %w", path, err)
	}
	col := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			col = i
		}
	}
	if col < 0 {
		return CPU{}, fmt.Errorf("%s: no cpu/nanoseconds sample type: not a CPU profile", path)
	}
	var ns CPU
	for _, s := range p.Sample {
		v := float64(s.Value[col])
		ns.Process += v
		var sched, filter, ipa bool
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				fn := line.Function.Name
				sched = sched || inAny(fn, shares.scheduler)
				filter = filter || strings.HasPrefix(fn, filterPhase)
				ipa = ipa || inAny(fn, shares.interPodAffinity)
			}
		}
		if sched {
			ns.Scheduler += v
		}
		if filter {
			ns.Filter += v
		}
		if ipa {
			ns.InterPodAffinity += v
		}
	}
	perPod := func(v float64) float64 { return v / 1e6 / float64(pods) }
	return CPU{Process: perPod(ns.Process), Scheduler: perPod(ns.Scheduler), Filter: perPod(ns.Filter), InterPodAffinity: perPod(ns.InterPodAffinity)}, nil
}

func inAny(fn string, pkgs []string) bool {
	for _, pkg := range pkgs {
		if inPackage(fn, pkg) {
			return true
		}
	}
	return false
}

// cpuProfile is one CPU profile file found in a directory.
type cpuProfile struct {
	path         string
	caseWorkload string // <case>_<workload>
	profile      string
	rep          int
}

// findCPUProfiles lists dir's CPU profiles, by run.
func findCPUProfiles(dir string) ([]cpuProfile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*-cpu.prof"))
	if err != nil {
		return nil, err
	}
	var out []cpuProfile
	for _, f := range files {
		m := cpuProfileRE.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		rep, _ := strconv.Atoi(m[2])
		out = append(out, cpuProfile{path: f, caseWorkload: m[1], profile: m[3], rep: rep})
	}
	return out, nil
}

// cpuStat summarises one share over a profile's runs; a run without a
// profile counts as missing.
func cpuStat(samples []Sample, share func(CPU) float64) Stat {
	return pickStat(samples, func(s Sample) (float64, bool) {
		if s.CPU == nil {
			return 0, false
		}
		return share(*s.CPU), true
	})
}

// attachCPU sets the CPU of each run in order that has exactly one CPU
// profile in dir, one measured op and a known pod count; any other run
// cannot be divided per pod, and stays n/a.
func attachCPU(dir string, info *RunInfo, order []runKey, samples map[runKey]*Sample) error {
	cpus, err := findCPUProfiles(dir)
	if err != nil || len(cpus) == 0 {
		return err
	}
	shares, err := sharesOf()
	if err != nil {
		return err
	}
	// A run's profile covers all its measured ops: keyed without Measure.
	type run struct {
		caseWorkload, profile string
		rep                   int
	}
	profiles := map[run][]string{}
	for _, c := range cpus {
		r := run{c.caseWorkload, c.profile, c.rep}
		profiles[r] = append(profiles[r], c.path)
	}
	measures := map[run]int{}
	for _, rk := range order {
		measures[run{rk.Case + "_" + rk.Workload, rk.profile, rk.rep}]++
	}
	for _, rk := range order {
		r := run{rk.Case + "_" + rk.Workload, rk.profile, rk.rep}
		var pods int
		if info != nil {
			pods = info.MeasuredPods[MeasuredPodsKey(rk.Case, rk.Workload)]
		}
		if len(profiles[r]) != 1 || measures[r] != 1 || pods <= 0 {
			continue
		}
		cpu, err := cpuOf(profiles[r][0], shares, pods)
		if err != nil {
			return err
		}
		samples[rk].CPU = &cpu
	}
	return nil
}

// cpuColumns are CPU's shares as the table shows them.
var cpuColumns = []struct {
	title string
	get   func(ProfileStats) Stat
}{
	{"process", func(ps ProfileStats) Stat { return ps.CPUProcess }},
	{"scheduler", func(ps ProfileStats) Stat { return ps.CPUScheduler }},
	{"Filter", func(ps ProfileStats) Stat { return ps.CPUFilter }},
	{"inter-pod affinity plugin", func(ps ProfileStats) Stat { return ps.CPUInterPodAffinity }},
}

// writeCPUTable renders CPU time per measured pod, upstream / ours / floor,
// for the rows with a CPU profile from some run; nothing when none has one.
func writeCPUTable(b *strings.Builder, t Table, f formatter) {
	var lines []string
	for _, row := range t.Rows {
		cells := make([]string, len(cpuColumns))
		measured := false
		for i, c := range cpuColumns {
			parts := make([]string, 0, 3)
			for _, p := range []struct {
				name string
				ps   ProfileStats
			}{{Upstream, row.Upstream}, {Ours, row.Ours}, {Floor, row.Floor}} {
				s := c.get(p.ps)
				switch {
				case !f.ran(p.name):
					parts = append(parts, "n/a")
				case s.N == 0:
					parts = append(parts, "–")
				default:
					measured = true
					parts = append(parts, strconv.FormatFloat(s.Mean, 'f', 2, 64))
				}
			}
			cells[i] = strings.Join(parts, " / ")
		}
		if measured {
			lines = append(lines, fmt.Sprintf("| %s | %s |\n", row.Case, strings.Join(cells, " | ")))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nCPU time per measured pod, ms, from each run's CPU profile of the measured op (-perf-cpuprofile), mean over repeats, upstream / ours / floor. " +
		"The work itself, whatever waited for a core: the per-cycle times above are wall times, and a profile that schedules faster has more binding and apiserver work beside each cycle. " +
		"A sample counts in each share one of its frames is in: scheduler (kube-scheduler's packages and our plugins') holds Filter (the filtering phase, every Filter plugin) " +
		"and the inter-pod affinity plugin (its package, at every extension point); process is the whole test process, garbage collection and the in-process apiserver included.\n\n")
	titles := make([]string, len(cpuColumns))
	for i, c := range cpuColumns {
		titles[i] = c.title
	}
	fmt.Fprintf(b, "| Test case | %s |\n|---|%s\n", strings.Join(titles, " | "), strings.Repeat("---:|", len(cpuColumns)))
	for _, l := range lines {
		b.WriteString(l)
	}
}

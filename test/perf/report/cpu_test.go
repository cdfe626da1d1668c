package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// Package paths written out, not derived as the report derives them, so
// that a wrong derivation fails here.
const (
	ourIPA      = "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	upstreamIPA = "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	filterFunc  = "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).findNodesThatPassFilters.func1"
	parallel    = "k8s.io/client-go/util/workqueue.ParallelizeUntil.func1"
)

// cpuSample is a stack, leaf first; a frame with several names is one
// location with inlined calls (the inlined callee first, as pprof keeps them).
type cpuSample struct {
	ms     int64
	frames [][]string
}

func frames(names ...string) [][]string {
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = []string{n}
	}
	return out
}

// writeCPUProfile writes a CPU profile in the runtime's format (sample
// types samples/count and cpu/nanoseconds, gzipped).
func writeCPUProfile(t *testing.T, path string, samples []cpuSample) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for _, s := range samples {
		var locs []*profile.Location
		for _, frame := range s.frames {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for _, name := range frame {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name)})
			}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{s.ms / 10, s.ms * 1_000_000}})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
}

// interleavedCycle is a measured op's CPU, one sample per kind of stack.
var interleavedCycle = []cpuSample{
	// Ours' Filter, on a parallel node check: scheduler, Filter, plugin.
	{2, frames(ourIPA+".(*InterPodAffinity).Filter", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunFilterPlugins", filterFunc, parallel)},
	// Another plugin's Filter: scheduler and Filter.
	{3, frames("k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*Fit).Filter", filterFunc, parallel)},
	// The plugin's own parallel scan, in a sub-package, on a goroutine
	// with no kube-scheduler frame: scheduler and plugin.
	{5, frames(ourIPA+"/internal/podsummary.summarize.func1", parallel)},
	// Upstream's plugin: scheduler and plugin.
	{7, frames(upstreamIPA+".(*InterPodAffinity).PreScore", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunPreScorePlugins", "k8s.io/kubernetes/pkg/scheduler.(*Scheduler).schedulingCycle")},
	// The apiserver and the garbage collector: the process only.
	{11, frames("k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.func1")},
	{13, frames("runtime.gcBgMarkWorker")},
	// Ours' Score inlined into the framework's loop: scheduler and plugin.
	{17, [][]string{{ourIPA + ".(*InterPodAffinity).Score", "k8s.io/kubernetes/pkg/scheduler/framework/runtime.(*frameworkImpl).RunScorePlugins.func2"}, {parallel}}},
	// Packages whose paths only begin like theirs: the process only.
	{19, frames("k8s.io/kubernetes/pkg/schedulerx.Run", ourIPA+"x.Run")},
}

func TestCPUPerPod(t *testing.T) {
	dir := t.TempDir()
	// One measured op of 2 pods; ours' first run has a profile.
	run(t, dir, "SchedulingPodAffinity", Upstream, 1, 100, 5, 9, 300)
	run(t, dir, "SchedulingPodAffinity", Ours, 1, 150, 3, 7, 280)
	run(t, dir, "SchedulingPodAffinity", Ours, 2, 160, 3, 7, 280)
	// A case whose pod count the run info lacks cannot be divided per pod.
	run(t, dir, "SchedulingBasic", Ours, 1, 400, 1, 2, 200)
	writeRunInfo(t, dir, RunInfo{Repeats: 2, Profiles: []string{Upstream, Ours}, MeasuredPods: map[string]int{"SchedulingPodAffinity/500Nodes": 2}})
	writeCPUProfile(t, filepath.Join(dir, "SchedulingPodAffinity_500Nodes_placement_r1-ours_2026-11-29T15:32:41Z-cpu.prof"), interleavedCycle)
	writeCPUProfile(t, filepath.Join(dir, "SchedulingBasic_500Nodes_placement_r1-ours_2026-11-29T15:40:00Z-cpu.prof"), interleavedCycle)

	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := CPU{Process: 77.0 / 2, Scheduler: 34.0 / 2, Filter: 5.0 / 2, InterPodAffinity: 31.0 / 2}
	for _, s := range res.Samples[Key{Case: "SchedulingPodAffinity", Workload: "500Nodes", Measure: "sched-1"}] {
		switch {
		case s.Profile == Ours && s.Rep == 1:
			if s.CPU == nil {
				t.Fatal("ours r1: no CPU, want it read from the run's profile")
			}
			if !cpuClose(*s.CPU, want) {
				t.Errorf("ours r1: CPU = %+v, want %+v", *s.CPU, want)
			}
		case s.CPU != nil:
			t.Errorf("%s r%d: CPU = %+v from another run's profile", s.Profile, s.Rep, *s.CPU)
		}
	}
	for _, s := range res.Samples[Key{Case: "SchedulingBasic", Workload: "500Nodes", Measure: "sched-1"}] {
		if s.CPU != nil {
			t.Errorf("SchedulingBasic: CPU = %+v without a measured pod count", *s.CPU)
		}
	}

	md := Markdown(Build(res))
	if !strings.Contains(md, "CPU time per measured pod") {
		t.Fatalf("no CPU table in:\n%s", md)
	}
	// Ours' mean is over the one run with a profile; upstream has none.
	if row := "| SchedulingPodAffinity | – / 38.50 / n/a | – / 17.00 / n/a | – / 2.50 / n/a | – / 15.50 / n/a |"; !strings.Contains(md, row) {
		t.Errorf("CPU table lacks %q:\n%s", row, md)
	}
	if strings.Contains(md, "| SchedulingBasic | – /") {
		t.Errorf("CPU row for SchedulingBasic, which has no per-pod figure:\n%s", md)
	}
}

func TestNoCPUTableWithoutProfiles(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "SchedulingPodAffinity", Ours, 1, 150, 3, 7, 280)
	writeRunInfo(t, dir, RunInfo{Repeats: 1, MeasuredPods: map[string]int{"SchedulingPodAffinity/500Nodes": 2}})
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(Build(res)); strings.Contains(md, "CPU time per measured pod") {
		t.Errorf("CPU table without a profile:\n%s", md)
	}
}

func TestCPUProfileThatIsNot(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "SchedulingPodAffinity", Ours, 1, 150, 3, 7, 280)
	writeRunInfo(t, dir, RunInfo{Repeats: 1, MeasuredPods: map[string]int{"SchedulingPodAffinity/500Nodes": 2}})
	heap := &profile.Profile{SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}}}
	path := filepath.Join(dir, "SchedulingPodAffinity_500Nodes_placement_r1-ours_2026-11-29T15:32:41Z-cpu.prof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := heap.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a CPU profile") || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of a heap profile named as a CPU one: %v, want an error naming the file and saying it is not a CPU profile", err)
	}
}

func TestFloorPluginPackages(t *testing.T) {
	s, err := sharesOf()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.interPodAffinity, " "); got != ourIPA+" "+upstreamIPA {
		t.Errorf("inter-pod affinity packages = %q, want ours and upstream's", got)
	}
}

func cpuClose(a, b CPU) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return near(a.Process, b.Process) && near(a.Scheduler, b.Scheduler) && near(a.Filter, b.Filter) && near(a.InterPodAffinity, b.InterPodAffinity)
}

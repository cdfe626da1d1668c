package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseName(t *testing.T) {
	tests := []struct {
		name    string
		key     Key
		profile string
		rep     int
		wantErr bool
	}{
		{
			name:    "BenchmarkPerfScheduling/SchedulingPodAffinity/r2-ours/SchedulingPodAffinity/500Nodes/sched-1",
			key:     Key{Case: "SchedulingPodAffinity", Workload: "500Nodes", Measure: "sched-1"},
			profile: Ours, rep: 2,
		},
		{
			name:    "BenchmarkPerfScheduling/SchedulingBasic/r1-upstream/SchedulingBasic/500Nodes/namespace-2",
			key:     Key{Case: "SchedulingBasic", Workload: "500Nodes", Measure: "namespace-2"},
			profile: Upstream, rep: 1,
		},
		{
			// go test -count=2 renames repeated sub-benchmarks.
			name:    "BenchmarkPerfScheduling/SchedulingBasic#01/r1-upstream/SchedulingBasic/500Nodes#01/ns",
			key:     Key{Case: "SchedulingBasic", Workload: "500Nodes", Measure: "ns"},
			profile: Upstream, rep: 1,
		},
		{name: "BenchmarkPerfScheduling/SchedulingBasic/500Nodes/ns", wantErr: true},
		{name: "BenchmarkPerfScheduling/A/r1-other/A/500Nodes/ns", wantErr: true},
		{name: "BenchmarkPerfScheduling/A/r1-ours/B/500Nodes/ns", wantErr: true},
	}
	for _, tt := range tests {
		key, profile, rep, err := ParseName(tt.name)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseName(%q): no error", tt.name)
			}
			continue
		}
		if err != nil || key != tt.key || profile != tt.profile || rep != tt.rep {
			t.Errorf("ParseName(%q) = %+v, %q, %d, %v; want %+v, %q, %d", tt.name, key, profile, rep, err, tt.key, tt.profile, tt.rep)
		}
	}
}

func TestNewStat(t *testing.T) {
	st := NewStat([]float64{6, math.NaN(), 2, 4})
	if st.N != 3 || st.Missing != 1 || st.Mean != 4 || st.Min != 2 || st.Max != 6 || st.Stddev != 2 || st.Median != 4 {
		t.Errorf("NewStat = %+v", st)
	}
	if even := NewStat([]float64{9, 1, 3, 100}); even.Median != 6 {
		t.Errorf("median of 9, 1, 3, 100 = %v, want 6 (between the middle two)", even.Median)
	}
	if empty := NewStat([]float64{math.NaN()}); empty.N != 0 || !math.IsNaN(empty.Mean) {
		t.Errorf("all-NaN stat = %+v", empty)
	}
	js, err := json.Marshal(NewStat(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"n":0,"mean":null,"min":null,"max":null,"stddev":null,"median":null,"values":null}`; string(js) != want {
		t.Errorf("empty stat JSON = %s, want %s", js, want)
	}
}

func item(name, metric string, data map[string]float64, extra ...string) DataItem {
	labels := map[string]string{"Name": name, "Metric": metric}
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	return DataItem{Data: data, Labels: labels}
}

func writeItems(t *testing.T, dir, file string, items ...DataItem) {
	t.Helper()
	js, err := json.Marshal(dataItemsFile{Version: "v1", DataItems: items})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run writes the items one (case, rep, profile) run would produce.
func run(t *testing.T, dir, c, profile string, rep int, throughput, p50, p99, heap float64) {
	pluginMs := throughput / 1000
	if math.IsNaN(pluginMs) {
		pluginMs = 0.2
	}
	name := "BenchmarkPerfScheduling/" + c + "/r" + string(rune('0'+rep)) + "-" + profile + "/" + c + "/500Nodes/sched-1"
	// The same 1000 measured pods whatever the profile: the phase takes
	// 1000/throughput seconds (4 s when throughput was not measured).
	duration := 4.0
	if !math.IsNaN(throughput) {
		duration = 1000 / throughput
	}
	items := []DataItem{
		item(name, "scheduler_scheduling_attempt_duration_seconds", map[string]float64{"Perc50": p50, "Perc99": p99}, "result", "scheduled"),
		item(name, "scheduler_scheduling_attempt_duration_seconds", map[string]float64{"Perc50": 999, "Perc99": 999}, "result", "unschedulable"),
		item(name, "heap_memory_usage", map[string]float64{"Max": heap, "Average": 1}),
		item(name, "SchedulingDuration", map[string]float64{"Duration": duration}),
		item(name, "scheduler_framework_extension_point_duration_seconds", map[string]float64{"Average": 10 * pluginMs}, "extension_point", "PreScore"),
		item(name, "scheduler_framework_extension_point_duration_seconds", map[string]float64{"Average": 20 * pluginMs}, "extension_point", "Filter"),
	}
	switch profile {
	case Upstream:
		items = append(items, item(name, "scheduler_plugin_execution_duration_seconds", map[string]float64{"Average": pluginMs}, "plugin", "InterPodAffinity", "extension_point", "PreFilter"))
	case Ours:
		items = append(items, item(name, "scheduler_plugin_execution_duration_seconds", map[string]float64{"Average": pluginMs}, "plugin", "PlacementInterPodAffinity", "extension_point", "PreFilter"))
	}
	if c == "SchedulingPodAffinity" && profile == Ours && rep == 1 {
		// One PreScore observation survived the scheduler's metric buffer
		// in one run of ours, none in upstream's (see pluginMetricCaveat):
		// the per-plugin cell shows what survived, the extension-point
		// table has every cycle.
		items = append(items, item(name, "scheduler_plugin_execution_duration_seconds", map[string]float64{"Average": 3}, "plugin", "PlacementInterPodAffinity", "extension_point", "PreScore"))
	}
	if !math.IsNaN(throughput) {
		items = append(items, item(name, "SchedulingThroughput", map[string]float64{"Average": throughput, "Perc50": 1}))
	} else {
		// What scheduler_perf writes when it could not measure throughput.
		items = append(items, DataItem{Labels: map[string]string{"Name": name, "Metric": "not applicable"}})
	}
	writeItems(t, dir, "BenchmarkPerfScheduling_"+c+"_r"+string(rune('0'+rep))+"-"+profile+"_benchmark_x.json", items...)
}

// writeRunInfo writes info where the benchmark writes its run info.
func writeRunInfo(t *testing.T, dir string, info RunInfo) {
	t.Helper()
	js, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, RunInfoFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
}

// progress writes a run's scheduler_perf progress file with n samples,
// named as scheduler_perf names it for test/perf's topic <topic>_r<rep>-<profile>.
func progress(t *testing.T, dir, c, workload, profile string, rep, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%d.0s 10 10 10 10.0 0 0 0 0\n", i+1)
	}
	file := fmt.Sprintf("%s_%s_affinity_r%d-%s_2026-11-24T05:51:10Z.dat", c, workload, rep, profile)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadAndBuild(t *testing.T) {
	dir := t.TempDir()
	for rep := 1; rep <= 2; rep++ {
		progress(t, dir, "SchedulingPodAffinity", "500Nodes", Upstream, rep, 12-4*rep)
		progress(t, dir, "SchedulingPodAffinity", "500Nodes", Ours, rep, 6+rep)
	}
	progress(t, dir, "SchedulingBasic", "500Nodes", Upstream, 1, 2)
	// Another workload of the same case must not be counted for 500Nodes.
	progress(t, dir, "SchedulingBasic", "500Nodes_5000Pods", Ours, 1, 30)
	run(t, dir, "SchedulingPodAffinity", Upstream, 1, 100, 5, 9, 300)
	run(t, dir, "SchedulingPodAffinity", Ours, 1, 150, 3, 7, 280)
	run(t, dir, "SchedulingPodAffinity", Upstream, 2, 120, 6, 10, 310)
	run(t, dir, "SchedulingPodAffinity", Ours, 2, 170, 4, 8, 290)
	run(t, dir, "SchedulingBasic", Upstream, 1, 400, 1, 2, 200)
	run(t, dir, "SchedulingBasic", Ours, 1, math.NaN(), 1, 2, 200)
	// Empty files appear for test cases without a workload at this scale.
	writeItems(t, dir, "BenchmarkPerfScheduling_Empty_r1-ours_benchmark_x.json")
	info := RunInfo{Repeats: 2, NumCPU: 2, Cases: []string{"SchedulingPodAffinity", "SchedulingBasic"},
		// The ceiling measures twice the pods here: its pods/s is twice
		// what its phase time alone would say.
		MeasuredPods: map[string]int{"SchedulingPodAffinity/500Nodes": 1000, "SchedulingBasic/500Nodes": 2000}}
	writeRunInfo(t, dir, info)

	if err := os.WriteFile(filepath.Join(dir, LoadFile), []byte("A/r1-upstream\t1.5\t1\t1\nA/r1-ours\t2.5\t1\t1\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 6 {
		t.Errorf("Files = %d, want 6 non-empty", res.Files)
	}
	rep := Build(res)
	if len(rep.Tables) != 1 || rep.Tables[0].Workload != "500Nodes" {
		t.Fatalf("tables = %+v", rep.Tables)
	}
	tbl := rep.Tables[0]
	if len(tbl.Rows) != 2 || tbl.Rows[0].Case != "SchedulingPodAffinity" || tbl.Rows[1].Case != "SchedulingBasic" {
		t.Fatalf("rows not in run-info order: %+v", tbl.Rows)
	}
	aff := tbl.Rows[0]
	if got := aff.Upstream.Throughput; got.N != 2 || got.Mean != 110 || got.Min != 100 || got.Max != 120 {
		t.Errorf("upstream throughput = %+v", got)
	}
	if got := aff.Ours.AttemptP99; got.Mean != 7.5 {
		t.Errorf("ours p99 = %+v (unschedulable attempts must not count)", got)
	}
	if aff.Ratio == nil || math.Abs(*aff.Ratio-160.0/110.0) > 1e-9 {
		t.Errorf("ratio = %v, want 160/110", aff.Ratio)
	}
	if aff.PhaseRatio == nil || math.Abs(*aff.PhaseRatio-(1000/100.+1000/120.)/(1000/150.+1000/170.)) > 1e-9 {
		t.Errorf("phase ratio = %v, want mean upstream duration over mean ours", aff.PhaseRatio)
	}
	if got := aff.Ours.ThroughputSamples; got.N != 2 || got.Min != 7 || got.Max != 8 {
		t.Errorf("ours throughput samples = %+v, want 7 and 8 from the .dat files", got)
	}
	if !aff.FewSamples() {
		t.Errorf("SchedulingPodAffinity's upstream r2 has 4 samples, FewSamples() = false")
	}
	basic := tbl.Rows[1]
	if got := basic.Upstream.ThroughputSamples; got.N != 1 || got.Values[0] != 2 {
		t.Errorf("basic upstream samples = %+v, want 2", got)
	}
	if got := basic.Ours.ThroughputSamples; got.N != 0 || got.Missing != 1 {
		t.Errorf("basic ours samples = %+v, want missing (its only .dat is another workload's)", got)
	}
	if !basic.FewSamples() {
		t.Errorf("SchedulingBasic's upstream run has 2 samples, FewSamples() = false")
	}
	wantPlugins := []PluginStat{{
		Upstream: "InterPodAffinity", Ours: "PlacementInterPodAffinity", ExtensionPoint: "PreFilter",
		UpstreamMs: NewStat([]float64{0.1, 0.12}), OursMs: NewStat([]float64{0.15, 0.17}),
	}, {
		Upstream: "InterPodAffinity", Ours: "PlacementInterPodAffinity", ExtensionPoint: "PreScore",
		UpstreamMs: NewStat([]float64{math.NaN(), math.NaN()}), OursMs: NewStat([]float64{3, math.NaN()}),
	}}
	if diff := cmp.Diff(wantPlugins, aff.Plugins, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	wantPoints := []ExtensionPointStat{
		{ExtensionPoint: "Filter", UpstreamMs: NewStat([]float64{2, 2.4}), OursMs: NewStat([]float64{3, 3.4}), FloorMs: NewStat(nil)},
		{ExtensionPoint: "PreScore", UpstreamMs: NewStat([]float64{1, 1.2}), OursMs: NewStat([]float64{1.5, 1.7}), FloorMs: NewStat(nil)},
	}
	if diff := cmp.Diff(wantPoints, aff.ExtensionPoints, cmpopts.EquateApprox(0, 1e-9), cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("extension points (-want +got):\n%s", diff)
	}
	if tbl.Ceiling == nil || tbl.Ceiling.Case != "SchedulingBasic" {
		t.Fatalf("ceiling = %+v", tbl.Ceiling)
	}
	if tbl.Ceiling.Ratio != nil || tbl.Ceiling.Ours.Throughput.N != 0 || tbl.Ceiling.Ours.Throughput.Missing != 1 {
		t.Errorf("unmeasured throughput must be missing, not zero: %+v", tbl.Ceiling.Ours.Throughput)
	}

	// Phase times, s: affinity upstream 10 and 8.33 (median 9.17), ours
	// 6.67 and 5.88 (median 6.27); ceiling upstream 2.5, ours 4. The
	// ceiling is the faster, upstream's: 2000 pods in 2.5 s, for both
	// profiles.
	wantShare := &CeilingShare{
		CeilingProfile:    Upstream,
		CeilingPodsPerSec: 800,
		Upstream:          ptr((1000 / ((10 + 1000/120.) / 2)) / 800),
		Ours:              ptr((1000 / ((1000/150. + 1000/170.) / 2)) / 800),
		OursRuns:          NewStat([]float64{150. / 800, 170. / 800}),
	}
	if diff := cmp.Diff(wantShare, aff.OfCeiling, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("share of the ceiling (-want +got):\n%s", diff)
	}
	wantBasic := &CeilingShare{CeilingProfile: Upstream, CeilingPodsPerSec: 800, Upstream: ptr(1), Ours: ptr(2.5 / 4), OursRuns: NewStat([]float64{2.5 / 4})}
	if diff := cmp.Diff(wantBasic, tbl.Rows[1].OfCeiling, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("the ceiling's own share: the faster profile at 100 %%, the other below (-want +got):\n%s", diff)
	}

	// This run has no floor: every floor cell is n/a.
	if aff.OursOfFloor != nil || aff.OursOfFloorThroughput != nil || aff.HeapOfFloor != nil || aff.OfCeiling.Floor != nil {
		t.Errorf("ratios to a floor that did not run: %v, %v, %v, %v", aff.OursOfFloor, aff.OursOfFloorThroughput, aff.HeapOfFloor, aff.OfCeiling.Floor)
	}
	if !slices.Equal(rep.Profiles, []string{Upstream, Ours}) {
		t.Errorf("profiles = %q, want those with samples (the run info names none)", rep.Profiles)
	}
	md := Markdown(rep)
	checkMarkdown(t, md, []string{
		"- Profiles run: upstream, ours (n/a below: not run)",
		"| SchedulingPodAffinity | 14 % | 20 % | n/a | 19–21 % |",
		"| SchedulingBasic (ceiling) | 100 % | 62 % | n/a | 62–62 % |",
		"the faster of upstream's and ours' SchedulingBasic in the same run (here the upstream profile's, 800.0 pods/s)",
		"| SchedulingPodAffinity | 110.0 [100.0–120.0] | 160.0 [150.0–170.0] | n/a | 1.45 † | n/a | 5.50 [5.00–6.00] / 3.50 [3.00–4.00] / n/a |",
		"| 305 [300–310] / 285 [280–290] / n/a | n/a |",
		"| SchedulingBasic (ceiling) | 400.0 | – | n/a | n/a | n/a |",
		"| SchedulingPodAffinity | 9.17 [8.33–10.00] / 6.27 [5.88–6.67] / n/a | 1.46 | n/a | 4 / 7 / n/a |",
		"† Some run's throughput Average is over fewer than 5 one-second samples",
		"| SchedulingBasic | 2.50 / 4.00 / n/a | 0.62 | n/a | 2 / – / n/a |",
		"Ceiling (SchedulingBasic/500Nodes, same run, no affinity): upstream 400.0 pods/s, ours – pods/s, floor n/a pods/s.",
		"| SchedulingPodAffinity | InterPodAffinity → PlacementInterPodAffinity | 0.1100 / 0.1600 |  | – / 3.0000 |  |",
		"| SchedulingPodAffinity |  | 2.2000 / 3.2000 / n/a | 1.1000 / 1.6000 / n/a |  |",
		"A gap (–) means no observation survived",
		"NumCPU 2",
		"Machine load during the run (1-min load average, 2 samples, 2 CPUs): mean 2.0, min 1.5, max 2.5",
	}, nil)
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report JSON: %v", err)
	}

	// Without the ceiling's pod count there is no share to show.
	delete(res.Info.MeasuredPods, "SchedulingBasic/500Nodes")
	rep = Build(res)
	if s := rep.Tables[0].Rows[0].OfCeiling; s != nil {
		t.Errorf("share without the ceiling's pod count: %+v", s)
	}
	if md := Markdown(rep); strings.Contains(md, "Against the ceiling") {
		t.Errorf("markdown shows shares it cannot compute:\n%s", md)
	}
}

// TestFloorColumns: with the floor run, each row has its stats, ours' share
// of it (phase time and throughput), ours' heap over its heap, its share of
// the ceiling and its time per extension point; a case the floor has no
// sample of shows "–", not n/a (the floor ran, that run did not measure).
func TestFloorColumns(t *testing.T) {
	dir := t.TempDir()
	for rep := 1; rep <= 2; rep++ {
		for _, p := range []string{Upstream, Ours, Floor} {
			progress(t, dir, "SchedulingPodAffinity", "500Nodes", p, rep, 10)
		}
	}
	run(t, dir, "SchedulingPodAffinity", Upstream, 1, 100, 5, 9, 300)
	run(t, dir, "SchedulingPodAffinity", Ours, 1, 150, 3, 7, 280)
	run(t, dir, "SchedulingPodAffinity", Floor, 1, 200, 2, 6, 250)
	run(t, dir, "SchedulingPodAffinity", Floor, 2, 220, 2, 6, 270)
	run(t, dir, "SchedulingPodAffinity", Ours, 2, 170, 4, 8, 290)
	run(t, dir, "SchedulingPodAffinity", Upstream, 2, 120, 6, 10, 310)
	run(t, dir, "SchedulingBasic", Upstream, 1, 400, 1, 2, 200)
	run(t, dir, "SchedulingBasic", Ours, 1, 400, 1, 2, 200)
	info := RunInfo{Repeats: 2, Cases: []string{"SchedulingPodAffinity", "SchedulingBasic"}, Profiles: []string{Upstream, Ours, Floor},
		FloorConfigBasis: "ours without PlacementInterPodAffinity",
		MeasuredPods:     map[string]int{"SchedulingPodAffinity/500Nodes": 1000, "SchedulingBasic/500Nodes": 1000}}
	writeRunInfo(t, dir, info)
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Build(res)
	aff, basic := rep.Tables[0].Rows[0], rep.Tables[0].Rows[1]
	if got := aff.Floor.Throughput; got.N != 2 || got.Mean != 210 {
		t.Errorf("floor throughput = %+v, want 200 and 220", got)
	}
	approx := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	approx("ours of floor by phase time", aff.OursOfFloor, (1000/200.+1000/220.)/(1000/150.+1000/170.))
	approx("ours of floor by throughput", aff.OursOfFloorThroughput, 160./210)
	approx("ours' heap over the floor's", aff.HeapOfFloor, 285./260)
	approx("floor's share of the ceiling", aff.OfCeiling.Floor, (1000/((1000/200.+1000/220.)/2))/400)
	wantPoints := []ExtensionPointStat{
		{ExtensionPoint: "Filter", UpstreamMs: NewStat([]float64{2, 2.4}), OursMs: NewStat([]float64{3, 3.4}), FloorMs: NewStat([]float64{4, 4.4})},
		{ExtensionPoint: "PreScore", UpstreamMs: NewStat([]float64{1, 1.2}), OursMs: NewStat([]float64{1.5, 1.7}), FloorMs: NewStat([]float64{2, 2.2})},
	}
	if diff := cmp.Diff(wantPoints, aff.ExtensionPoints, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("extension points (-want +got):\n%s", diff)
	}
	if basic.Floor.Throughput.N != 0 || basic.OursOfFloor != nil || basic.HeapOfFloor != nil {
		t.Errorf("SchedulingBasic has no floor run, got %+v, %v, %v", basic.Floor.Throughput, basic.OursOfFloor, basic.HeapOfFloor)
	}
	checkMarkdown(t, Markdown(rep), []string{
		"- Profiles run: upstream, ours, floor (n/a below: not run)",
		"- Profile floor = ours without PlacementInterPodAffinity",
		"| SchedulingPodAffinity | 110.0 [100.0–120.0] | 160.0 [150.0–170.0] | 210.0 [200.0–220.0] | 1.45 | 0.76 | 5.50 [5.00–6.00] / 3.50 [3.00–4.00] / 2.00 [2.00–2.00] |",
		"| 305 [300–310] / 285 [280–290] / 260 [250–270] | 1.10 |",
		"| SchedulingBasic (ceiling) | 400.0 | 400.0 | – | 1.00 | n/a |",
		"| SchedulingPodAffinity | 9.17 [8.33–10.00] / 6.27 [5.88–6.67] / 4.77 [4.55–5.00] | 1.46 | 0.76 | 10 / 10 / 10 |",
		"| SchedulingPodAffinity | 27 % | 40 % | 52 % | 38–42 % |",
		"| SchedulingPodAffinity |  | 2.2000 / 3.2000 / 4.2000 | 1.1000 / 1.6000 / 2.1000 |  |",
		"| ours/upstream | ours/floor |",
		"ours/floor by phase time",
	}, []string{"n/a pods/s"})
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"profiles":["upstream","ours","floor"]`, `"floor":{"throughputPodsPerSec"`, `"oursOfFloorPhase":0.7`,
		`"oursOfFloorThroughput":0.7`, `"oursHeapOfFloor":1.09`, `"floorAverageMs":{"n":2`} {
		if !strings.Contains(string(out), field) {
			t.Errorf("report.json lacks %s", field)
		}
	}
}

// The ceiling is the faster of upstream's and ours' SchedulingBasic: a slower
// SchedulingBasic of ours changes no share, a faster one lowers both; the
// floor's, however fast, is no candidate.
func TestCeilingIsTheFasterBasic(t *testing.T) {
	const workload = "500Nodes"
	build := func(basicUpstream, basicOurs float64) Table {
		t.Helper()
		sample := func(profile string, d float64) Sample {
			return Sample{Profile: profile, Rep: 1, DurationS: d, Throughput: math.NaN(), AttemptP50: math.NaN(), AttemptP99: math.NaN(), PeakHeapMB: math.NaN(), ThroughputSamples: math.NaN()}
		}
		res := &Results{
			Info: &RunInfo{Cases: []string{"Interleaved", CeilingCase}, MeasuredPods: map[string]int{
				MeasuredPodsKey("Interleaved", workload): 1000, MeasuredPodsKey(CeilingCase, workload): 1000}},
			Samples: map[Key][]Sample{
				{Case: "Interleaved", Workload: workload}: {sample(Upstream, 10), sample(Ours, 5)},
				{Case: CeilingCase, Workload: workload}:   {sample(Upstream, basicUpstream), sample(Ours, basicOurs), sample(Floor, 0.5)},
			},
		}
		tables := Build(res).Tables
		if len(tables) != 1 || len(tables[0].Rows) != 2 || tables[0].Rows[0].Case != "Interleaved" {
			t.Fatalf("tables = %+v", tables)
		}
		return tables[0]
	}
	for _, tc := range []struct {
		name                  string
		basicUp, basicOurs    float64
		profile               string
		interleavedUp, oursSh float64
	}{
		{"ours' Basic slower", 2, 4, Upstream, 0.2, 0.4},
		{"ours' Basic much slower: no share moves", 2, 8, Upstream, 0.2, 0.4},
		{"ours' Basic faster: the ceiling is ours, both shares drop", 2, 1, Ours, 0.1, 0.2},
		{"no Basic of ours: upstream's", 2, math.NaN(), Upstream, 0.2, 0.4},
		{"no Basic of upstream's: ours", math.NaN(), 4, Ours, 0.4, 0.8},
	} {
		tbl := build(tc.basicUp, tc.basicOurs)
		want := &CeilingShare{CeilingProfile: tc.profile, CeilingPodsPerSec: 1000 / math.Min(nanTo(tc.basicUp), nanTo(tc.basicOurs)),
			Upstream: ptr(tc.interleavedUp), Ours: ptr(tc.oursSh), OursRuns: NewStat([]float64{tc.oursSh})}
		if diff := cmp.Diff(want, tbl.Rows[0].OfCeiling, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("%s: share (-want +got):\n%s", tc.name, diff)
		}
	}
	if tbl := build(math.NaN(), math.NaN()); tbl.Rows[0].OfCeiling != nil {
		t.Errorf("no ceiling time at all: share %+v, want none", tbl.Rows[0].OfCeiling)
	}
}

// nanTo reads a missing time as infinitely slow.
func nanTo(f float64) float64 {
	if math.IsNaN(f) {
		return math.Inf(1)
	}
	return f
}

func ptr(f float64) *float64 { return &f }

// A line whose scheduler_perf lacks a data item or cannot run our own
// workloads says so: the run info lists it, the report prints n/a where it
// would be, and no table is built from the missing values.
func TestUnavailableIsShownAsNA(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{"SchedulingPodAffinity", CeilingCase} {
		for _, profile := range []string{Upstream, Ours} {
			name := "BenchmarkPerfScheduling/" + c + "/r1-" + profile + "/" + c + "/500Nodes/sched-1"
			// What scheduler_perf writes without a SchedulingDuration collector.
			writeItems(t, dir, "BenchmarkPerfScheduling_"+c+"_r1-"+profile+"_benchmark_x.json",
				item(name, "SchedulingThroughput", map[string]float64{"Average": 100}),
				item(name, "heap_memory_usage", map[string]float64{"Max": 300}))
		}
	}
	info := RunInfo{K8sVersion: "v1.35.4", Repeats: 1, Cases: []string{"SchedulingPodAffinity", CeilingCase},
		MeasuredPods: map[string]int{"SchedulingPodAffinity/500Nodes": 1000, "SchedulingBasic/500Nodes": 1000},
		Unavailable: []Unavailable{
			{What: SchedulingDurationMetric, Why: "no such collector"},
			{What: OwnWorkloads, Why: "no templateParams"},
		}}
	writeRunInfo(t, dir, info)
	res, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if why, lacks := res.Info.Lacks(SchedulingDurationMetric); !lacks || why != "no such collector" {
		t.Errorf("Lacks(%s) = %q, %v", SchedulingDurationMetric, why, lacks)
	}
	if _, lacks := (*RunInfo)(nil).Lacks(OwnWorkloads); lacks {
		t.Errorf("a run without run info lacks nothing it can name")
	}
	rep := Build(res)
	row := rep.Tables[0].Rows[0]
	if row.Upstream.DurationS.N != 0 || row.PhaseRatio != nil || row.OfCeiling != nil {
		t.Errorf("values built from a missing SchedulingDuration: duration %+v, phase ratio %v, share %+v",
			row.Upstream.DurationS, row.PhaseRatio, row.OfCeiling)
	}
	checkMarkdown(t, Markdown(rep), []string{
		"- n/a with k8s.io/kubernetes v1.35.4: SchedulingDuration: no such collector",
		"- n/a with k8s.io/kubernetes v1.35.4: test/perf/workloads: no templateParams",
		"not our own (test/perf/workloads: n/a, below)",
		"Measured phase and share of the ceiling: n/a (they need the SchedulingDuration data item: no such collector).",
		"| SchedulingPodAffinity | 100.0 | 100.0 | n/a | 1.00 | n/a |",
	}, []string{"Measured phase: SchedulingDuration", "Against the ceiling", "and our own from test/perf/workloads"})
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"unavailable":[{"what":"SchedulingDuration","why":"no such collector"}`) {
		t.Errorf("report.json does not carry the run's unavailable items: %s", out)
	}
}

// checkMarkdown fails t for each line of want md lacks and each of unwanted
// it has.
func checkMarkdown(t *testing.T, md string, want, unwanted []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(md, w) {
			t.Errorf("markdown lacks %q:\n%s", w, md)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(md, u) {
			t.Errorf("markdown has %q:\n%s", u, md)
		}
	}
}

// Package report turns the JSON data items scheduler_perf writes to
// -data-items-dir into side-by-side tables: upstream's default profile
// against ours, and ours against the floor (ours without the inter-pod
// affinity plugin), per test case and workload, with the spread over
// repeats.
//
// It relies on one naming contract with test/perf's benchmark: every data
// item's Name label is the sub-benchmark path
//
//	BenchmarkPerfScheduling/<case>/r<rep>-<profile>/<case>/<workload>/<measure>
//
// (scheduler_perf sets Name to the running benchmark's name plus the
// measured namespace or op name), so each item says which run it belongs to.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Profile names, as the benchmark uses them in sub-benchmark names.
const (
	Upstream = "upstream"
	Ours     = "ours"
	// Floor is ours without the inter-pod affinity plugin: the speed
	// limit of any inter-pod affinity plugin.
	Floor = "floor"
)

// allProfiles are the profile names in the order the report shows them.
func allProfiles() []string { return []string{Upstream, Ours, Floor} }

// CeilingCase is the test case without affinity that bounds what the
// affinity cases can reach on the same machine and run.
const CeilingCase = "SchedulingBasic"

// RunInfoFile is written by the benchmark next to the data items.
const RunInfoFile = "run-info.json"

// LoadFile holds "<run>\t<load1>\t<load5>\t<load15>" lines, one per
// workload run, written by the benchmark after each run.
const LoadFile = "loadavg.tsv"

// RunInfo describes the machine and the invocation.
type RunInfo struct {
	Started        string   `json:"started"`
	GoVersion      string   `json:"goVersion"`
	K8sVersion     string   `json:"k8sVersion"`
	NumCPU         int      `json:"numCPU"`
	GOMAXPROCS     int      `json:"gomaxprocs"`
	Repeats        int      `json:"repeats"`
	Order          string   `json:"order"`
	BenchPattern   string   `json:"benchPattern"`
	LabelFilter    string   `json:"labelFilter"`
	Cases          []string `json:"cases"`
	UpstreamDir    string   `json:"upstreamDir"`
	OurConfigBasis string   `json:"ourConfigBasis"`
	// FloorConfigBasis says what the floor profile leaves out of ours.
	FloorConfigBasis string `json:"floorConfigBasis,omitempty"`
	// Profiles are the profiles the invocation ran (its -profiles);
	// empty in the run info of a harness that always ran upstream and
	// ours.
	Profiles []string `json:"profiles,omitempty"`
	// MeasuredPods is how many pods each workload's measured op creates,
	// keyed "<test case>/<workload>" (see MeasuredPodsKey); a workload
	// whose count the harness could not read is absent.
	MeasuredPods map[string]int `json:"measuredPods,omitempty"`
	// Unavailable is what the run's scheduler_perf (the Kubernetes line the
	// benchmark was built for) cannot measure or run, and why: the report
	// shows it as n/a rather than leaving it out or filling it in.
	Unavailable []Unavailable `json:"unavailable,omitempty"`
}

// Unavailable is one thing a line's scheduler_perf cannot measure or run.
type Unavailable struct {
	// What is SchedulingDurationMetric or OwnWorkloads.
	What string `json:"what"`
	// Why names the upstream change the line predates.
	Why string `json:"why"`
}

// What an Unavailable can name.
const (
	// SchedulingDurationMetric is scheduler_perf's data item behind the
	// phase and ceiling tables (Sample.DurationS).
	SchedulingDurationMetric = "SchedulingDuration"
	// OwnWorkloads are the test cases of test/perf/workloads.
	OwnWorkloads = "test/perf/workloads"
)

// Lacks returns why the run could not measure or run what, if it could not.
func (info *RunInfo) Lacks(what string) (why string, lacks bool) {
	if info == nil {
		return "", false
	}
	for _, u := range info.Unavailable {
		if u.What == what {
			return u.Why, true
		}
	}
	return "", false
}

// MeasuredPodsKey is RunInfo.MeasuredPods' key for a workload.
func MeasuredPodsKey(testCase, workload string) string { return testCase + "/" + workload }

// DataItem is scheduler_perf's JSON data item.
type DataItem struct {
	Data   map[string]float64 `json:"data"`
	Unit   string             `json:"unit"`
	Labels map[string]string  `json:"labels,omitempty"`
}

type dataItemsFile struct {
	Version   string     `json:"version"`
	DataItems []DataItem `json:"dataItems"`
}

// Key identifies one measured op of one workload.
type Key struct {
	Case     string `json:"case"`
	Workload string `json:"workload"`
	Measure  string `json:"measure"`
}

// Sample is what one run of one profile measured for a Key.
type Sample struct {
	Profile string `json:"profile"`
	Rep     int    `json:"rep"`
	// Throughput is SchedulingThroughput Average, pods/s; NaN when the
	// harness could not measure it (fewer than two 1-s samples).
	Throughput float64 `json:"throughput"`
	// AttemptP50/P99 are scheduler_scheduling_attempt_duration_seconds
	// {result=scheduled} quantiles in ms (interpolated within histogram
	// buckets by the harness).
	AttemptP50 float64 `json:"attemptP50ms"`
	AttemptP99 float64 `json:"attemptP99ms"`
	// PeakHeapMB is the largest HeapInuse sample of the test process
	// during the measured op (apiserver, controllers and scheduler all
	// run in it).
	PeakHeapMB float64 `json:"peakHeapMB"`
	// DurationS is SchedulingDuration: creating and scheduling the measured pods.
	DurationS float64 `json:"durationS"`
	// ThroughputSamples is how many 1-s samples the Average is over: the
	// lines of the run's .dat progress file; NaN when there is no file.
	ThroughputSamples float64 `json:"throughputSamples"`
	// Plugins holds scheduler_plugin_execution_duration_seconds Average in
	// ms per plugin and extension point (the scheduler samples 10% of
	// cycles for this metric, and drops observations; see
	// pluginMetricCaveat).
	Plugins map[string]map[string]float64 `json:"plugins,omitempty"`
	// ExtensionPoints holds scheduler_framework_extension_point_duration_seconds
	// Average in ms per extension point: the whole profile's time at that
	// point per scheduling cycle, observed for every cycle and never dropped.
	ExtensionPoints map[string]float64 `json:"extensionPoints,omitempty"`
	// CPU is the run's CPU time per measured pod, from its CPU profile
	// (cpu.go); nil without one.
	CPU *CPU `json:"cpu,omitempty"`
}

// Results are all samples found in a directory.
type Results struct {
	Info    *RunInfo
	Samples map[Key][]Sample
	Files   int
	// Load1 are the 1-minute load averages recorded after each run.
	Load1 []float64
}

var (
	nameRE = regexp.MustCompile(`^BenchmarkPerfScheduling[^/]*/([^/]+)/r(\d+)-(` + strings.Join(allProfiles(), "|") + `)/([^/]+)/([^/]+)(?:/(.*))?$`)
	// The testing package appends #NN to duplicate sub-benchmark names
	// (go test -count>1).
	dupSuffix = regexp.MustCompile(`#\d+$`)
)

// ParseName splits a data item's Name label.
func ParseName(name string) (Key, string, int, error) {
	m := nameRE.FindStringSubmatch(name)
	if m == nil {
		return Key{}, "", 0, fmt.Errorf("name %q is not BenchmarkPerfScheduling/<case>/r<rep>-<profile>/<case>/<workload>/<measure>", name)
	}
	caseName := dupSuffix.ReplaceAllString(m[1], "")
	if inner := dupSuffix.ReplaceAllString(m[4], ""); inner != caseName {
		return Key{}, "", 0, fmt.Errorf("name %q: outer case %q differs from scheduler_perf's %q", name, caseName, inner)
	}
	rep, _ := strconv.Atoi(m[2])
	return Key{Case: caseName, Workload: dupSuffix.ReplaceAllString(m[5], ""), Measure: m[6]}, m[3], rep, nil
}

// runKey is one run: a Key's samples of one profile and repeat.
type runKey struct {
	Key
	profile string
	rep     int
}

// Load reads every scheduler_perf data-items file (BenchmarkPerfScheduling*.json) in dir.
func Load(dir string) (*Results, error) {
	files, err := filepath.Glob(filepath.Join(dir, "BenchmarkPerfScheduling*.json"))
	if err != nil {
		return nil, err
	}
	res := &Results{Samples: map[Key][]Sample{}}
	if raw, err := os.ReadFile(filepath.Join(dir, RunInfoFile)); err == nil {
		res.Info = &RunInfo{}
		if err := json.Unmarshal(raw, res.Info); err != nil {
			return nil, fmt.Errorf("%s: %w", RunInfoFile, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if raw, err := os.ReadFile(filepath.Join(dir, LoadFile)); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			fields := strings.Split(line, "\t")
			if len(fields) < 2 {
				continue
			}
			if v, err := strconv.ParseFloat(fields[1], 64); err == nil {
				res.Load1 = append(res.Load1, v)
			}
		}
	}
	samples := map[runKey]*Sample{}
	var order []runKey
	sort.Strings(files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var items dataItemsFile
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if len(items.DataItems) > 0 {
			res.Files++
		}
		for _, it := range items.DataItems {
			key, profile, rep, err := ParseName(it.Labels["Name"])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			rk := runKey{key, profile, rep}
			s := samples[rk]
			if s == nil {
				s = &Sample{Profile: profile, Rep: rep, Throughput: math.NaN(), AttemptP50: math.NaN(), AttemptP99: math.NaN(), PeakHeapMB: math.NaN(), DurationS: math.NaN(), ThroughputSamples: math.NaN()}
				samples[rk] = s
				order = append(order, rk)
			}
			addItem(s, it)
		}
	}
	if err := countProgressSamples(dir, func(caseWorkload, profile string, rep int, n int) {
		for _, rk := range order {
			if rk.profile == profile && rk.rep == rep && rk.Case+"_"+rk.Workload == caseWorkload {
				samples[rk].ThroughputSamples = float64(n)
			}
		}
	}); err != nil {
		return nil, err
	}
	if err := attachCPU(dir, res.Info, order, samples); err != nil {
		return nil, err
	}
	for _, rk := range order {
		res.Samples[rk.Key] = append(res.Samples[rk.Key], *samples[rk])
	}
	return res, nil
}

// datRE matches scheduler_perf's progress file name,
// <case>_<workload>_<topic>_<runID>.dat, where test/perf's topic ends in
// _r<rep>-<profile>. The workload may itself contain "_" (5000Nodes_5000Pods),
// so the case and workload are matched against the data items' keys, not split.
var datRE = runFileRE(`\.dat`)

// runFileRE matches a file scheduler_perf names for one run of test/perf,
// <case>_<workload>_<topic>_<runID><suffix>: submatches case_workload,
// repeat and profile.
func runFileRE(suffix string) *regexp.Regexp {
	return regexp.MustCompile(`^(.+)_[^_]+_r(\d+)-(` + strings.Join(allProfiles(), "|") + `)_[^_]+` + suffix + `$`)
}

// countProgressSamples calls found for each progress file in dir with its
// case_workload prefix, profile, repeat and number of samples (one line per
// 1-s sample the throughput Average is over).
func countProgressSamples(dir string, found func(caseWorkload, profile string, rep, n int)) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.dat"))
	if err != nil {
		return err
	}
	for _, f := range files {
		m := datRE.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		n := 0
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.TrimSpace(line) != "" {
				n++
			}
		}
		rep, _ := strconv.Atoi(m[2])
		found(m[1], m[3], rep, n)
	}
	return nil
}

func addItem(s *Sample, it DataItem) {
	switch it.Labels["Metric"] {
	case "SchedulingThroughput":
		s.Throughput = it.Data["Average"]
	case "scheduler_scheduling_attempt_duration_seconds":
		if it.Labels["result"] == "scheduled" {
			s.AttemptP50 = it.Data["Perc50"]
			s.AttemptP99 = it.Data["Perc99"]
		}
	case "heap_memory_usage":
		s.PeakHeapMB = it.Data["Max"]
	case SchedulingDurationMetric:
		s.DurationS = it.Data["Duration"]
	case "scheduler_framework_extension_point_duration_seconds":
		if s.ExtensionPoints == nil {
			s.ExtensionPoints = map[string]float64{}
		}
		s.ExtensionPoints[it.Labels["extension_point"]] = it.Data["Average"]
	case "scheduler_plugin_execution_duration_seconds":
		if s.Plugins == nil {
			s.Plugins = map[string]map[string]float64{}
		}
		p := it.Labels["plugin"]
		if s.Plugins[p] == nil {
			s.Plugins[p] = map[string]float64{}
		}
		s.Plugins[p][it.Labels["extension_point"]] = it.Data["Average"]
	}
}

// Stat summarises one metric over repeats. NaN samples (not measured) are
// left out and counted in Missing.
type Stat struct {
	N       int     `json:"n"`
	Missing int     `json:"missing,omitempty"`
	Mean    float64 `json:"mean"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Stddev  float64 `json:"stddev"` // sample stddev; 0 for N<2
	// Median is the middle value (the mean of the two middle ones for an
	// even N): one slow run out of five moves it less than the mean.
	Median float64   `json:"median"`
	Values []float64 `json:"values"`
}

// NewStat summarises vs.
func NewStat(vs []float64) Stat {
	var st Stat
	for _, v := range vs {
		if math.IsNaN(v) {
			st.Missing++
			continue
		}
		st.Values = append(st.Values, v)
	}
	st.N = len(st.Values)
	if st.N == 0 {
		st.Mean, st.Min, st.Max, st.Stddev, st.Median = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return st
	}
	st.Min, st.Max = slices.Min(st.Values), slices.Max(st.Values)
	sorted := slices.Sorted(slices.Values(st.Values))
	st.Median = (sorted[(st.N-1)/2] + sorted[st.N/2]) / 2
	sum := 0.0
	for _, v := range st.Values {
		sum += v
	}
	st.Mean = sum / float64(st.N)
	if st.N > 1 {
		ss := 0.0
		for _, v := range st.Values {
			ss += (v - st.Mean) * (v - st.Mean)
		}
		st.Stddev = math.Sqrt(ss / float64(st.N-1))
	}
	return st
}

// MarshalJSON writes NaN as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	type plain struct {
		N       int       `json:"n"`
		Missing int       `json:"missing,omitempty"`
		Mean    *float64  `json:"mean"`
		Min     *float64  `json:"min"`
		Max     *float64  `json:"max"`
		Stddev  *float64  `json:"stddev"`
		Median  *float64  `json:"median"`
		Values  []float64 `json:"values"`
	}
	num := func(f float64) *float64 {
		if math.IsNaN(f) {
			return nil
		}
		return &f
	}
	return json.Marshal(plain{s.N, s.Missing, num(s.Mean), num(s.Min), num(s.Max), num(s.Stddev), num(s.Median), s.Values})
}

// ProfileStats are one profile's statistics for a Key.
type ProfileStats struct {
	Throughput Stat `json:"throughputPodsPerSec"`
	AttemptP50 Stat `json:"attemptP50ms"`
	AttemptP99 Stat `json:"attemptP99ms"`
	PeakHeapMB Stat `json:"peakHeapMB"`
	DurationS  Stat `json:"schedulingDurationS"`
	// ThroughputSamples counts the 1-s samples behind each run's Throughput.
	ThroughputSamples Stat `json:"throughputSamples"`
	// CPU time per measured pod, ms, from the runs' CPU profiles (CPU's
	// shares); N is 0 when the invocation took none.
	CPUProcess          Stat `json:"cpuProcessMsPerPod"`
	CPUScheduler        Stat `json:"cpuSchedulerMsPerPod"`
	CPUFilter           Stat `json:"cpuFilterMsPerPod"`
	CPUInterPodAffinity Stat `json:"cpuInterPodAffinityMsPerPod"`
}

// PluginStat compares an in-tree plugin with ours at one extension point.
type PluginStat struct {
	Upstream       string `json:"upstreamPlugin"`
	Ours           string `json:"ourPlugin"`
	ExtensionPoint string `json:"extensionPoint"`
	UpstreamMs     Stat   `json:"upstreamAverageMs"`
	OursMs         Stat   `json:"oursAverageMs"`
}

// ExtensionPointStat compares the profiles' time at one extension point.
type ExtensionPointStat struct {
	ExtensionPoint string `json:"extensionPoint"`
	UpstreamMs     Stat   `json:"upstreamAverageMs"`
	OursMs         Stat   `json:"oursAverageMs"`
	FloorMs        Stat   `json:"floorAverageMs"`
}

// Row is one Key's comparison.
type Row struct {
	Key
	Upstream ProfileStats `json:"upstream"`
	Ours     ProfileStats `json:"ours"`
	Floor    ProfileStats `json:"floor"`
	// Ratio is mean(ours)/mean(upstream) throughput; null when either is
	// missing.
	Ratio *float64 `json:"throughputRatio"`
	// PhaseRatio is mean(upstream)/mean(ours) SchedulingDuration: the same
	// measured pods created and scheduled, so the throughput ratio over the
	// whole phase; null when either is missing. It does not depend on how
	// the phase falls into 1-s samples (see Row.FewSamples).
	PhaseRatio *float64 `json:"phaseRatio"`
	// OursOfFloor is ours' share of the floor by phase time,
	// mean(floor)/mean(ours) SchedulingDuration (the floor schedules the
	// same pods): what ours reaches of the speed limit an inter-pod
	// affinity plugin has; null when either is missing.
	OursOfFloor *float64 `json:"oursOfFloorPhase"`
	// OursOfFloorThroughput is mean(ours)/mean(floor) throughput; null
	// when either is missing.
	OursOfFloorThroughput *float64 `json:"oursOfFloorThroughput"`
	// HeapOfFloor is mean(ours)/mean(floor) peak heap; null when either
	// is missing.
	HeapOfFloor *float64     `json:"oursHeapOfFloor"`
	Plugins     []PluginStat `json:"plugins,omitempty"`
	// OfCeiling compares the row with the ceiling, the faster profile's
	// CeilingCase in the same run; null when a pod count or a phase time
	// is missing.
	OfCeiling *CeilingShare `json:"ofCeiling,omitempty"`
	// ExtensionPoints: whole-profile time per cycle; upstream and ours
	// differ only in our four plugins, ours and the floor only in the
	// inter-pod affinity one, so a difference here is theirs.
	ExtensionPoints []ExtensionPointStat `json:"extensionPoints,omitempty"`
}

// CeilingShare is a workload's throughput as a fraction of the ceiling's:
// its measured pods over its median phase time, against the same for
// CeilingCase at the same scale in the same run, taking the faster of
// upstream's and ours' CeilingCase (see ceilingTime) as the ceiling of
// every profile. The phase time needs no sampling clock (see
// Row.FewSamples), and the pod counts differ between test cases at some
// scales, so both are used. The median, not the mean: on a shared machine
// one slow run in five would otherwise move the line.
type CeilingShare struct {
	// CeilingProfile is the profile whose CeilingCase was faster.
	CeilingProfile string `json:"ceilingProfile"`
	// CeilingPodsPerSec is the ceiling: its measured pods over its median
	// phase time.
	CeilingPodsPerSec float64  `json:"ceilingPodsPerSec"`
	Upstream          *float64 `json:"upstream"`
	Ours              *float64 `json:"ours"`
	Floor             *float64 `json:"floor"`
	// OursRuns is each run of ours against the ceiling, to show the spread
	// behind Ours.
	OursRuns Stat `json:"oursRuns"`
}

// Table holds the rows of one workload name (one scale), e.g. 500Nodes.
type Table struct {
	Workload string `json:"workload"`
	Rows     []Row  `json:"rows"`
	// Ceiling is SchedulingBasic's row at the same workload, if it ran.
	Ceiling *Row `json:"ceiling,omitempty"`
}

// Report is the machine-readable result.
type Report struct {
	Run *RunInfo `json:"run,omitempty"`
	// Profiles are the profiles that ran: the run info's, or else those
	// with samples. A profile not among them is n/a in the Markdown.
	Profiles []string `json:"profiles"`
	// LoadAverage1m summarises the 1-minute load average after each run.
	LoadAverage1m *Stat   `json:"loadAverage1m,omitempty"`
	Tables        []Table `json:"tables"`
}

// Build aggregates results into tables. Case order follows the run info
// when known, then name order.
func Build(res *Results) *Report {
	rep := &Report{Run: res.Info, Profiles: ranProfiles(res)}
	if len(res.Load1) > 0 {
		st := NewStat(res.Load1)
		rep.LoadAverage1m = &st
	}
	var caseOrder []string
	if res.Info != nil {
		caseOrder = res.Info.Cases
	}
	rank := func(c string) int {
		if i := slices.Index(caseOrder, c); i >= 0 {
			return i
		}
		return len(caseOrder)
	}
	keys := make([]Key, 0, len(res.Samples))
	for k := range res.Samples {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.Workload != b.Workload {
			return a.Workload < b.Workload
		}
		if ra, rb := rank(a.Case), rank(b.Case); ra != rb {
			return ra < rb
		}
		if a.Case != b.Case {
			return a.Case < b.Case
		}
		return a.Measure < b.Measure
	})
	tables := map[string]*Table{}
	var order []string
	for _, k := range keys {
		t := tables[k.Workload]
		if t == nil {
			t = &Table{Workload: k.Workload}
			tables[k.Workload] = t
			order = append(order, k.Workload)
		}
		row := buildRow(k, res.Samples[k])
		t.Rows = append(t.Rows, row)
		if k.Case == CeilingCase && t.Ceiling == nil {
			r := row
			t.Ceiling = &r
		}
	}
	for _, w := range order {
		t := tables[w]
		if t.Ceiling != nil && res.Info != nil {
			for i := range t.Rows {
				t.Rows[i].OfCeiling = ofCeiling(*t, t.Rows[i], res.Info.MeasuredPods)
			}
		}
		rep.Tables = append(rep.Tables, *t)
	}
	return rep
}

// ranProfiles are the profiles res's invocation ran: the run info's list
// when it has one, or else every profile with a sample, in allProfiles'
// order.
func ranProfiles(res *Results) []string {
	if res.Info != nil && len(res.Info.Profiles) > 0 {
		return res.Info.Profiles
	}
	seen := map[string]bool{}
	for _, samples := range res.Samples {
		for _, s := range samples {
			seen[s.Profile] = true
		}
	}
	var out []string
	for _, p := range allProfiles() {
		if seen[p] {
			out = append(out, p)
		}
	}
	return out
}

// ceilingTime is the ceiling's phase time: the shorter of the two
// profiles' median SchedulingDuration for CeilingCase (both schedule the
// same pods, so the shorter time is the higher pods/s), and the profile it
// is from; ok is false when neither profile has one. Taking the faster
// profile means a slower SchedulingBasic of ours lowers the ceiling of
// neither profile, so it can never raise a share. The floor's is no
// candidate: whether the floor ran changes no share of the other two.
func ceilingTime(c *Row) (median float64, profile string, ok bool) {
	u, o := c.Upstream.DurationS.Median, c.Ours.DurationS.Median
	switch {
	case u > 0 && (!(o > 0) || u <= o):
		return u, Upstream, true
	case o > 0:
		return o, Ours, true
	}
	return 0, "", false
}

// ofCeiling compares row with t's ceiling, the faster of upstream's and
// ours' SchedulingBasic (ceilingTime), for every profile; nil when the
// counts or times to do so are missing, or when the row is one of several
// measured ops of its workload (the count is the workload's). The
// ceiling's own row gets a share too: 100 % for the faster of upstream and
// ours, below for the other, and the floor's against the same.
func ofCeiling(t Table, row Row, pods map[string]int) *CeilingShare {
	c := t.Ceiling
	if measuresPerWorkload(t, row.Case) > 1 || measuresPerWorkload(t, c.Case) > 1 {
		return nil
	}
	n, cn := float64(pods[MeasuredPodsKey(row.Case, row.Workload)]), float64(pods[MeasuredPodsKey(c.Case, c.Workload)])
	cd, profile, ok := ceilingTime(c)
	if n == 0 || cn == 0 || !ok {
		return nil
	}
	// share is n pods in d seconds against the ceiling's cn pods in cd;
	// nil without a positive time.
	share := func(d float64) *float64 {
		if !(d > 0) {
			return nil
		}
		f := (n / d) / (cn / cd)
		return &f
	}
	s := &CeilingShare{
		CeilingProfile:    profile,
		CeilingPodsPerSec: cn / cd,
		Upstream:          share(row.Upstream.DurationS.Median),
		Ours:              share(row.Ours.DurationS.Median),
		Floor:             share(row.Floor.DurationS.Median),
	}
	if s.Upstream == nil && s.Ours == nil && s.Floor == nil {
		return nil
	}
	var runs []float64
	for _, d := range row.Ours.DurationS.Values {
		if f := share(d); f != nil {
			runs = append(runs, *f)
		}
	}
	s.OursRuns = NewStat(runs)
	return s
}

func buildRow(k Key, samples []Sample) Row {
	by := map[string][]Sample{}
	for _, s := range samples {
		by[s.Profile] = append(by[s.Profile], s)
	}
	row := Row{Key: k, Upstream: profileStats(by[Upstream]), Ours: profileStats(by[Ours]), Floor: profileStats(by[Floor])}
	row.Ratio = meanRatio(row.Ours.Throughput, row.Upstream.Throughput)
	row.PhaseRatio = meanRatio(row.Upstream.DurationS, row.Ours.DurationS)
	row.OursOfFloor = meanRatio(row.Floor.DurationS, row.Ours.DurationS)
	row.OursOfFloorThroughput = meanRatio(row.Ours.Throughput, row.Floor.Throughput)
	row.HeapOfFloor = meanRatio(row.Ours.PeakHeapMB, row.Floor.PeakHeapMB)
	for _, pl := range plugins.Set() {
		name, ours := pl.Replaces, pl.Name
		points := map[string]bool{}
		for _, s := range samples {
			for ep := range s.Plugins[name] {
				points[ep] = true
			}
			for ep := range s.Plugins[ours] {
				points[ep] = true
			}
		}
		for _, ep := range sortedExtensionPoints(points) {
			pick := func(list []Sample, plugin string) Stat {
				return pickStat(list, func(s Sample) (float64, bool) { v, ok := s.Plugins[plugin][ep]; return v, ok })
			}
			row.Plugins = append(row.Plugins, PluginStat{
				Upstream: name, Ours: ours, ExtensionPoint: ep,
				UpstreamMs: pick(by[Upstream], name),
				OursMs:     pick(by[Ours], ours),
			})
		}
	}
	points := map[string]bool{}
	for _, s := range samples {
		for ep := range s.ExtensionPoints {
			points[ep] = true
		}
	}
	for _, ep := range sortedExtensionPoints(points) {
		get := func(s Sample) (float64, bool) { v, ok := s.ExtensionPoints[ep]; return v, ok }
		row.ExtensionPoints = append(row.ExtensionPoints, ExtensionPointStat{
			ExtensionPoint: ep, UpstreamMs: pickStat(by[Upstream], get), OursMs: pickStat(by[Ours], get), FloorMs: pickStat(by[Floor], get),
		})
	}
	return row
}

// meanRatio is mean(num)/mean(den); nil unless both were measured and
// den's mean is positive.
func meanRatio(num, den Stat) *float64 {
	if num.N == 0 || den.N == 0 || !(den.Mean > 0) {
		return nil
	}
	r := num.Mean / den.Mean
	return &r
}

// pickStat summarises one value over samples; a sample without it counts
// as missing.
func pickStat(list []Sample, get func(Sample) (float64, bool)) Stat {
	vs := make([]float64, 0, len(list))
	for _, s := range list {
		v, ok := get(s)
		if !ok {
			v = math.NaN()
		}
		vs = append(vs, v)
	}
	return NewStat(vs)
}

// extensionPointOrder is the framework's order of the points plugins run at.
var extensionPointOrder = []string{"PreEnqueue", "Sign", "PreFilter", "Filter", "PreFilterExtensionAddPod", "PreFilterExtensionRemovePod", "PostFilter", "PreScore", "Score", "ScoreExtensionNormalize", "Reserve", "Unreserve", "Permit", "PreBindPreFlight", "PreBind", "Bind", "PostBind"}

func sortedExtensionPoints(points map[string]bool) []string {
	var out []string
	for ep := range points {
		out = append(out, ep)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := slices.Index(extensionPointOrder, out[i]), slices.Index(extensionPointOrder, out[j])
		if ri < 0 {
			ri = len(extensionPointOrder)
		}
		if rj < 0 {
			rj = len(extensionPointOrder)
		}
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}

func profileStats(samples []Sample) ProfileStats {
	get := func(f func(Sample) float64) Stat {
		vs := make([]float64, 0, len(samples))
		for _, s := range samples {
			vs = append(vs, f(s))
		}
		return NewStat(vs)
	}
	return ProfileStats{
		Throughput:          get(func(s Sample) float64 { return s.Throughput }),
		AttemptP50:          get(func(s Sample) float64 { return s.AttemptP50 }),
		AttemptP99:          get(func(s Sample) float64 { return s.AttemptP99 }),
		PeakHeapMB:          get(func(s Sample) float64 { return s.PeakHeapMB }),
		DurationS:           get(func(s Sample) float64 { return s.DurationS }),
		ThroughputSamples:   get(func(s Sample) float64 { return s.ThroughputSamples }),
		CPUProcess:          cpuStat(samples, func(c CPU) float64 { return c.Process }),
		CPUScheduler:        cpuStat(samples, func(c CPU) float64 { return c.Scheduler }),
		CPUFilter:           cpuStat(samples, func(c CPU) float64 { return c.Filter }),
		CPUInterPodAffinity: cpuStat(samples, func(c CPU) float64 { return c.InterPodAffinity }),
	}
}

// Markdown renders the report for people.
func Markdown(r *Report) string {
	var b strings.Builder
	b.WriteString("# scheduler_perf: upstream default profile vs placement-scheduler profile, and the floor\n\n")
	fmt.Fprintf(&b, "- Profiles run: %s (n/a below: not run)\n", strings.Join(r.Profiles, ", "))
	if info := r.Run; info != nil {
		fmt.Fprintf(&b, "- Started %s; k8s.io/kubernetes %s; %s; NumCPU %d, GOMAXPROCS %d\n", info.Started, info.K8sVersion, info.GoVersion, info.NumCPU, info.GOMAXPROCS)
		fmt.Fprintf(&b, "- Repeats: %d per profile, %s\n", info.Repeats, info.Order)
		fmt.Fprintf(&b, "- Selection: `-bench '%s'`, `-perf-scheduling-label-filter '%s'`\n", info.BenchPattern, info.LabelFilter)
		own := "and our own from test/perf/workloads"
		if _, lacks := info.Lacks(OwnWorkloads); lacks {
			own = "not our own (test/perf/workloads: n/a, below)"
		}
		fmt.Fprintf(&b, "- Workloads: upstream's files, unmodified, from %s (a 15000Nodes workload of upstream's is its 5000Nodes with every count x3), "+
			"%s; profile ours = %s\n", info.UpstreamDir, own, info.OurConfigBasis)
		if info.FloorConfigBasis != "" {
			fmt.Fprintf(&b, "- Profile floor = %s\n", info.FloorConfigBasis)
		}
		for _, u := range info.Unavailable {
			fmt.Fprintf(&b, "- n/a with k8s.io/kubernetes %s: %s: %s\n", info.K8sVersion, u.What, u.Why)
		}
	}
	if l := r.LoadAverage1m; l != nil {
		cpus := "?"
		if r.Run != nil {
			cpus = strconv.Itoa(r.Run.NumCPU)
		}
		fmt.Fprintf(&b, "- Machine load during the run (1-min load average, %d samples, %s CPUs): mean %.1f, min %.1f, max %.1f\n", l.N, cpus, l.Mean, l.Min, l.Max)
	}
	b.WriteString("- Cells: mean [min–max] over repeats (n shown when a run is missing). Throughput: SchedulingThroughput Average (pods/s over 1-s samples of the measured pods). " +
		"Attempt latency: scheduler_scheduling_attempt_duration_seconds{result=scheduled}, ms, bucket-interpolated. " +
		"Heap: peak HeapInuse of the whole test process (in-process apiserver + scheduler + harness), MB.\n")
	b.WriteString("- A measuring stick, not a verdict: one machine, few repeats; read the spread before the ratio.\n")
	f := formatter{profiles: r.Profiles}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "\n## %s\n\n", t.Workload)
		if c := t.Ceiling; c != nil {
			fmt.Fprintf(&b, "Ceiling (%s/%s, same run, no affinity): upstream %s pods/s, ours %s pods/s, floor %s pods/s.\n\n", c.Case, c.Workload,
				f.cell(Upstream, c.Upstream.Throughput, 1), f.cell(Ours, c.Ours.Throughput, 1), f.cell(Floor, c.Floor.Throughput, 1))
		}
		b.WriteString("| Test case | upstream pods/s | ours pods/s | floor pods/s | ours/upstream | ours/floor | attempt p50 ms (up / ours / floor) | attempt p99 ms (up / ours / floor) | peak heap MB (up / ours / floor) | ours heap/floor |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		few := false
		for _, row := range t.Rows {
			name := row.Case
			if row.Case == CeilingCase {
				name += " (ceiling)"
			}
			if row.Measure != "" && measuresPerWorkload(t, row.Case) > 1 {
				name += " [" + row.Measure + "]"
			}
			throughputRatio := func(r *float64) string {
				if r == nil {
					return "n/a"
				}
				out := fmt.Sprintf("%.2f", *r)
				if row.FewSamples() {
					out += " †"
					few = true
				}
				return out
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
				f.cell(Upstream, row.Upstream.Throughput, 1), f.cell(Ours, row.Ours.Throughput, 1), f.cell(Floor, row.Floor.Throughput, 1),
				throughputRatio(row.Ratio), throughputRatio(row.OursOfFloorThroughput),
				f.cells(row, func(ps ProfileStats) Stat { return ps.AttemptP50 }, 2),
				f.cells(row, func(ps ProfileStats) Stat { return ps.AttemptP99 }, 2),
				f.cells(row, func(ps ProfileStats) Stat { return ps.PeakHeapMB }, 0),
				ratioCell(row.HeapOfFloor))
		}
		if few {
			fmt.Fprintf(&b, "\n† Some run's throughput Average is over fewer than %d one-second samples: read the ratios by phase time below.\n", MinThroughputSamples)
		}
		if why, lacks := r.Run.Lacks(SchedulingDurationMetric); lacks {
			fmt.Fprintf(&b, "\nMeasured phase and share of the ceiling: n/a (they need the %s data item: %s).\n", SchedulingDurationMetric, why)
		} else {
			writePhaseTable(&b, t, f)
			writeCeilingTable(&b, t, f)
		}
		writeExtensionPointTable(&b, t, f)
		writeCPUTable(&b, t, f)
		writePluginTable(&b, t, f)
	}
	if len(r.Tables) == 0 {
		b.WriteString("\nNo data items found.\n")
	}
	return b.String()
}

// MinThroughputSamples is the number of 1-s throughput samples below which a run's
// Average says more about where the phase fell against the sampling clock
// than about the scheduler: scheduler_perf skips the first second and
// records the last, partial one only if a tick comes before the last pod is
// bound, each moving a 2–4 sample Average by tens of percent.
const MinThroughputSamples = 5

// FewSamples reports whether some run of any profile has a throughput
// Average over fewer than MinThroughputSamples samples.
func (r Row) FewSamples() bool {
	for _, st := range []Stat{r.Upstream.ThroughputSamples, r.Ours.ThroughputSamples, r.Floor.ThroughputSamples} {
		if st.N > 0 && st.Min < MinThroughputSamples {
			return true
		}
	}
	return false
}

// writePhaseTable compares the profiles by how long the measured phase took,
// which needs no sampling clock.
func writePhaseTable(b *strings.Builder, t Table, f formatter) {
	var lines []string
	for _, row := range t.Rows {
		if row.PhaseRatio == nil && row.OursOfFloor == nil {
			continue
		}
		samples := func(ps ProfileStats) Stat {
			st := ps.ThroughputSamples
			// The fewest samples, as a one-value Stat: cell prints it bare.
			if st.N > 0 {
				st = NewStat([]float64{st.Min})
			}
			return st
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s |\n", row.Case,
			f.cells(row, func(ps ProfileStats) Stat { return ps.DurationS }, 2),
			ratioCell(row.PhaseRatio), ratioCell(row.OursOfFloor),
			f.cells(row, samples, 0)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nMeasured phase: SchedulingDuration, the seconds from the start of the measured op (before its first pod is created) until all its pods were scheduled, mean [min–max]. " +
		"Every profile creates and schedules the same pods, so upstream's time over ours is the throughput ratio over the whole phase, pod creation included, " +
		"and the floor's time over ours is ours' share of the floor: of the speed ours' profile would have with no inter-pod affinity plugin at all. " +
		"The last column is the fewest 1-s samples any run's throughput Average is over.\n\n")
	b.WriteString("| Test case | phase s (up / ours / floor) | ours/upstream by phase time | ours/floor by phase time | 1-s samples, fewest (up / ours / floor) |\n|---|---:|---:|---:|---:|\n")
	for _, l := range lines {
		b.WriteString(l)
	}
}

// writeCeilingTable shows each workload's throughput as a share of the
// ceiling's from the same run and profile.
func writeCeilingTable(b *strings.Builder, t Table, f formatter) {
	pct := func(profile string, v *float64) string {
		if !f.ran(profile) {
			return "n/a"
		}
		if v == nil {
			return "–"
		}
		return fmt.Sprintf("%.0f %%", 100**v)
	}
	var lines []string
	var ceiling *CeilingShare
	for _, row := range t.Rows {
		s := row.OfCeiling
		if s == nil {
			continue
		}
		ceiling = s
		runs := "–"
		if st := s.OursRuns; st.N > 0 {
			runs = fmt.Sprintf("%.0f–%.0f %%", 100*st.Min, 100*st.Max)
		}
		name := row.Case
		if row.Case == CeilingCase {
			name += " (ceiling)"
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s |\n", name, pct(Upstream, s.Upstream), pct(Ours, s.Ours), pct(Floor, s.Floor), runs))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\nAgainst the ceiling: each workload's pods/s (its measured pods over its median phase time) as a share of the ceiling, "+
		"the faster of upstream's and ours' %s in the same run (here the %s profile's, %.1f pods/s), for every profile: a slower %s of ours lowers no ceiling, so it cannot raise a share. "+
		"The last column is each run of ours against the ceiling: with few repeats on a shared machine, read it before the median.\n\n",
		t.Ceiling.Case, ceiling.CeilingProfile, ceiling.CeilingPodsPerSec, t.Ceiling.Case)
	b.WriteString("| Test case | upstream, % of ceiling | ours, % of ceiling | floor, % of ceiling | ours, each run |\n|---|---:|---:|---:|---:|\n")
	for _, l := range lines {
		b.WriteString(l)
	}
}

// pluginTablePoints are the extension points shown in the Markdown per-plugin
// table; report.json has every point with its spread.
var pluginTablePoints = []string{"PreFilter", "Filter", "PreScore", "Score"}

func writePluginTable(b *strings.Builder, t Table, f formatter) {
	var lines []string
	for _, row := range t.Rows {
		byPair := map[string]map[string]PluginStat{}
		var pairs []string
		for _, p := range row.Plugins {
			pair := p.Upstream + " → " + p.Ours
			if byPair[pair] == nil {
				byPair[pair] = map[string]PluginStat{}
				pairs = append(pairs, pair)
			}
			byPair[pair][p.ExtensionPoint] = p
		}
		for _, pair := range pairs {
			if cells, ok := f.pointCells([]string{Upstream, Ours}, func(ep string) []Stat {
				p := byPair[pair][ep]
				return []Stat{p.UpstreamMs, p.OursMs}
			}); ok {
				lines = append(lines, fmt.Sprintf("| %s | %s | %s |\n", row.Case, pair, cells))
			}
		}
	}
	writeTimeTable(b, "Per-plugin time: scheduler_plugin_execution_duration_seconds Average, ms, mean over repeats, upstream / ours. "+pluginMetricCaveat+
		" report.json has every extension point with its spread.", []string{"Test case", "plugin"}, lines)
}

// pluginMetricCaveat is why the per-plugin table has gaps and few samples.
// kube-scheduler records plugin execution time for a random 10% of cycles,
// through an asynchronous recorder whose buffer holds 1000 observations
// and is flushed once a second; when it is full, observations are dropped
// silently. Filter is observed per plugin per node, so at 5000 nodes one
// sampled cycle's Filter phase (hundreds of nodes times several plugins)
// fills the buffer, and the PreScore, Score and Normalize observations that
// follow in that cycle are dropped unless a flush happens to fall in
// between: a PreScore cell there rests on a handful of cycles, or none
// ("–"), and which profile gets one is chance.
const pluginMetricCaveat = "Sampled (a random 10% of cycles) and lossy: the scheduler's asynchronous metric buffer (1000 observations, flushed every second) " +
	"overflows with per-node Filter observations in large clusters, so PreScore/Score values after them are mostly dropped. " +
	"A gap (–) means no observation survived, not that the plugin took no time; compare the per-extension-point table, which has every cycle."

// writeExtensionPointTable renders the whole profile's time per cycle at
// pluginTablePoints, upstream / ours / floor.
func writeExtensionPointTable(b *strings.Builder, t Table, f formatter) {
	var lines []string
	for _, row := range t.Rows {
		byPoint := map[string]ExtensionPointStat{}
		for _, e := range row.ExtensionPoints {
			byPoint[e.ExtensionPoint] = e
		}
		if cells, ok := f.pointCells(allProfiles(), func(ep string) []Stat {
			e := byPoint[ep]
			return []Stat{e.UpstreamMs, e.OursMs, e.FloorMs}
		}); ok {
			lines = append(lines, fmt.Sprintf("| %s | %s |\n", row.Case, cells))
		}
	}
	writeTimeTable(b, "Per extension point, whole profile: scheduler_framework_extension_point_duration_seconds Average, ms per scheduling cycle, mean over repeats, upstream / ours / floor. "+
		"Every cycle is observed (Filter: the whole filtering phase). Upstream and ours differ only in our four plugins, so a difference there is theirs; "+
		"the floor is ours without the inter-pod affinity plugin, so ours minus floor is that plugin's time (PreFilter, Filter, PreScore, Score).",
		[]string{"Test case"}, lines)
}

// formatter renders cells for the profiles that ran, and n/a for the
// others.
type formatter struct{ profiles []string }

func (f formatter) ran(profile string) bool { return slices.Contains(f.profiles, profile) }

// cell is the package's cell, or n/a if profile did not run.
func (f formatter) cell(profile string, s Stat, prec int) string {
	if !f.ran(profile) {
		return "n/a"
	}
	return cell(s, prec)
}

// cells is "upstream / ours / floor" for one statistic of row.
func (f formatter) cells(row Row, get func(ProfileStats) Stat, prec int) string {
	return f.cell(Upstream, get(row.Upstream), prec) + " / " + f.cell(Ours, get(row.Ours), prec) + " / " + f.cell(Floor, get(row.Floor), prec)
}

// pointCells renders, for each of pluginTablePoints, the mean of each of
// profiles' stats (get returns them in the same order) joined by " / ",
// empty where no profile has a value; ok is false when no cell has one.
func (f formatter) pointCells(profiles []string, get func(ep string) []Stat) (cells string, ok bool) {
	out := make([]string, 0, len(pluginTablePoints))
	for _, ep := range pluginTablePoints {
		stats := get(ep)
		if !slices.ContainsFunc(stats, func(s Stat) bool { return s.N > 0 }) {
			out = append(out, "")
			continue
		}
		ok = true
		parts := make([]string, len(stats))
		for i, s := range stats {
			parts[i] = "n/a"
			if f.ran(profiles[i]) {
				parts[i] = meanOnly(s)
			}
		}
		out = append(out, strings.Join(parts, " / "))
	}
	return strings.Join(out, " | "), ok
}

// ratioCell is a ratio with two decimals, n/a when it could not be taken.
func ratioCell(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *r)
}

// writeTimeTable writes intro and a table whose columns are lead then
// pluginTablePoints, unless there are no lines.
func writeTimeTable(b *strings.Builder, intro string, lead []string, lines []string) {
	if len(lines) == 0 {
		return
	}
	b.WriteString("\n" + intro + "\n\n")
	fmt.Fprintf(b, "| %s | %s |\n|%s%s\n", strings.Join(lead, " | "), strings.Join(pluginTablePoints, " | "),
		strings.Repeat("---|", len(lead)), strings.Repeat("---:|", len(pluginTablePoints)))
	for _, l := range lines {
		b.WriteString(l)
	}
}

func meanOnly(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	return strconv.FormatFloat(s.Mean, 'f', 4, 64)
}

func measuresPerWorkload(t Table, c string) int {
	n := 0
	for _, r := range t.Rows {
		if r.Case == c {
			n++
		}
	}
	return n
}

// cell formats mean [min–max]; a lone sample is printed as is.
func cell(s Stat, prec int) string {
	if s.N == 0 {
		return "–"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	out := f(s.Mean)
	if s.N > 1 {
		out += " [" + f(s.Min) + "–" + f(s.Max) + "]"
	}
	if s.Missing > 0 {
		out += fmt.Sprintf(" (n=%d)", s.N)
	}
	return out
}

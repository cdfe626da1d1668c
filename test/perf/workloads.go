// Package perf runs upstream's scheduler_perf workloads (k8s.io/kubernetes
// test/integration/scheduler_perf, read from the module cache) with up to
// three profiles: upstream's default profile, the profile we ship in
// manifests/scheduler-config.yaml, and the floor, ours without the inter-pod
// affinity plugin (see Floor). It is a measuring stick, not a gate: the
// benchmark asserts nothing about speed.
//
// Upstream's workload files are never copied into this repository. At run
// time each test case is written, unchanged except for what the harness needs
// to run it from elsewhere, to a temporary directory:
//   - relative template paths become absolute, because scheduler_perf opens
//     them with os.ReadFile relative to the test's working directory (upstream
//     runs from the YAML's own directory; we run from test/perf);
//   - for ours and the floor, schedulerConfigPath points at a config derived
//     from manifests/scheduler-config.yaml;
//   - for every profile, metricsCollectorConfig is set to upstream's default
//     collection plus our plugin names (see CollectorConfig for why).
//
// Each test case goes to its own file so the benchmark can interleave
// profiles per test case (upstream, ours, floor, floor, ours, upstream)
// instead of running one whole suite after the other, which would turn
// drift on a shared machine into a difference between profiles.
package perf

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/perf/report"
)

// Profile names the scheduler configuration a run uses.
type Profile string

const (
	// Upstream is scheduler_perf's default component config: the in-tree
	// default profile with upstream's plugins.
	Upstream Profile = "upstream"
	// Ours is manifests/scheduler-config.yaml's profile, renamed
	// default-scheduler because upstream's pod templates ask for that name.
	Ours Profile = "ours"
	// Floor is ours without the inter-pod affinity plugin (report.FloorPlugin):
	// nothing enforces or scores pod (anti-)affinity terms, every other
	// plugin runs as in ours. No inter-pod affinity plugin can make a
	// profile faster than leaving it out, so the floor is the speed limit
	// ours is measured against.
	Floor Profile = "floor"
)

// AllProfiles are the profiles every test case is prepared for, in the
// order an odd repeat runs them (RunOrder).
func AllProfiles() []Profile { return []Profile{Upstream, Ours, Floor} }

// Source is one performance-config file, upstream's or ours, and the test
// cases taken from it.
type Source struct {
	// Topic is the name upstream's own Benchmark passes for this file (for
	// ours, a name of our own). It goes into scheduler_perf's file names.
	Topic string
	// File is relative to the scheduler_perf directory, or for Own to
	// test/perf.
	File string
	// Own marks a file of this repository (test/perf/workloads) rather than
	// one of upstream's.
	Own bool
	// Cases restricts the file to these test cases; nil takes them all.
	Cases []string
	// Scale adds larger workloads to some of the file's test cases.
	Scale []Scaling
}

// Scaling adds a workload to each of Cases: the parameters of the test
// case's workload From, each multiplied by Factor, under the name Name.
// Upstream stops at 5000 nodes; this is how its workloads run at more,
// unchanged otherwise.
type Scaling struct {
	Cases  []string
	From   string
	Name   string
	Factor int
}

// scaled15000 is upstream's 5000Nodes workload with node and pod counts x3.
func scaled15000(cases ...string) []Scaling {
	return []Scaling{{Cases: cases, From: "5000Nodes", Name: "15000Nodes", Factor: 3}}
}

// OwnWorkloadsFile holds our own test cases, relative to test/perf.
const OwnWorkloadsFile = "workloads/performance-config.yaml"

// DefaultSources are upstream's affinity test cases (those without a
// workload at the chosen scale simply do not run), SchedulingBasic, the
// ceiling without affinity, and our own test cases. Upstream's four
// inter-pod affinity cases and SchedulingBasic also get a 15000Nodes
// workload.
var DefaultSources = []Source{
	{Topic: "affinity", File: "affinity/performance-config.yaml",
		Scale: scaled15000("SchedulingPodAntiAffinity", "SchedulingPodAffinity", "SchedulingPreferredPodAffinity", "SchedulingPreferredPodAntiAffinity")},
	{Topic: "misc", File: "misc/performance-config.yaml", Cases: []string{"SchedulingBasic"},
		Scale: scaled15000("SchedulingBasic")},
	{Topic: "placement", File: OwnWorkloadsFile, Own: true},
}

// LineSources are DefaultSources less what this line's scheduler_perf
// cannot run (LineGaps): what the benchmark runs here.
func LineSources() []Source {
	if ownWorkloadsGap == "" {
		return DefaultSources
	}
	var out []Source
	for _, src := range DefaultSources {
		if !src.Own {
			out = append(out, src)
		}
	}
	return out
}

// LineGaps is what the scheduler_perf of the Kubernetes line this is built
// for cannot measure or run (the minor_*.go files say which upstream change
// each follows). The run info carries it, so the report shows n/a there.
func LineGaps() []report.Unavailable {
	var gaps []report.Unavailable
	if schedulingDurationGap != "" {
		gaps = append(gaps, report.Unavailable{What: report.SchedulingDurationMetric, Why: schedulingDurationGap})
	}
	if ownWorkloadsGap != "" {
		gaps = append(gaps, report.Unavailable{What: report.OwnWorkloads, Why: ownWorkloadsGap})
	}
	return gaps
}

// OurProfileName is the profile name in manifests/scheduler-config.yaml.
const OurProfileName = "placement-scheduler"

// harnessProfileName is the name upstream's pod templates schedule with.
const harnessProfileName = "default-scheduler"

// Case is one test case prepared for every profile.
type Case struct {
	Name  string
	Topic string
	// Workloads are the test case's workload names and labels, in file order.
	Workloads []Workload
	// Files holds the temporary test-case file for each profile.
	Files map[Profile]string
}

// Workload is what the harness needs to know to select one, and to put
// its throughput next to another's.
type Workload struct {
	Name   string
	Labels []string
	// MeasuredPods is how many pods the test case's measured op creates
	// at this workload's parameters; 0 when that is not one createPods op
	// with a count the harness can read.
	MeasuredPods int
}

// Options configure Prepare.
type Options struct {
	// UpstreamDir is scheduler_perf's directory in the module cache.
	UpstreamDir string
	// OwnDir is test/perf, where Own sources' files are.
	OwnDir string
	// Dir receives the temporary copies.
	Dir string
	// Sources default to LineSources().
	Sources []Source
	// PluginNames are the plugins whose execution time is collected.
	PluginNames []string
}

// Setup is the result of Prepare.
type Setup struct {
	// OurConfig is the derived scheduler config for our profile.
	OurConfig string
	// FloorConfig is the derived scheduler config for the floor.
	FloorConfig string
	Cases       []Case
}

// Prepare writes the derived scheduler configs and one file per test case
// and profile under opts.Dir.
func Prepare(opts Options) (*Setup, error) {
	sources := opts.Sources
	if sources == nil {
		sources = LineSources()
	}
	setup := &Setup{
		OurConfig:   filepath.Join(opts.Dir, "scheduler-config-ours.yaml"),
		FloorConfig: filepath.Join(opts.Dir, "scheduler-config-floor.yaml"),
	}
	if err := DeriveOurConfig(manifests.SchedulerConfig(), setup.OurConfig); err != nil {
		return nil, err
	}
	if err := DeriveFloorConfig(manifests.SchedulerConfig(), setup.FloorConfig); err != nil {
		return nil, err
	}
	configs := map[Profile]string{Ours: setup.OurConfig, Floor: setup.FloorConfig}
	seen := map[string]bool{}
	for _, src := range sources {
		cases, err := prepareSource(opts, src, configs)
		if err != nil {
			return nil, err
		}
		for _, c := range cases {
			// Sub-benchmarks are named after test cases; a duplicate would
			// be renamed "#01" by the testing package and break the report.
			if seen[c.Name] {
				return nil, fmt.Errorf("test case %s appears in more than one source", c.Name)
			}
			seen[c.Name] = true
		}
		setup.Cases = append(setup.Cases, cases...)
	}
	return setup, nil
}

// SourcePath is where src's file is.
func SourcePath(opts Options, src Source) (string, error) {
	if !src.Own {
		return filepath.Join(opts.UpstreamDir, src.File), nil
	}
	if opts.OwnDir == "" {
		return "", fmt.Errorf("source %s is test/perf's own, but Options.OwnDir is not set", src.File)
	}
	return filepath.Join(opts.OwnDir, src.File), nil
}

// prepareSource writes src's test cases once per profile, with
// schedulerConfigPath set to configs[profile] where there is one (upstream
// runs scheduler_perf's default config).
func prepareSource(opts Options, src Source, configs map[Profile]string) ([]Case, error) {
	path, err := SourcePath(opts, src)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading workloads: %w", err)
	}
	var testCases []map[string]any
	if err := yaml.Unmarshal(raw, &testCases); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	var cases []Case
	found := map[string]bool{}
	for _, tc := range testCases {
		name, _ := tc["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("%s: test case without a name", path)
		}
		if src.Cases != nil && !slices.Contains(src.Cases, name) {
			continue
		}
		found[name] = true
		if _, ok := tc["schedulerConfigPath"]; ok {
			// Such a case measures a config of its own; there is no
			// "upstream default vs ours" to compare.
			return nil, fmt.Errorf("%s: test case %s sets its own schedulerConfigPath", path, name)
		}
		if err := absolutizePaths(tc, filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("%s: test case %s: %w", path, name, err)
		}
		if err := setCollectorConfig(tc, opts.PluginNames); err != nil {
			return nil, fmt.Errorf("%s: test case %s: %w", path, name, err)
		}
		for _, sc := range src.Scale {
			if slices.Contains(sc.Cases, name) {
				if err := addScaledWorkload(tc, sc); err != nil {
					return nil, fmt.Errorf("%s: test case %s: %w", path, name, err)
				}
			}
		}
		c := Case{Name: name, Topic: src.Topic, Files: map[Profile]string{}}
		c.Workloads, err = workloads(tc)
		if err != nil {
			return nil, fmt.Errorf("%s: test case %s: %w", path, name, err)
		}
		for _, p := range AllProfiles() {
			out := maps.Clone(tc) // only top-level keys differ between profiles
			if cfg, ok := configs[p]; ok {
				out["schedulerConfigPath"] = cfg
			}
			file := filepath.Join(opts.Dir, string(p), src.Topic, name+".yaml")
			if err := writeYAML(file, []any{out}); err != nil {
				return nil, err
			}
			c.Files[p] = file
		}
		cases = append(cases, c)
	}
	for _, want := range src.Cases {
		if !found[want] {
			return nil, fmt.Errorf("%s: no test case %s", path, want)
		}
	}
	for _, sc := range src.Scale {
		for _, want := range sc.Cases {
			if !found[want] {
				return nil, fmt.Errorf("%s: no test case %s to add %s to", path, want, sc.Name)
			}
		}
	}
	return cases, nil
}

// addScaledWorkload appends sc's workload to the test case: a copy of
// workload sc.From (labels, feature gates, threshold selector) with every
// parameter multiplied by sc.Factor and no threshold (upstream's thresholds
// are for its own sizes). Every parameter must be a whole number: a
// parameter that is not a count cannot be scaled, and guessing would
// measure something else than upstream's workload at a larger size.
func addScaledWorkload(tc map[string]any, sc Scaling) error {
	if sc.Factor < 2 {
		return fmt.Errorf("scaling %s to %s: factor %d, want at least 2", sc.From, sc.Name, sc.Factor)
	}
	list, _ := tc["workloads"].([]any)
	var from map[string]any
	for _, w := range list {
		m, _ := w.(map[string]any)
		switch m["name"] {
		case sc.Name:
			return fmt.Errorf("has a workload %s already", sc.Name)
		case sc.From:
			from = m
		}
	}
	if from == nil {
		return fmt.Errorf("no workload %s to scale to %s", sc.From, sc.Name)
	}
	scaled := map[string]any{}
	for k, v := range from {
		switch k {
		case "threshold":
		case "params":
			params, _ := v.(map[string]any)
			out := map[string]any{}
			for p, pv := range params {
				// sigs.k8s.io/yaml decodes numbers as float64.
				f, ok := pv.(float64)
				if !ok || f != float64(int64(f)) {
					return fmt.Errorf("workload %s: parameter %s = %v is not a count, cannot scale it to %s", sc.From, p, pv, sc.Name)
				}
				out[p] = f * float64(sc.Factor)
			}
			scaled[k] = out
		default:
			scaled[k] = v
		}
	}
	scaled["name"] = sc.Name
	tc["workloads"] = append(list, scaled)
	return nil
}

func workloads(tc map[string]any) ([]Workload, error) {
	ops, _ := tc["workloadTemplate"].([]any)
	list, _ := tc["workloads"].([]any)
	var out []Workload
	for _, w := range list {
		m, ok := w.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("workload is %T, not a mapping", w)
		}
		name, _ := m["name"].(string)
		wl := Workload{Name: name}
		labels, _ := m["labels"].([]any)
		for _, l := range labels {
			if s, ok := l.(string); ok {
				wl.Labels = append(wl.Labels, s)
			}
		}
		params, _ := m["params"].(map[string]any)
		wl.MeasuredPods = measuredPods(ops, params)
		out = append(out, wl)
	}
	return out, nil
}

// measuredPods is the count of the one createPods op of ops that collects
// metrics, read from its count or from params through its countParam
// ("$name"); 0 when there is not exactly one such op or its count cannot
// be read.
func measuredPods(ops []any, params map[string]any) int {
	n, found := 0, 0
	for _, o := range ops {
		op, _ := o.(map[string]any)
		if collect, _ := op["collectMetrics"].(bool); !collect {
			continue
		}
		found++
		if code, _ := op["opcode"].(string); code != "createPods" {
			return 0
		}
		v := op["count"]
		if p, ok := op["countParam"].(string); ok && v == nil {
			v = params[strings.TrimPrefix(p, "$")]
		}
		// sigs.k8s.io/yaml decodes numbers as float64.
		if f, ok := v.(float64); ok && f > 0 && f == float64(int(f)) {
			n = int(f)
		}
	}
	if found != 1 {
		return 0
	}
	return n
}

// isPathKey reports whether a test-case key names an input file that
// scheduler_perf opens relative to the working directory: every
// *TemplatePath (defaultPodTemplatePath, podTemplatePath, nodeTemplatePath,
// namespaceTemplatePath, persistentVolume[Claim]TemplatePath, templatePath)
// and churn's templatePaths. Output paths (the profile op's filePath) are
// relative to -data-items-dir and are left alone.
func isPathKey(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, "templatepath") || k == "templatepaths"
}

// absolutizePaths rewrites relative input paths under v, resolved against
// dir, and checks that each file exists so a bad rewrite fails here rather
// than minutes into a run.
func absolutizePaths(v any, dir string) error {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if isPathKey(k) {
				switch p := val.(type) {
				case string:
					abs, err := absolutize(p, dir)
					if err != nil {
						return err
					}
					t[k] = abs
					continue
				case []any:
					for i, e := range p {
						s, ok := e.(string)
						if !ok {
							return fmt.Errorf("%s[%d] is %T, not a path", k, i, e)
						}
						abs, err := absolutize(s, dir)
						if err != nil {
							return err
						}
						p[i] = abs
					}
					continue
				}
			}
			if err := absolutizePaths(val, dir); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range t {
			if err := absolutizePaths(e, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

func absolutize(p, dir string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("template: %w", err)
	}
	return p, nil
}

// CollectorConfig returns upstream's default metrics collection
// (defaultMetricsCollectorConfig in scheduler_perf.go, plus its queueing
// hint series, which it adds while gate SchedulerQueueingHints is on: GA and
// locked on since 1.34) with pluginNames as the plugin label values. The pod
// group series are the line's own (podGroupMetrics).
//
// Why it is injected rather than left to the default: upstream builds its
// default collector config at package initialisation from the exported
// PluginNames slice, so the slice header is captured then and names appended
// later (as upstream's doc comment suggests) are never collected. Setting the
// same config explicitly, built from the same exported sources, is the only
// way to get per-plugin timings for out-of-tree plugins. It is set for both
// profiles so both collect exactly the same series.
func CollectorConfig(pluginNames []string) map[string]any {
	type lv = map[string]any
	plugins := slices.Clone(pluginNames)
	events := schedframework.AllClusterEventLabels()
	collected := map[string]any{
		"scheduler_framework_extension_point_duration_seconds": []lv{
			{"label": "extension_point", "values": metrics.ExtensionPoints},
		},
		"scheduler_scheduling_attempt_duration_seconds": []lv{
			{"label": "result", "values": []string{metrics.ScheduledResult, metrics.UnschedulableResult, metrics.ErrorResult}},
		},
		"scheduler_pod_scheduling_duration_seconds": nil,
		"scheduler_plugin_execution_duration_seconds": []lv{
			{"label": "plugin", "values": plugins},
			{"label": "extension_point", "values": metrics.ExtensionPoints},
		},
		"scheduler_queueing_hint_execution_duration_seconds": []lv{
			{"label": "plugin", "values": plugins},
			{"label": "event", "values": events},
		},
		"scheduler_event_handling_duration_seconds": []lv{
			{"label": "event", "values": events},
		},
	}
	maps.Copy(collected, podGroupMetrics())
	return map[string]any{"metrics": collected}
}

// setCollectorConfig injects CollectorConfig, or, if the test case brings
// its own collection, adds our names to its plugin label values.
func setCollectorConfig(tc map[string]any, pluginNames []string) error {
	existing, ok := tc["metricsCollectorConfig"]
	if !ok {
		tc["metricsCollectorConfig"] = CollectorConfig(pluginNames)
		return nil
	}
	cfg, _ := existing.(map[string]any)
	metricsMap, _ := cfg["metrics"].(map[string]any)
	for _, sel := range metricsMap {
		list, _ := sel.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if l, _ := m["label"].(string); l != "plugin" {
				continue
			}
			values, _ := m["values"].([]any)
			for _, n := range pluginNames {
				if !slices.Contains(values, any(n)) {
					values = append(values, n)
				}
			}
			m["values"] = values
		}
	}
	return nil
}

// DeriveOurConfig writes the shipped config with the profile renamed to
// default-scheduler and leader election off. Everything else (plugin order,
// weights, pluginConfig) is kept as shipped.
func DeriveOurConfig(shipped []byte, out string) error {
	cfg, _, err := harnessConfig(shipped)
	if err != nil {
		return err
	}
	return writeYAML(out, cfg)
}

// DeriveFloorConfig writes DeriveOurConfig's config without report.FloorPlugin:
// gone from every extension point's enabled and disabled lists and from
// pluginConfig, everything else as in ours. It fails if the shipped
// profile does not enable the plugin, since the floor would then be ours.
func DeriveFloorConfig(shipped []byte, out string) error {
	cfg, profile, err := harnessConfig(shipped)
	if err != nil {
		return err
	}
	pl, err := report.FloorPlugin()
	if err != nil {
		return err
	}
	if err := removePlugin(profile, pl.Name); err != nil {
		return fmt.Errorf("%s: %w", shippedConfigName, err)
	}
	return writeYAML(out, cfg)
}

// shippedConfigName names the shipped config in errors.
const shippedConfigName = "manifests/scheduler-config.yaml"

// harnessConfig parses the shipped config and returns it, and its one
// profile, renamed default-scheduler and with leader election off.
func harnessConfig(shipped []byte) (cfg, profile map[string]any, err error) {
	if err := yaml.Unmarshal(shipped, &cfg); err != nil {
		return nil, nil, fmt.Errorf("parsing %s: %w", shippedConfigName, err)
	}
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) != 1 {
		return nil, nil, fmt.Errorf("%s: want exactly one profile, found %d", shippedConfigName, len(profiles))
	}
	profile, _ = profiles[0].(map[string]any)
	if name, _ := profile["schedulerName"].(string); name != OurProfileName {
		return nil, nil, fmt.Errorf("%s: profile is %q, want %q", shippedConfigName, name, OurProfileName)
	}
	profile["schedulerName"] = harnessProfileName
	le, _ := cfg["leaderElection"].(map[string]any)
	if le == nil {
		le = map[string]any{}
		cfg["leaderElection"] = le
	}
	le["leaderElect"] = false
	return cfg, profile, nil
}

// removePlugin deletes plugin from every extension point's enabled and
// disabled lists of profile (multiPoint, preFilter, ...) and its args from
// pluginConfig; an error if no list enabled it.
func removePlugin(profile map[string]any, plugin string) error {
	named := func(v any) bool {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		return name == plugin
	}
	enabled := 0
	points, _ := profile["plugins"].(map[string]any)
	for _, set := range points {
		lists, _ := set.(map[string]any)
		for _, which := range []string{"enabled", "disabled"} {
			list, ok := lists[which].([]any)
			if !ok {
				continue
			}
			kept := slices.DeleteFunc(slices.Clone(list), named)
			if which == "enabled" {
				enabled += len(list) - len(kept)
			}
			lists[which] = kept
		}
	}
	if enabled == 0 {
		return fmt.Errorf("the profile enables no %s to leave out", plugin)
	}
	if pcs, ok := profile["pluginConfig"].([]any); ok {
		profile["pluginConfig"] = slices.DeleteFunc(slices.Clone(pcs), named)
	}
	return nil
}

func writeYAML(file string, v any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", file, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

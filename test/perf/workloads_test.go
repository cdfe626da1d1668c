package perf

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/test/perf/report"
)

// prepareForTest writes the temp copies of the test cases of sources (nil:
// LineSources(), what this line's scheduler_perf runs) and our derived
// config for one test or benchmark.
func prepareForTest(t testing.TB, sources []Source) *Setup {
	t.Helper()
	if env.setupErr != nil {
		t.Fatal(env.setupErr)
	}
	setup, err := Prepare(Options{
		UpstreamDir: env.upstreamDir,
		OwnDir:      filepath.Join(env.repoRoot, "test", "perf"),
		Dir:         t.TempDir(),
		Sources:     sources,
		PluginNames: benchmark.PluginNames,
	})
	if err != nil {
		t.Fatal(err)
	}
	return setup
}

// The temporary copies must be upstream's test cases with only the
// documented rewrites: absolute template paths, schedulerConfigPath for
// ours, and metricsCollectorConfig.
func TestPrepareKeepsUpstreamTestCases(t *testing.T) {
	setup := prepareForTest(t, nil)
	originals := map[string]map[string]any{}
	dirs := map[string]string{}
	scaled := map[string][]Scaling{}
	for _, src := range DefaultSources {
		if src.Own {
			continue
		}
		for _, sc := range src.Scale {
			for _, c := range sc.Cases {
				scaled[c] = append(scaled[c], sc)
			}
		}
		path := filepath.Join(env.upstreamDir, src.File)
		for _, tc := range readCases(t, path) {
			name := tc["name"].(string)
			if src.Cases == nil || slices.Contains(src.Cases, name) {
				originals[name] = tc
				dirs[name] = filepath.Dir(path)
			}
		}
	}
	var upstreamCases []Case
	for _, c := range setup.Cases {
		if c.Topic != ownTopic {
			upstreamCases = append(upstreamCases, c)
		}
	}
	if len(upstreamCases) != len(originals) {
		t.Fatalf("prepared %d upstream test cases, upstream files select %d", len(upstreamCases), len(originals))
	}
	for _, want := range []string{"SchedulingPodAntiAffinity", "SchedulingPodAffinity", "SchedulingNodeAffinity",
		"MixedSchedulingBasePod", "SchedulingPreferredAffinityWithNSSelector", "SchedulingBasic"} {
		if _, ok := originals[want]; !ok {
			t.Errorf("test case %s not selected", want)
		}
	}
	ours := ourPluginNames()
	for _, c := range upstreamCases {
		for _, p := range AllProfiles() {
			got := readCases(t, c.Files[p])
			if len(got) != 1 {
				t.Fatalf("%s: %d test cases in one file", c.Files[p], len(got))
			}
			tc := got[0]
			cfgPath, hasCfg := tc["schedulerConfigPath"]
			switch {
			case p == Ours && cfgPath != setup.OurConfig:
				t.Errorf("%s/%s: schedulerConfigPath = %v, want %s", c.Name, p, cfgPath, setup.OurConfig)
			case p == Floor && cfgPath != setup.FloorConfig:
				t.Errorf("%s/%s: schedulerConfigPath = %v, want %s", c.Name, p, cfgPath, setup.FloorConfig)
			case p == Upstream && hasCfg:
				t.Errorf("%s/%s: upstream run must use scheduler_perf's default config, has schedulerConfigPath %v", c.Name, p, cfgPath)
			}
			mcc, _ := tc["metricsCollectorConfig"].(map[string]any)
			plugins := pluginLabelValues(mcc)
			if len(plugins) == 0 {
				t.Errorf("%s/%s: no plugin label values collected", c.Name, p)
			}
			for _, v := range plugins {
				for _, n := range ours {
					if !slices.Contains(v, n) {
						t.Errorf("%s/%s: plugin label values %v lack %s", c.Name, p, v, n)
					}
				}
			}
			delete(tc, "schedulerConfigPath")
			delete(tc, "metricsCollectorConfig")
			tc["workloads"] = withoutScaled(t, c.Name, tc["workloads"], scaled[c.Name])
			if diff := compareModuloPaths(originals[c.Name], tc, dirs[c.Name], ""); diff != "" {
				t.Errorf("%s/%s differs from upstream beyond path rewriting: %s", c.Name, p, diff)
			}
		}
	}
}

// ownTopic is the topic of test/perf's own source in DefaultSources.
const ownTopic = "placement"

// withoutScaled checks that the workloads the harness added are the
// scalings asked for, and returns the list without them.
func withoutScaled(t *testing.T, name string, v any, scalings []Scaling) []any {
	t.Helper()
	list, _ := v.([]any)
	byName := map[string]map[string]any{}
	for _, w := range list {
		m := w.(map[string]any)
		byName[m["name"].(string)] = m
	}
	var out []any
	for _, w := range list {
		m := w.(map[string]any)
		i := slices.IndexFunc(scalings, func(sc Scaling) bool { return sc.Name == m["name"] })
		if i < 0 {
			out = append(out, w)
			continue
		}
		sc := scalings[i]
		from := byName[sc.From]
		if from == nil {
			t.Errorf("%s: %s added without %s", name, sc.Name, sc.From)
			continue
		}
		want := map[string]any{}
		for p, pv := range from["params"].(map[string]any) {
			want[p] = pv.(float64) * float64(sc.Factor)
		}
		if diff := cmp.Diff(want, m["params"]); diff != "" {
			t.Errorf("%s/%s: params are not %s's x%d (-want +got):\n%s", name, sc.Name, sc.From, sc.Factor, diff)
		}
		if !reflect.DeepEqual(from["labels"], m["labels"]) || !reflect.DeepEqual(from["featureGates"], m["featureGates"]) {
			t.Errorf("%s/%s: labels or feature gates differ from %s's", name, sc.Name, sc.From)
		}
		scalings = slices.Delete(slices.Clone(scalings), i, i+1)
	}
	for _, sc := range scalings {
		t.Errorf("%s: no workload %s", name, sc.Name)
	}
	return out
}

func readCases(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	if err := yaml.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func pluginLabelValues(mcc map[string]any) [][]string {
	var out [][]string
	metrics, _ := mcc["metrics"].(map[string]any)
	for _, sel := range metrics {
		list, _ := sel.([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if m["label"] != "plugin" {
				continue
			}
			var vs []string
			for _, v := range m["values"].([]any) {
				vs = append(vs, v.(string))
			}
			out = append(out, vs)
		}
	}
	return out
}

// compareModuloPaths reports the first difference between an upstream
// value and its rewritten copy, where input paths must be the upstream
// path made absolute against dir.
func compareModuloPaths(orig, got any, dir, at string) string {
	switch o := orig.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return at + ": not a mapping"
		}
		if len(o) != len(g) {
			return at + ": keys differ: " + cmp.Diff(keys(o), keys(g))
		}
		for k, ov := range o {
			gv, ok := g[k]
			if !ok {
				return at + "." + k + ": missing"
			}
			if isPathKey(k) {
				if d := comparePaths(ov, gv, dir); d != "" {
					return at + "." + k + ": " + d
				}
				continue
			}
			if d := compareModuloPaths(ov, gv, dir, at+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(o) != len(g) {
			return at + ": list differs"
		}
		for i := range o {
			if d := compareModuloPaths(o[i], g[i], dir, at+"["+strconv.Itoa(i)+"]"); d != "" {
				return d
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(orig, got) {
			return at + ": " + cmp.Diff(orig, got)
		}
		return ""
	}
}

func comparePaths(orig, got any, dir string) string {
	switch o := orig.(type) {
	case string:
		if want := filepath.Join(dir, o); got != want {
			return "got " + got.(string) + ", want " + want
		}
		return ""
	case []any:
		g := got.([]any)
		for i := range o {
			if d := comparePaths(o[i], g[i], dir); d != "" {
				return d
			}
		}
		return ""
	}
	return "unexpected path value"
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The derived config must be the shipped profile, decoded and defaulted
// exactly as scheduler_perf does, differing only in profile name and leader
// election.
func TestDerivedConfigIsShippedProfile(t *testing.T) {
	setup := prepareForTest(t, nil)
	raw, err := os.ReadFile(setup.OurConfig)
	if err != nil {
		t.Fatal(err)
	}
	derived := loadConfig(t, raw)
	if err := validation.ValidateKubeSchedulerConfiguration(derived); err != nil {
		t.Fatalf("derived config invalid: %v", err)
	}
	shipped := loadConfig(t, manifests.SchedulerConfig())
	if len(derived.Profiles) != 1 || derived.Profiles[0].SchedulerName != "default-scheduler" {
		t.Fatalf("derived profiles = %+v, want one named default-scheduler", derived.Profiles)
	}
	if derived.LeaderElection.LeaderElect {
		t.Error("derived config keeps leader election on")
	}
	shipped.Profiles[0].SchedulerName = "default-scheduler"
	shipped.LeaderElection.LeaderElect = false
	if diff := cmp.Diff(shipped, derived); diff != "" {
		t.Errorf("derived config differs from the shipped one beyond name and leader election (-shipped +derived):\n%s", diff)
	}
	// Guard against measuring upstream twice: ours in, the in-tree four out.
	var enabled []string
	for _, p := range derived.Profiles[0].Plugins.MultiPoint.Enabled {
		enabled = append(enabled, p.Name)
	}
	for _, pl := range plugins.Set() {
		if !slices.Contains(enabled, pl.Name) {
			t.Errorf("multiPoint lacks %s: %v", pl.Name, enabled)
		}
		if slices.Contains(enabled, pl.Replaces) {
			t.Errorf("multiPoint still enables in-tree %s", pl.Replaces)
		}
	}
}

// The floor must be ours less exactly one plugin, the one pkg/plugins.Set()
// has replacing InterPodAffinity: both derived configs are loaded as
// kube-scheduler loads --config, their frameworks built with the registry
// the scheduler binary has, and every extension point's plugin list (and
// weight) compared.
func TestFloorIsOursWithoutInterPodAffinity(t *testing.T) {
	setup := prepareForTest(t, nil)
	left, err := report.FloorPlugin()
	if err != nil {
		t.Fatal(err)
	}
	if left.Replaces != "InterPodAffinity" {
		t.Fatalf("report.FloorPlugin() replaces %s", left.Replaces)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	built := map[Profile]*config.Plugins{}
	configs := map[Profile]*config.KubeSchedulerConfiguration{}
	for p, file := range map[Profile]string{Ours: setup.OurConfig, Floor: setup.FloorConfig} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := profile.LoadConfig(raw, file)
		if err != nil {
			t.Fatal(err)
		}
		configs[p] = cfg
		client := fake.NewClientset()
		src, err := profile.NewSources(ctx, client, informers.NewSharedInformerFactory(client, 0))
		if err != nil {
			t.Fatal(err)
		}
		fw, err := profile.Build(ctx, &cfg.Profiles[0], src, k8sline.NewEmptySnapshot(), nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		built[p] = fw.ListPlugins()
		if _, ok := fw.Plugins[left.Name]; ok != (p == Ours) {
			t.Errorf("%s: instantiates %s = %v", p, left.Name, ok)
		}
	}
	// Ours minus the plugin, at every extension point: equal to the floor,
	// and a real difference (the plugin runs somewhere in ours).
	want := built[Ours].DeepCopy()
	removed := 0
	for _, set := range pluginSets(want) {
		before := len(set.Enabled)
		set.Enabled = slices.DeleteFunc(set.Enabled, func(pl config.Plugin) bool { return pl.Name == left.Name })
		removed += before - len(set.Enabled)
	}
	if removed == 0 {
		t.Fatalf("ours runs %s at no extension point: %+v", left.Name, built[Ours])
	}
	if diff := cmp.Diff(want, built[Floor]); diff != "" {
		t.Errorf("floor differs from ours without %s (-want +floor):\n%s", left.Name, diff)
	}
	// Beyond the plugins, the configs are the same: only the plugin's
	// args go from pluginConfig.
	oursCfg, floorCfg := configs[Ours].DeepCopy(), configs[Floor].DeepCopy()
	oursCfg.Profiles[0].Plugins, floorCfg.Profiles[0].Plugins = nil, nil
	oursCfg.Profiles[0].PluginConfig = slices.DeleteFunc(oursCfg.Profiles[0].PluginConfig, func(pc config.PluginConfig) bool { return pc.Name == left.Name })
	if diff := cmp.Diff(oursCfg, floorCfg); diff != "" {
		t.Errorf("floor config differs from ours beyond %s (-ours +floor):\n%s", left.Name, diff)
	}
}

// pluginSets are every extension point's set of ps, for editing in place.
func pluginSets(ps *config.Plugins) []*config.PluginSet {
	v := reflect.ValueOf(ps).Elem()
	var out []*config.PluginSet
	for i := range v.NumField() {
		if set, ok := v.Field(i).Addr().Interface().(*config.PluginSet); ok {
			out = append(out, set)
		}
	}
	return out
}

func TestDeriveFloorConfig(t *testing.T) {
	dir := t.TempDir()
	left, err := report.FloorPlugin()
	if err != nil {
		t.Fatal(err)
	}
	// A profile listing the plugin at single extension points too, and
	// disabling it somewhere: it goes from every list.
	manifest := `profiles:
- schedulerName: placement-scheduler
  plugins:
    multiPoint:
      enabled: [{name: A}, {name: ` + left.Name + `, weight: 2}, {name: B}]
    preScore:
      enabled: [{name: ` + left.Name + `}]
    score:
      disabled: [{name: ` + left.Name + `}]
  pluginConfig:
  - name: ` + left.Name + `
    args: {hardPodAffinityWeight: 1}
  - name: A
    args: {x: 1}
`
	out := filepath.Join(dir, "floor.yaml")
	if err := DeriveFloorConfig([]byte(manifest), out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"leaderElection": map[string]any{"leaderElect": false},
		"profiles": []any{map[string]any{
			"schedulerName": "default-scheduler",
			"plugins": map[string]any{
				"multiPoint": map[string]any{"enabled": []any{map[string]any{"name": "A"}, map[string]any{"name": "B"}}},
				"preScore":   map[string]any{"enabled": []any{}},
				"score":      map[string]any{"disabled": []any{}},
			},
			"pluginConfig": []any{map[string]any{"name": "A", "args": map[string]any{"x": float64(1)}}},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("floor config (-want +got):\n%s", diff)
	}
	// Without the plugin enabled, the floor would silently be ours.
	err = DeriveFloorConfig([]byte("profiles:\n- schedulerName: placement-scheduler\n  plugins:\n    multiPoint:\n      enabled: [{name: A}]\n"), out)
	if err == nil || !strings.Contains(err.Error(), left.Name) {
		t.Errorf("shipped profile without %s: err = %v, want one naming it", left.Name, err)
	}
}

func loadConfig(t *testing.T, raw []byte) *config.KubeSchedulerConfiguration {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		t.Fatalf("decoding scheduler config: %v", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("scheduler config decodes to %T", obj)
	}
	return cfg
}

func TestAbsolutizePaths(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.yaml", "b.yaml", "c.yaml"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tc := map[string]any{
		"defaultPodTemplatePath": "a.yaml",
		"workloadTemplate": []any{
			map[string]any{"opcode": "createPodSets", "createPodsOp": map[string]any{"podTemplatePath": "b.yaml"}},
			map[string]any{"opcode": "churn", "templatePaths": []any{"a.yaml", filepath.Join(dir, "c.yaml")}},
			map[string]any{"opcode": "stopCollectingProfile", "filePath": "out.prof"},
		},
	}
	if err := absolutizePaths(tc, dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"defaultPodTemplatePath": filepath.Join(dir, "a.yaml"),
		"workloadTemplate": []any{
			map[string]any{"opcode": "createPodSets", "createPodsOp": map[string]any{"podTemplatePath": filepath.Join(dir, "b.yaml")}},
			map[string]any{"opcode": "churn", "templatePaths": []any{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "c.yaml")}},
			// Output path: relative to -data-items-dir, left alone.
			map[string]any{"opcode": "stopCollectingProfile", "filePath": "out.prof"},
		},
	}
	if diff := cmp.Diff(want, tc); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	err := absolutizePaths(map[string]any{"nodeTemplatePath": "missing.yaml"}, dir)
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing template: err = %v, want one naming missing.yaml", err)
	}
}

func TestSetCollectorConfigKeepsCustomCollection(t *testing.T) {
	tc := map[string]any{"metricsCollectorConfig": map[string]any{"metrics": map[string]any{
		"scheduler_plugin_execution_duration_seconds": []any{
			map[string]any{"label": "plugin", "values": []any{"NodeAffinity", "Ours"}},
			map[string]any{"label": "extension_point", "values": []any{"Filter"}},
		},
		"scheduler_pod_scheduling_duration_seconds": nil,
	}}}
	if err := setCollectorConfig(tc, []string{"Ours", "Other"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metricsCollectorConfig": map[string]any{"metrics": map[string]any{
		"scheduler_plugin_execution_duration_seconds": []any{
			map[string]any{"label": "plugin", "values": []any{"NodeAffinity", "Ours", "Other"}},
			map[string]any{"label": "extension_point", "values": []any{"Filter"}},
		},
		"scheduler_pod_scheduling_duration_seconds": nil,
	}}}
	if diff := cmp.Diff(want, tc); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeriveOurConfigRejectsUnexpectedManifest(t *testing.T) {
	dir := t.TempDir()
	for name, manifest := range map[string]string{
		"two profiles": "profiles:\n- schedulerName: placement-scheduler\n- schedulerName: other\n",
		"renamed":      "profiles:\n- schedulerName: something-else\n",
	} {
		if err := DeriveOurConfig([]byte(manifest), filepath.Join(dir, "out.yaml")); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The share of the ceiling divides by measured pods: the count must come
// from the one op that collects metrics, at the workload's parameters.
func TestMeasuredPods(t *testing.T) {
	create := func(extra ...any) map[string]any {
		op := map[string]any{"opcode": "createPods"}
		for i := 0; i+1 < len(extra); i += 2 {
			op[extra[i].(string)] = extra[i+1]
		}
		return op
	}
	params := map[string]any{"initPods": 7.0, "measurePods": 400.0}
	for _, tc := range []struct {
		name string
		ops  []any
		want int
	}{
		{"countParam", []any{create("countParam", "$initPods"), create("countParam", "$measurePods", "collectMetrics", true)}, 400},
		{"count", []any{create("countParam", "$initPods"), create("count", 30.0, "collectMetrics", true)}, 30},
		{"parameter missing", []any{create("countParam", "$otherPods", "collectMetrics", true)}, 0},
		{"two measured ops", []any{create("count", 1.0, "collectMetrics", true), create("count", 2.0, "collectMetrics", true)}, 0},
		{"measured op creates no pods", []any{map[string]any{"opcode": "churn", "collectMetrics": true}}, 0},
		{"nothing measured", []any{create("countParam", "$measurePods")}, 0},
	} {
		if got := measuredPods(tc.ops, params); got != tc.want {
			t.Errorf("%s: measuredPods = %d, want %d", tc.name, got, tc.want)
		}
	}

	// Upstream's v1.37.2 files, as the harness reads them.
	want := map[string]int{
		"SchedulingPodAntiAffinity/500Nodes":  400,
		"SchedulingPodAntiAffinity/5000Nodes": 1000,
		"SchedulingPodAffinity/5000Nodes":     1000,
		"SchedulingBasic/5000Nodes":           1000,
	}
	got := map[string]int{}
	for _, c := range prepareForTest(t, nil).Cases {
		for _, w := range c.Workloads {
			if _, ok := want[c.Name+"/"+w.Name]; ok {
				got[c.Name+"/"+w.Name] = w.MeasuredPods
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("measured pods (-want +got):\n%s", diff)
	}
}

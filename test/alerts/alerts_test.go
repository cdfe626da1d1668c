package alerts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"go.yaml.in/yaml/v3"
)

// The series a healthy install exports, as the ServiceMonitor labels them
// (job is the metrics Service, namespace the release's): two replicas, a
// leading and b standing by.
const (
	job       = `job="placement-scheduler-metrics", namespace="placement-scheduler"`
	replicaA  = job + `, instance="10.0.0.1:10259", pod="placement-scheduler-a"`
	replicaB  = job + `, instance="10.0.0.2:10259", pod="placement-scheduler-b"`
	evalEvery = time.Minute // the rule group's evaluation interval

	// The enforcer's, as its ServiceMonitor labels them: a leading, b
	// standing by.
	enforcerJob = `job="placement-scheduler-enforcer-metrics", namespace="placement-scheduler"`
	enforcerA   = enforcerJob + `, instance="10.0.0.3:10261", pod="placement-scheduler-enforcer-a"`
	enforcerB   = enforcerJob + `, instance="10.0.0.4:10261", pod="placement-scheduler-enforcer-b"`
)

// renderRules is `helm template` of the chart's PrometheusRule with args,
// parsed and validated as a Prometheus rule file (what `promtool check
// rules` does).
func renderRules(t *testing.T, args ...string) []rulefmt.Rule {
	t.Helper()
	helm := os.Getenv("PLACEMENT_HELM")
	if helm == "" {
		helm = filepath.Join("..", "..", "bin", "helm")
	}
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no helm binary (run `make helm` or set PLACEMENT_HELM): %v", err)
	}
	home := t.TempDir()
	cmd := exec.Command(helm, append([]string{"template", "placement-scheduler", filepath.Join("..", "..", "charts", "placement-scheduler"),
		"--namespace", "placement-scheduler", "--show-only", "templates/prometheusrule.yaml",
		"--set", "monitoring.prometheusRule.enabled=true"}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, errOut.String())
	}
	var obj struct {
		Kind string `yaml:"kind"`
		Spec struct {
			Groups []yaml.Node `yaml:"groups"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &obj); err != nil || obj.Kind != "PrometheusRule" {
		t.Fatalf("helm template rendered no PrometheusRule (%v):\n%s", err, out.String())
	}
	file, err := yaml.Marshal(map[string]any{"groups": obj.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("the chart's rules are not a valid rule file: %v\n%s", errors.Join(errs...), file)
	}
	var all []rulefmt.Rule
	for _, g := range groups.Groups {
		all = append(all, g.Rules...)
	}
	return all
}

// firing is one alert instance seen firing: its labels beyond the rule's
// own, and when it first fired.
type firing struct {
	Labels string
	First  time.Duration
}

// evaluate runs every alerting rule over the series in load (promqltest's
// load syntax) from 0 to end, once per evalEvery, and returns, per alert
// name, every instance that reached the firing state.
func evaluate(t *testing.T, rs []rulefmt.Rule, load string, end time.Duration) map[string][]firing {
	t.Helper()
	storage := promqltest.LoadedStorage(t, "load 1m\n"+load)
	engine := promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery)
	query := rules.EngineQueryFunc(engine, storage)
	p := parser.NewParser(parser.Options{})
	got := map[string][]firing{}
	for _, r := range rs {
		if r.Alert == "" {
			continue
		}
		expr, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatalf("%s: %v", r.Alert, err)
		}
		rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), time.Duration(r.KeepFiringFor),
			labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", true, slog.New(slog.DiscardHandler))
		seen := map[string]bool{}
		for ts := time.Duration(0); ts <= end; ts += evalEvery {
			if _, err := rule.Eval(context.Background(), 0, time.Unix(0, 0).UTC().Add(ts), query, nil, 0); err != nil {
				t.Fatalf("%s at %v: %v", r.Alert, ts, err)
			}
			for _, a := range rule.ActiveAlerts() {
				if a.State != rules.StateFiring {
					continue
				}
				ls := a.Labels.DropMetricName()
				b := labels.NewBuilder(ls)
				for name := range r.Labels {
					b.Del(name)
				}
				b.Del(labels.AlertName)
				key := b.Labels().String()
				if !seen[key] {
					seen[key] = true
					got[r.Alert] = append(got[r.Alert], firing{Labels: key, First: ts})
				}
			}
		}
	}
	return got
}

// enforcerViolations is the leading enforcer replica's violations series
// for a node-affinity rule in state.
func enforcerViolations(state string) string {
	return `placement_enforcer_violations{` + enforcerA + `, rule="node-affinity", state="` + state + `"}`
}

// enforcerEvictions is an enforcer replica's evictions_total series for
// node-affinity with result.
func enforcerEvictions(replica, result string) string {
	return `placement_enforcer_evictions_total{` + replica + `, rule="node-affinity", result="` + result + `"}`
}

// enforcerLooping is the leading enforcer replica's looping_owners series
// for node-affinity.
func enforcerLooping() string {
	return `placement_enforcer_looping_owners{` + enforcerA + `, rule="node-affinity"}`
}

// enforcerLastPass is an enforcer replica's last successful pass timestamp.
func enforcerLastPass(replica string) string {
	return `placement_enforcer_last_successful_pass_timestamp_seconds{` + replica + `}`
}

// healthySeries are the series of two scheduler replicas, a leading, with
// nothing pending and no panic, and of two enforcer replicas, a leading,
// with one pod in its grace period and no eviction refused, by name with
// their (constant) value; "_" is a series that has no samples until a case
// gives it some (the enforcer exports a violations series only for a
// state some pod is in, and only on the leader).
func healthySeries() map[string]string {
	return map[string]string{
		`up{` + replicaA + `}`: "1",
		`up{` + replicaB + `}`: "1",
		`leader_election_master_status{` + replicaA + `, name="kube-scheduler"}`:                                              "1",
		`leader_election_master_status{` + replicaB + `, name="kube-scheduler"}`:                                              "0",
		`scheduler_pending_pods{` + replicaA + `, queue="active"}`:                                                            "0",
		`scheduler_pending_pods{` + replicaA + `, queue="unschedulable"}`:                                                     "0",
		`scheduler_pending_pods{` + replicaA + `, queue="gated"}`:                                                             "0",
		`scheduler_pending_pods{` + replicaB + `, queue="active"}`:                                                            "0",
		`placement_scheduler_plugin_panics_total{` + replicaA + `, plugin="PlacementNodeAffinity", extension_point="Filter"}`: "0",
		`placement_scheduler_plugin_panics_total{` + replicaB + `, plugin="PlacementNodeAffinity", extension_point="Filter"}`: "0",

		// The enforcer's.
		`up{` + enforcerA + `}`:                        "1",
		`up{` + enforcerB + `}`:                        "1",
		`placement_enforcer_leader{` + enforcerA + `}`: "1",
		`placement_enforcer_leader{` + enforcerB + `}`: "0",
		enforcerViolations("grace"):                    "1",
		enforcerViolations("no-fit"):                   "_",
		enforcerViolations("pdb-blocked"):              "_",
		enforcerEvictions(enforcerA, "error"):          "0",
		enforcerEvictions(enforcerA, "pdb-blocked"):    "0",
		enforcerEvictions(enforcerB, "error"):          "0",
		enforcerLooping():                              "0",
		// a passes every minute (the value is when: "0+60" is 60 s
		// more each minute); b never has.
		enforcerLastPass(enforcerA): "0+60",
		enforcerLastPass(enforcerB): "0",
	}
}

// healthyWith writes promqltest load lines for minutes 0 to n: the healthy
// series, constant, except those in override, which carry the given
// sequence (promqltest's notation: "1x9 0x30" is ten 1s then thirty-one
// 0s; "stale" a stale marker, as Prometheus writes when a scrape fails or
// a target goes; "_" a missing sample).
func healthyWith(n int, override map[string]string) string {
	var lines []string
	for name, v := range healthySeries() {
		if o, ok := override[name]; ok {
			lines = append(lines, "  "+name+" "+o)
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s %sx%d", name, v, n))
	}
	for name := range override {
		if _, ok := healthySeries()[name]; !ok {
			panic("override of a series healthySeries does not have: " + name)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func healthy(n int) string { return healthyWith(n, nil) }

// scrapesFailFrom10m overrides every healthy series of the job selected by
// jobSel from 10m on, when no scrape of either of its replicas succeeds any
// more: the series go stale (the stale markers Prometheus writes), except
// up, which takes upAfter: "0x30" when the targets are there and their
// scrapes fail, "stale" when the targets are gone.
func scrapesFailFrom10m(jobSel, upAfter string) map[string]string {
	o := map[string]string{}
	for name, v := range healthySeries() {
		if !strings.Contains(name, jobSel) || v == "_" {
			continue
		}
		if strings.HasPrefix(name, "up{") {
			o[name] = v + "x9 " + upAfter
		} else {
			o[name] = v + "x9 stale"
		}
	}
	return o
}

func TestAlerts(t *testing.T) {
	rs := renderRules(t)
	var names []string
	for _, r := range rs {
		names = append(names, r.Alert)
	}
	want := []string{"PlacementSchedulerDown", "PlacementSchedulerNoLeader", "PlacementSchedulerPodsPending", "PlacementSchedulerPluginPanics",
		"PlacementEnforcerDown", "PlacementEnforcerNoLeader", "PlacementEnforcerStalled", "PlacementEnforcerNoFit", "PlacementEnforcerPDBBlocked", "PlacementEnforcerEvictionErrors",
		"PlacementEnforcerLooping"}
	if !slices.Equal(names, want) {
		t.Fatalf("the chart's alerts are %v, want %v (a new alert needs its cases here)", names, want)
	}
	const minutes = 40
	end := minutes * time.Minute
	a := func(s string) string { return `up{` + s + `}` }
	leader := func(s string) string { return `leader_election_master_status{` + s + `, name="kube-scheduler"}` }
	pending := func(s, queue string) string { return `scheduler_pending_pods{` + s + `, queue="` + queue + `"}` }
	panics := func(s string) string {
		return `placement_scheduler_plugin_panics_total{` + s + `, plugin="PlacementNodeAffinity", extension_point="Filter"}`
	}
	for _, tc := range []struct {
		name string
		load string
		// want: per alert, the instances that fire and when each fires
		// first; every other alert must stay quiet throughout.
		want map[string][]firing
	}{{
		name: "healthy: quiet",
		load: healthy(minutes),
	}, {
		// A failover: the leader dies at 10m (its target goes down),
		// nobody leads for 2 minutes, b takes over; a comes back at 20m
		// as the standby. Shorter than every `for`: quiet.
		name: "failover within the lease timings: quiet",
		load: healthyWith(minutes, map[string]string{
			a(replicaA):      "1x9 0x9 1x20",
			leader(replicaA): "1x9 stale _x9 0x20",
			leader(replicaB): "0x11 1x29",
			// a's series go stale while it is down (Prometheus writes stale
			// markers when a scrape fails) and return at 20m.
			pending(replicaA, "active"):        "0x9 stale _x9 0x20",
			pending(replicaA, "unschedulable"): "0x9 stale _x9 0x20",
			pending(replicaA, "gated"):         "0x9 stale _x9 0x20",
			panics(replicaA):                   "0x9 stale _x9 0x20",
		}),
	}, {
		// Both replicas' scrapes fail from 10m on (up 0): Down after
		// downFor (5m) of it, at 15m.
		name: "every replica down: Down fires",
		load: healthyWith(minutes, scrapesFailFrom10m(job, "0x30")),
		want: map[string][]firing{"PlacementSchedulerDown": {{Labels: `{}`, First: 15 * time.Minute}}},
	}, {
		// The targets vanish (the Deployment was deleted, the Service
		// selects nothing): no up series at all after 10m. Down fires
		// too, once the last samples are stale.
		name: "targets gone: Down fires",
		load: healthyWith(minutes, scrapesFailFrom10m(job, "stale")),
		want: map[string][]firing{"PlacementSchedulerDown": {{Labels: `{}`, First: 15 * time.Minute}}},
	}, {
		// Both replicas up, neither leads from 10m on (lost lease, RBAC
		// broken, apiserver unreachable): NoLeader after noLeaderFor (5m).
		// Pending pods are counted on the leader only, so that alert
		// stays quiet here; Down too.
		name: "up but leaderless: NoLeader fires",
		load: healthyWith(minutes, map[string]string{
			leader(replicaA):                   "1x9 0x30",
			pending(replicaA, "unschedulable"): "0x9 5x30",
		}),
		want: map[string][]firing{"PlacementSchedulerNoLeader": {{Labels: `{}`, First: 15 * time.Minute}}},
	}, {
		// One panic at 12m, in a's NodeAffinity Filter: fires at once
		// (no `for`), with the plugin and extension point, and stops once
		// the panic is older than the window (10m).
		name: "a contained panic: PluginPanics fires",
		load: healthyWith(minutes, map[string]string{
			panics(replicaA): "0x11 1x28",
		}),
		want: map[string][]firing{"PlacementSchedulerPluginPanics": {{Labels: `{extension_point="Filter", plugin="PlacementNodeAffinity"}`, First: 12 * time.Minute}}},
	}, {
		// A panic right after a restart: the counter's series restarts at
		// 0 (Contain creates it at zero), so increase sees the 1.
		name: "a panic after a restart: PluginPanics fires",
		load: healthyWith(minutes, map[string]string{
			panics(replicaB): "3x9 0x9 1x20",
		}),
		want: map[string][]firing{"PlacementSchedulerPluginPanics": {{Labels: `{extension_point="Filter", plugin="PlacementNodeAffinity"}`, First: 20 * time.Minute}}},
	}, {
		// 4 pods unschedulable from 5m on, 2 in backoff from 10m: more
		// than the threshold (0) for podsPending.for (15m), from 5m: fires
		// at 20m with the count.
		name: "pods pending too long: PodsPending fires",
		load: healthyWith(minutes, map[string]string{
			pending(replicaA, "unschedulable"): "0x4 4x35",
			pending(replicaB, "active"):        "0x4 4x35",
		}),
		want: map[string][]firing{"PlacementSchedulerPodsPending": {{Labels: `{}`, First: 20 * time.Minute}}},
	}, {
		// Pods come and go (10 minutes pending, then none): shorter than
		// podsPending.for; and gated pods wait on purpose: quiet.
		name: "pods pending briefly, or gated: quiet",
		load: healthyWith(minutes, map[string]string{
			pending(replicaA, "active"): "0x4 3x9 0x25",
			pending(replicaA, "gated"):  "7x40",
		}),
	}, {
		// Both enforcer replicas' scrapes fail from 10m on: EnforcerDown
		// after its downFor (10m), at 20m; the scheduler's alerts stay
		// quiet, and so does EnforcerNoLeader (no series: Down's case).
		name: "every enforcer replica down: EnforcerDown fires",
		load: healthyWith(minutes, scrapesFailFrom10m(enforcerJob, "0x30")),
		want: map[string][]firing{"PlacementEnforcerDown": {{Labels: `{}`, First: 20 * time.Minute}}},
	}, {
		name: "enforcer targets gone: EnforcerDown fires",
		load: healthyWith(minutes, scrapesFailFrom10m(enforcerJob, "stale")),
		want: map[string][]firing{"PlacementEnforcerDown": {{Labels: `{}`, First: 20 * time.Minute}}},
	}, {
		// Both enforcer replicas up, neither leads from 10m on (the Lease
		// lost, or the leader's loop gave up): EnforcerNoLeader after
		// noLeaderFor (10m). Its last report's gauges stay, but no alert
		// reads them as stuck before their own `for`; no pass either, but
		// with no leader that is NoLeader's, not EnforcerStalled's.
		name: "enforcer up but leaderless: EnforcerNoLeader fires",
		load: healthyWith(minutes, map[string]string{
			`placement_enforcer_leader{` + enforcerA + `}`: "1x9 0x30",
			enforcerLastPass(enforcerA):                    "0+60x9 540x30",
		}),
		want: map[string][]firing{"PlacementEnforcerNoLeader": {{Labels: `{}`, First: 20 * time.Minute}}},
	}, {
		// The enforcer's leader dies at 10m; b leads from 11m (its report
		// starts with its first pass), a returns at 13m as the standby:
		// quiet, as is the eviction error counter restarting at 0.
		name: "enforcer failover: quiet",
		load: healthyWith(minutes, map[string]string{
			`up{` + enforcerA + `}`:                        "1x9 0x2 1x27",
			`placement_enforcer_leader{` + enforcerA + `}`: "1x9 stale _x2 0x27",
			`placement_enforcer_leader{` + enforcerB + `}`: "0x10 1x29",
			enforcerLastPass(enforcerA):                    "0+60x9 stale _x2 0x27",
			enforcerLastPass(enforcerB):                    "0x10 660+60x29",
			enforcerViolations("grace"):                    "1x9 stale _x30",
			enforcerViolations("no-fit"):                   "_x4 1x4 stale _x30",
			enforcerEvictions(enforcerA, "error"):          "2x9 stale _x2 0x27",
			enforcerEvictions(enforcerA, "pdb-blocked"):    "0x9 stale _x2 0x27",
		}),
	}, {
		// The leader's last pass is at 9m, then none: still leading, no
		// pass for stalledFor (10m) from 19m, for 2m: fires at 22m.
		name: "enforcer leads but does not pass: EnforcerStalled fires",
		load: healthyWith(minutes, map[string]string{
			enforcerLastPass(enforcerA): "0+60x9 540x30",
		}),
		want: map[string][]firing{"PlacementEnforcerStalled": {{Labels: `{}`, First: 22 * time.Minute}}},
	}, {
		// The leader restarts at 10m and keeps leading without a pass:
		// a restarted replica's 0 is "never", no pass on record at all,
		// older than stalledFor from 11m (these series' clock starts at
		// 0), for 2m: fires at 13m.
		name: "enforcer leader restarted and never passed: EnforcerStalled fires",
		load: healthyWith(minutes, map[string]string{
			enforcerLastPass(enforcerA): "0+60x9 0x30",
		}),
		want: map[string][]firing{"PlacementEnforcerStalled": {{Labels: `{}`, First: 13 * time.Minute}}},
	}, {
		// The leader stalls after its pass at 9m, gives up at 12m (3
		// resyncs) and restarts as the standby; b leads and passes from
		// 12m: quiet.
		name: "a stalled enforcer leader hands over: quiet",
		load: healthyWith(minutes, map[string]string{
			`placement_enforcer_leader{` + enforcerA + `}`: "1x11 stale 0x27",
			`placement_enforcer_leader{` + enforcerB + `}`: "0x11 1x28",
			enforcerLastPass(enforcerA):                    "0+60x9 540x1 stale 0x27",
			enforcerLastPass(enforcerB):                    "0x11 720+60x28",
		}),
	}, {
		// Two pods no-fit from 5m on: more than none for noFitFor (30m),
		// fires at 35m, by rule.
		name: "pods no-fit too long: EnforcerNoFit fires",
		load: healthyWith(minutes, map[string]string{
			enforcerViolations("no-fit"): "_x5 2x34",
		}),
		want: map[string][]firing{"PlacementEnforcerNoFit": {{Labels: `{rule="node-affinity"}`, First: 35 * time.Minute}}},
	}, {
		name: "pods pdb-blocked too long: EnforcerPDBBlocked fires",
		load: healthyWith(minutes, map[string]string{
			enforcerViolations("pdb-blocked"): "_x5 1x34",
		}),
		want: map[string][]firing{"PlacementEnforcerPDBBlocked": {{Labels: `{rule="node-affinity"}`, First: 35 * time.Minute}}},
	}, {
		// No-fit for 20 minutes, pdb-blocked for 10, then moved (their
		// series go away, as the gauge is reset each pass); refusals by a
		// PodDisruptionBudget counted as such: quiet.
		name: "no-fit and pdb-blocked briefly, PDB refusals: quiet",
		load: healthyWith(minutes, map[string]string{
			enforcerViolations("no-fit"):                "_x4 1x19 stale _x15",
			enforcerViolations("pdb-blocked"):           "_x4 1x9 stale _x25",
			enforcerEvictions(enforcerA, "pdb-blocked"): "0x4 1x5 3x30",
		}),
	}, {
		// One failed eviction at 12m: fires at once, by rule, and stops
		// once it is older than the window (10m).
		name: "an eviction error: EnforcerEvictionErrors fires",
		load: healthyWith(minutes, map[string]string{
			enforcerEvictions(enforcerA, "error"): "0x11 1x28",
		}),
		want: map[string][]firing{"PlacementEnforcerEvictionErrors": {{Labels: `{rule="node-affinity"}`, First: 12 * time.Minute}}},
	}, {
		// The first error of a replica that just took over: its series
		// exists at 0 from the start, so increase sees it.
		name: "an eviction error on a new leader: EnforcerEvictionErrors fires",
		load: healthyWith(minutes, map[string]string{
			enforcerEvictions(enforcerB, "error"): "0x19 1x20",
		}),
		want: map[string][]firing{"PlacementEnforcerEvictionErrors": {{Labels: `{rule="node-affinity"}`, First: 20 * time.Minute}}},
	}, {
		// An owner looping from 10m on: more than none for loopingFor
		// (5m), fires at 15m, by rule.
		name: "an owner looping: EnforcerLooping fires",
		load: healthyWith(minutes, map[string]string{
			enforcerLooping(): "0x9 1x30",
		}),
		want: map[string][]firing{"PlacementEnforcerLooping": {{Labels: `{rule="node-affinity"}`, First: 15 * time.Minute}}},
	}, {
		// Looping for 3 minutes only (the pods' violation cleared): quiet.
		name: "an owner looping briefly: quiet",
		load: healthyWith(minutes, map[string]string{
			enforcerLooping(): "0x9 1x3 0x27",
		}),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := evaluate(t, rs, tc.load, end)
			for _, name := range want {
				g, w := got[name], tc.want[name]
				if !slices.Equal(g, w) {
					t.Errorf("%s fired %v, want %v", name, g, w)
				}
			}
			if t.Failed() {
				t.Logf("series:\n%s", tc.load)
			}
		})
	}
}

// The knobs move the alerts: a longer downFor delays Down, a higher
// threshold silences PodsPending at that count, and selector points the
// rules at another job.
func TestAlertKnobs(t *testing.T) {
	const minutes = 40
	end := minutes * time.Minute
	down := healthyWith(minutes, map[string]string{
		`up{` + replicaA + `}`: "1x9 0x30",
		`up{` + replicaB + `}`: "1x9 0x30",
	})
	got := evaluate(t, renderRules(t, "--set", "monitoring.prometheusRule.downFor=20m"), down, end)
	if w := []firing{{Labels: `{}`, First: 30 * time.Minute}}; !slices.Equal(got["PlacementSchedulerDown"], w) {
		t.Errorf("downFor=20m: Down fired %v, want %v", got["PlacementSchedulerDown"], w)
	}

	pending := healthyWith(minutes, map[string]string{
		`scheduler_pending_pods{` + replicaA + `, queue="unschedulable"}`: "0x4 4x35",
	})
	if got := evaluate(t, renderRules(t, "--set", "monitoring.prometheusRule.podsPending.threshold=4"), pending, end); len(got["PlacementSchedulerPodsPending"]) > 0 {
		t.Errorf("threshold=4 with 4 pending: PodsPending fired %v", got["PlacementSchedulerPodsPending"])
	}

	// Selecting another job: our healthy series are not its series, so
	// Down fires for it (absent) and nothing else does.
	got = evaluate(t, renderRules(t, "--set", `monitoring.prometheusRule.selector=job="other"`), healthy(minutes), end)
	if w := []firing{{Labels: `{}`, First: 5 * time.Minute}}; !slices.Equal(got["PlacementSchedulerDown"], w) || len(got) != 1 {
		t.Errorf(`selector job="other": fired %v, want only Down %v`, got, w)
	}

	// The enforcer's knobs: a shorter noFitFor fires sooner; its own
	// selector points its rules, and only them, elsewhere; without the
	// enforcer there are no enforcer rules.
	noFit := healthyWith(minutes, map[string]string{enforcerViolations("no-fit"): "_x5 2x34"})
	got = evaluate(t, renderRules(t, "--set", "monitoring.prometheusRule.enforcer.noFitFor=10m"), noFit, end)
	if w := []firing{{Labels: `{rule="node-affinity"}`, First: 15 * time.Minute}}; !slices.Equal(got["PlacementEnforcerNoFit"], w) {
		t.Errorf("enforcer.noFitFor=10m: EnforcerNoFit fired %v, want %v", got["PlacementEnforcerNoFit"], w)
	}
	stalled := healthyWith(minutes, map[string]string{enforcerLastPass(enforcerA): "0+60x9 540x30"})
	got = evaluate(t, renderRules(t, "--set", "monitoring.prometheusRule.enforcer.stalledFor=15m"), stalled, end)
	if w := []firing{{Labels: `{}`, First: 27 * time.Minute}}; !slices.Equal(got["PlacementEnforcerStalled"], w) {
		t.Errorf("enforcer.stalledFor=15m: EnforcerStalled fired %v, want %v", got["PlacementEnforcerStalled"], w)
	}
	got = evaluate(t, renderRules(t, "--set", `monitoring.prometheusRule.enforcer.selector=job="other"`), healthy(minutes), end)
	if w := []firing{{Labels: `{}`, First: 10 * time.Minute}}; !slices.Equal(got["PlacementEnforcerDown"], w) || len(got) != 1 {
		t.Errorf(`enforcer.selector job="other": fired %v, want only EnforcerDown %v`, got, w)
	}
	for _, r := range renderRules(t, "--set", "enforcer.enabled=false") {
		if strings.HasPrefix(r.Alert, "PlacementEnforcer") {
			t.Errorf("enforcer.enabled=false still renders %s", r.Alert)
		}
	}
}

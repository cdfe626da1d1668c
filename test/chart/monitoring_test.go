package chart

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// byKind indexes a render by kind, then name.
func byKind(objs []*unstructured.Unstructured) map[string]map[string]*unstructured.Unstructured {
	out := map[string]map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if out[o.GetKind()] == nil {
			out[o.GetKind()] = map[string]*unstructured.Unstructured{}
		}
		out[o.GetKind()][o.GetName()] = o
	}
	return out
}

// The monitoring objects are off by default (the defaults render the
// kustomize base, TestDefaultsRenderTheKustomizeBase) and, turned on, hang
// together: the ServiceMonitor selects the metrics Service by its labels
// and names its port, for the scheduler and for the enforcer; each rule
// group selects the job its binary's ServiceMonitor gives the targets (the
// Service's name, the Prometheus Operator's default) in the release
// namespace; the Prometheus ServiceAccount is bound to the
// metrics-reader ClusterRole; the dashboard ConfigMap carries the Grafana
// sidecar's label and a dashboard whose every query selects $job, or
// $enforcer_job for the enforcer's panels. What the
// alerts decide is tested in test/alerts, with Prometheus' engine.
func TestMonitoringObjectsHangTogether(t *testing.T) {
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if _, ok := byKind(render(t))[kind]; ok {
			t.Errorf("the defaults render a %s", kind)
		}
	}
	objs := byKind(render(t,
		"--set", "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.grafanaDashboard.enabled=true",
		"--set", "monitoring.serviceMonitor.prometheusServiceAccount.name=prometheus,monitoring.serviceMonitor.prometheusServiceAccount.namespace=monitoring",
		"--set", "monitoring.serviceMonitor.labels.release=kube-prometheus-stack"))

	svc := objs["Service"][release+"-metrics"]
	sm := objs["ServiceMonitor"][release]
	if svc == nil || sm == nil {
		t.Fatalf("no metrics Service (%v) or ServiceMonitor (%v)", svc != nil, sm != nil)
	}
	if sm.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack monitoring.serviceMonitor.labels", sm.GetLabels())
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, the Service's labels are %v", k, v, svc.GetLabels())
		}
	}
	if ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames"); !slices.Equal(ns, []string{namespace}) {
		t.Errorf("ServiceMonitor namespaceSelector %v, want [%s]", ns, namespace)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(endpoints) != 1 || len(ports) != 1 || endpoints[0].(map[string]any)["port"] != ports[0].(map[string]any)["name"] {
		t.Errorf("ServiceMonitor endpoints %v do not name the Service's port %v", endpoints, ports)
	}
	if scheme := endpoints[0].(map[string]any)["scheme"]; scheme != "https" {
		t.Errorf("ServiceMonitor scheme %v, want https (the scheduler serves only HTTPS)", scheme)
	}

	crb := objs["ClusterRoleBinding"][release+":metrics-reader"]
	if crb == nil {
		t.Fatal("no ClusterRoleBinding for the Prometheus ServiceAccount")
	}
	if name, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name"); objs["ClusterRole"][name] == nil {
		t.Errorf("the Prometheus binding refers to ClusterRole %q, which the chart does not render", name)
	}
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if diff := cmp.Diff([]any{map[string]any{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}}, subjects); diff != "" {
		t.Errorf("Prometheus binding subjects (-want +got):\n%s", diff)
	}

	rule := objs["PrometheusRule"][release]
	if rule == nil {
		t.Fatal("no PrometheusRule")
	}
	// The enforcer's ServiceMonitor selects its metrics Service and port,
	// whose name is the job of the enforcer's alerts.
	esvc := objs["Service"][release+"-enforcer-metrics"]
	esm := objs["ServiceMonitor"][release+"-enforcer"]
	if esvc == nil || esm == nil {
		t.Fatalf("no enforcer metrics Service (%v) or ServiceMonitor (%v)", esvc != nil, esm != nil)
	}
	eselector, _, _ := unstructured.NestedStringMap(esm.Object, "spec", "selector", "matchLabels")
	for k, v := range eselector {
		if esvc.GetLabels()[k] != v {
			t.Errorf("the enforcer's ServiceMonitor selects %s=%s, its Service's labels are %v", k, v, esvc.GetLabels())
		}
	}

	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	// Each group's alerts select the job of the Service of its binary.
	sels := map[string]string{
		"placement-scheduler": `job="` + svc.GetName() + `", namespace="` + namespace + `"`,
		"placement-enforcer":  `job="` + esvc.GetName() + `", namespace="` + namespace + `"`,
	}
	runbooks, err := os.ReadFile(filepath.Join(framework.ChartDir(t), "..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	alerts := map[string]int{}
	for _, g := range groups {
		name, _, _ := unstructured.NestedString(g.(map[string]any), "name")
		sel, ok := sels[name]
		if !ok {
			t.Errorf("rule group %q: want one of %v", name, sels)
		}
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			alerts[name]++
			if !strings.Contains(r["expr"].(string), sel) {
				t.Errorf("alert %v: expr %q does not select %s", r["alert"], r["expr"], sel)
			}
			if url, _, _ := unstructured.NestedString(r, "annotations", "runbook_url"); !strings.HasSuffix(url, "docs/observability.md#"+strings.ToLower(r["alert"].(string))) {
				t.Errorf("alert %v: runbook_url %q is not its section of docs/observability.md", r["alert"], url)
			}
			if !strings.Contains(string(runbooks), "\n### "+r["alert"].(string)+"\n") {
				t.Errorf("alert %v: docs/observability.md has no section ### %v for its runbook_url", r["alert"], r["alert"])
			}
		}
	}
	if want := map[string]int{"placement-scheduler": 4, "placement-enforcer": 6}; !maps.Equal(alerts, want) {
		t.Errorf("alerts by group %v, want %v", alerts, want)
	}

	cm := objs["ConfigMap"][release+"-dashboard"]
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.GetLabels())
	}
	raw, _, _ := unstructured.NestedString(cm.Object, "data", "placement-scheduler.json")
	var dashboard struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(raw), &dashboard); err != nil || dashboard.UID == "" || len(dashboard.Panels) == 0 {
		t.Fatalf("the dashboard is not a Grafana dashboard (%v): uid %q, %d panels", err, dashboard.UID, len(dashboard.Panels))
	}
	enforcerPanels := 0
	for _, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			// The scheduler's series by $job, the enforcer's by $enforcer_job.
			want := `job=~"$job"`
			if strings.Contains(q.Expr, "placement_enforcer_") || strings.HasPrefix(p.Title, "Enforcer ") {
				want = `job=~"$enforcer_job"`
				enforcerPanels++
			}
			if !strings.Contains(q.Expr, want) {
				t.Errorf("panel %q: query %q does not select %s", p.Title, q.Expr, want)
			}
		}
	}
	if enforcerPanels == 0 {
		t.Error("the dashboard has no enforcer panel")
	}
	vars := map[string]bool{}
	for _, v := range dashboard.Templating.List {
		vars[v.Name] = true
	}
	for _, v := range []string{"namespace", "job", "enforcer_job"} {
		if !vars[v] {
			t.Errorf("the dashboard's queries use $%s, which it does not define (it has %v)", v, vars)
		}
	}
}

// `helm test`'s objects are test hooks only, and check this release: the
// canary asks for the first profile's schedulerName and runs the deployed
// image; the lease check waits on the lease the scheduler's config names,
// with a ServiceAccount allowed to read exactly that lease.
func TestHelmTestChecksThisRelease(t *testing.T) {
	objs := renderAll(t, "--set", "image.tag=v9.9.9")
	config, d := renderedConfig(t, objs)
	var testHooks []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/hook"] == "test" {
			testHooks = append(testHooks, o)
		}
	}
	hooks := byKind(testHooks)
	count := map[string]int{}
	for kind, byName := range hooks {
		count[kind] = len(byName)
	}
	if diff := cmp.Diff(map[string]int{"ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "Pod": 2}, count); diff != "" {
		t.Errorf("test hooks by kind (-want +got):\n%s", diff)
	}
	canary, lease := hooks["Pod"][release+"-test-canary"], hooks["Pod"][release+"-test-lease"]
	if canary == nil || lease == nil {
		t.Fatalf("no canary or lease pod among %v", hooks["Pod"])
	}

	profile := config["profiles"].([]any)[0].(map[string]any)
	if got := at(t, canary.Object, "spec", "schedulerName"); got != profile["schedulerName"] {
		t.Errorf("canary schedulerName %v, want the first profile's %v", got, profile["schedulerName"])
	}
	deployed := at(t, d.Object, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"]
	if got := at(t, canary.Object, "spec", "containers").([]any)[0].(map[string]any)["image"]; got != deployed {
		t.Errorf("canary image %v, want the deployed %v", got, deployed)
	}

	le := config["leaderElection"].(map[string]any)
	args := at(t, lease.Object, "spec", "containers").([]any)[0].(map[string]any)["args"]
	for _, want := range []string{"wait", "lease/" + le["resourceName"].(string), "--namespace=" + le["resourceNamespace"].(string)} {
		if !slices.Contains(args.([]any), any(want)) {
			t.Errorf("lease check args %v lack %q", args, want)
		}
	}
	sa := at(t, lease.Object, "spec", "serviceAccountName").(string)
	if hooks["ServiceAccount"][sa] == nil {
		t.Errorf("lease check runs as %q, not the test's ServiceAccount", sa)
	}
	for _, rb := range hooks["RoleBinding"] {
		role := hooks["Role"][at(t, rb.Object, "roleRef", "name").(string)]
		subjects := at(t, rb.Object, "subjects").([]any)
		if role == nil || len(subjects) != 1 || subjects[0].(map[string]any)["name"] != sa {
			t.Errorf("RoleBinding %s does not bind the test's Role to %s", rb.GetName(), sa)
			continue
		}
		want := []any{map[string]any{
			"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"resourceNames": []any{le["resourceName"]}, "verbs": []any{"get", "list", "watch"},
		}}
		if diff := cmp.Diff(want, role.Object["rules"]); diff != "" {
			t.Errorf("the test's Role (-want +got):\n%s", diff)
		}
	}

	for _, o := range renderAll(t, "--set", "tests.enabled=false") {
		if _, ok := o.GetAnnotations()["helm.sh/hook"]; ok {
			t.Errorf("tests.enabled=false still renders %s", key(o))
		}
	}
}

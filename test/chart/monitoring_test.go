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
	forEachHelm(t, testMonitoringObjectsHangTogether)
}

func testMonitoringObjectsHangTogether(t *testing.T, h *framework.Helm) {
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		if _, ok := byKind(render(t, h))[kind]; ok {
			t.Errorf("the defaults render a %s", kind)
		}
	}
	objs := byKind(render(t, h,
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
	if want := map[string]int{"placement-scheduler": 4, "placement-enforcer": 7}; !maps.Equal(alerts, want) {
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
func TestHelmTestChecksThisRelease(t *testing.T) { forEachHelm(t, testHelmTestChecksThisRelease) }

func testHelmTestChecksThisRelease(t *testing.T, h *framework.Helm) {
	objs := renderAll(t, h, "--set", "image.tag=v9.9.9")
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

	for _, o := range renderAll(t, h, "--set", "tests.enabled=false") {
		if _, ok := o.GetAnnotations()["helm.sh/hook"]; ok {
			t.Errorf("tests.enabled=false still renders %s", key(o))
		}
	}
}

// The enforcer's ServiceMonitor scrapes its HTTPS port with a bearer token
// from a Secret (never a token file), and that token's identity may GET
// /metrics: by default the chart's own scraper ServiceAccount, bound to the
// enforcer's reader ClusterRole, with a service-account-token Secret of it;
// or a Secret the values name, and then nothing of the chart's own. The
// TLS settings are the values'. The enforcer's probe speaks HTTPS.
func TestEnforcerServiceMonitorScrapesWithAToken(t *testing.T) {
	forEachHelm(t, testEnforcerServiceMonitorScrapesWithAToken)
}

func testEnforcerServiceMonitorScrapesWithAToken(t *testing.T, h *framework.Helm) {
	objs := byKind(render(t, h, "--set", "monitoring.serviceMonitor.enabled=true"))
	sm := objs["ServiceMonitor"][release+"-enforcer"]
	svc := objs["Service"][release+"-enforcer-metrics"]
	if sm == nil || svc == nil {
		t.Fatalf("no enforcer ServiceMonitor (%v) or Service (%v)", sm != nil, svc != nil)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(endpoints) != 1 || len(ports) != 1 {
		t.Fatalf("endpoints %v, ports %v: want one each", endpoints, ports)
	}
	ep := endpoints[0].(map[string]any)
	if ep["port"] != ports[0].(map[string]any)["name"] || ep["scheme"] != "https" || ep["path"] != "/metrics" {
		t.Errorf("endpoint port %v scheme %v path %v, want the Service's port %v, https, /metrics", ep["port"], ep["scheme"], ep["path"], ports[0].(map[string]any)["name"])
	}
	if _, ok := ep["bearerTokenFile"]; ok {
		t.Error("the endpoint uses the deprecated bearerTokenFile")
	}
	scraper := release + "-enforcer-scraper"
	if diff := cmp.Diff(map[string]any{"type": "Bearer", "credentials": map[string]any{"name": scraper, "key": "token"}}, ep["authorization"]); diff != "" {
		t.Errorf("authorization (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"insecureSkipVerify": true}, ep["tlsConfig"]); diff != "" {
		t.Errorf("tlsConfig (-want +got):\n%s", diff)
	}
	secret := objs["Secret"][scraper]
	if secret == nil || objs["ServiceAccount"][scraper] == nil {
		t.Fatalf("no scraper Secret (%v) or ServiceAccount", secret != nil)
	}
	if typ, _, _ := unstructured.NestedString(secret.Object, "type"); typ != "kubernetes.io/service-account-token" || secret.GetAnnotations()["kubernetes.io/service-account.name"] != scraper || secret.GetNamespace() != sm.GetNamespace() {
		t.Errorf("scraper Secret: type %q, annotations %v, namespace %q", typ, secret.GetAnnotations(), secret.GetNamespace())
	}
	crb := objs["ClusterRoleBinding"][scraper]
	if crb == nil {
		t.Fatal("the scraper ServiceAccount is bound to nothing")
	}
	roleName, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name")
	role := objs["ClusterRole"][roleName]
	if role == nil {
		t.Fatalf("the scraper's ClusterRole %q is not rendered", roleName)
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if diff := cmp.Diff([]any{map[string]any{"nonResourceURLs": []any{"/metrics", "/violations"}, "verbs": []any{"get"}}}, rules); diff != "" {
		t.Errorf("the scraper's ClusterRole %s rules (-want +got):\n%s", roleName, diff)
	}
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	if diff := cmp.Diff([]any{map[string]any{"kind": "ServiceAccount", "name": scraper, "namespace": namespace}}, subjects); diff != "" {
		t.Errorf("scraper binding subjects (-want +got):\n%s", diff)
	}
	probe := at(t, objs["Deployment"][release+"-enforcer"].Object, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["livenessProbe"]
	if got, _, _ := unstructured.NestedString(probe.(map[string]any), "httpGet", "scheme"); got != "HTTPS" {
		t.Errorf("the enforcer's livenessProbe scheme %q, want HTTPS", got)
	}

	// A Secret of the user's own, and a verified certificate.
	objs = byKind(render(t, h, "--set", "monitoring.serviceMonitor.enabled=true",
		"--set", "monitoring.serviceMonitor.enforcer.tokenSecret.name=prometheus-token,monitoring.serviceMonitor.enforcer.tokenSecret.key=t",
		"--set", "monitoring.serviceMonitor.enforcer.tlsConfig.insecureSkipVerify=false,monitoring.serviceMonitor.enforcer.tlsConfig.serverName=enforcer.example",
		"--set", "monitoring.serviceMonitor.enforcer.tlsConfig.ca.secret.name=enforcer-ca,monitoring.serviceMonitor.enforcer.tlsConfig.ca.secret.key=ca.crt"))
	endpoints, _, _ = unstructured.NestedSlice(objs["ServiceMonitor"][release+"-enforcer"].Object, "spec", "endpoints")
	ep = endpoints[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "t"}}, ep["authorization"]); diff != "" {
		t.Errorf("authorization from the values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"insecureSkipVerify": false, "serverName": "enforcer.example", "ca": map[string]any{"secret": map[string]any{"name": "enforcer-ca", "key": "ca.crt"}}}, ep["tlsConfig"]); diff != "" {
		t.Errorf("tlsConfig from the values (-want +got):\n%s", diff)
	}
	if objs["Secret"][scraper] != nil || objs["ServiceAccount"][scraper] != nil || objs["ClusterRoleBinding"][scraper] != nil {
		t.Error("with a Secret of the user's, the chart still renders its scraper identity")
	}
}

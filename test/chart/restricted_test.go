package chart

// The chart on restricted clusters: its pods meet the "restricted" Pod
// Security Standard without naming a user, and the PodDisruptionBudgets,
// ServiceAccounts and RBAC can be tuned or left to the installer.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// podTemplates returns the pod of every workload in objs (a Deployment's
// template, a Pod itself), by "<kind>/<name>".
func podTemplates(t *testing.T, objs []*unstructured.Unstructured) map[string]*corev1.PodTemplateSpec {
	t.Helper()
	out := map[string]*corev1.PodTemplateSpec{}
	for _, o := range objs {
		var raw map[string]any
		switch o.GetKind() {
		case "Deployment":
			raw = at(t, o.Object, "spec", "template").(map[string]any)
		case "Pod":
			raw = map[string]any{"metadata": o.Object["metadata"], "spec": o.Object["spec"]}
		default:
			continue
		}
		var pod corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(raw, &pod, true); err != nil {
			t.Fatalf("%s: its pod is not a PodTemplateSpec: %v", key(o), err)
		}
		out[o.GetKind()+"/"+o.GetName()] = &pod
	}
	return out
}

// restrictedViolations evaluates pod against the latest "restricted" Pod
// Security Standard, as Pod Security admission does, and returns what it
// forbids ("" when nothing).
func restrictedViolations(t *testing.T, pod *corev1.PodTemplateSpec) string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	result := policy.AggregateCheckResults(evaluator.EvaluatePod(
		psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec))
	if result.Allowed {
		return ""
	}
	return result.ForbiddenReason()
}

// With the defaults, and with the user, group and fsGroup unset explicitly
// (null), every pod the chart runs (the scheduler's, the enforcer's, the
// helm test's) passes the schema and the latest "restricted" level, and
// names no user: the image's own (a numeric non-root USER) applies, or the
// one a platform assigns. One privileged setting in either component's
// values and that component's pod is forbidden, so the check can fail.
func TestPodsMeetRestrictedWithoutAUser(t *testing.T) {
	forEachHelm(t, testPodsMeetRestrictedWithoutAUser)
}

func testPodsMeetRestrictedWithoutAUser(t *testing.T, h *framework.Helm) {
	unset := writeValues(t, `
podSecurityContext: {runAsUser: null, runAsGroup: null, fsGroup: null}
securityContext: {runAsUser: null, runAsGroup: null}
enforcer:
  podSecurityContext: {runAsUser: null, runAsGroup: null, fsGroup: null}
  securityContext: {runAsUser: null, runAsGroup: null}
`)
	scheduler, enforcer := "Deployment/"+release, "Deployment/"+release+"-enforcer"
	for name, args := range map[string][]string{"defaults": nil, "users unset": {"-f", unset}} {
		t.Run(name, func(t *testing.T) {
			pods := podTemplates(t, renderAll(t, h, args...))
			for _, want := range []string{scheduler, enforcer, "Pod/" + release + "-test-canary", "Pod/" + release + "-test-lease"} {
				if pods[want] == nil {
					t.Errorf("no %s rendered", want)
				}
			}
			for name, pod := range pods {
				if forbidden := restrictedViolations(t, pod); forbidden != "" {
					t.Errorf("%s: not restricted: %s", name, forbidden)
				}
				if name != "Pod/"+release+"-test-lease" { // kubectl's image, not ours
					if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.FSGroup != nil {
						t.Errorf("%s: pod securityContext %+v names a user, group or fsGroup", name, sc)
					}
				}
				for _, c := range pod.Spec.Containers {
					if sc := c.SecurityContext; sc == nil || sc.RunAsUser != nil || sc.RunAsGroup != nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
						t.Errorf("%s: container %s securityContext %+v: want a read-only root and no user", name, c.Name, sc)
					}
				}
			}
		})
	}

	for _, tc := range []struct {
		set, pod, reason string
	}{
		{"securityContext.privileged=true", scheduler, "privileged"},
		{"securityContext.allowPrivilegeEscalation=true", scheduler, "allowPrivilegeEscalation != false"},
		{"podSecurityContext.runAsNonRoot=false", scheduler, "runAsNonRoot != true"},
		{"securityContext.capabilities.add[0]=NET_ADMIN", scheduler, "unrestricted capabilities"},
		{"enforcer.securityContext.privileged=true", enforcer, "privileged"},
		{"enforcer.podSecurityContext.seccompProfile.type=Unconfined", enforcer, "seccompProfile"},
		{"enforcer.podSecurityContext.runAsUser=0", enforcer, "runAsUser=0"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			pods := podTemplates(t, render(t, h, "--set", tc.set))
			if forbidden := restrictedViolations(t, pods[tc.pod]); !strings.Contains(forbidden, tc.reason) {
				t.Errorf("%s with %s: forbidden %q, want %q", tc.pod, tc.set, forbidden, tc.reason)
			}
			// The other component keeps its own values.
			other := scheduler
			if tc.pod == scheduler {
				other = enforcer
			}
			if forbidden := restrictedViolations(t, pods[other]); forbidden != "" {
				t.Errorf("%s with %s: %s reached it too: %s", other, tc.set, tc.set, forbidden)
			}
		})
	}

	// A user can still be pinned, where a platform does not assign one.
	pods := podTemplates(t, render(t, h, "--set", "podSecurityContext.runAsUser=1000,podSecurityContext.fsGroup=2000,enforcer.podSecurityContext.runAsGroup=3000"))
	if sc := pods[scheduler].Spec.SecurityContext; sc.RunAsUser == nil || *sc.RunAsUser != 1000 || sc.FSGroup == nil || *sc.FSGroup != 2000 {
		t.Errorf("scheduler pod securityContext %+v: want runAsUser 1000, fsGroup 2000", sc)
	}
	if sc := pods[enforcer].Spec.SecurityContext; sc.RunAsGroup == nil || *sc.RunAsGroup != 3000 || sc.RunAsUser != nil {
		t.Errorf("enforcer pod securityContext %+v: want runAsGroup 3000 and no user", sc)
	}
}

// pdbs returns the rendered PodDisruptionBudgets' specs by name, with the
// selector left out.
func pdbs(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		if o.GetKind() != "PodDisruptionBudget" {
			continue
		}
		spec := at(t, o.Object, "spec").(map[string]any)
		delete(spec, "selector")
		out[o.GetName()] = spec
	}
	return out
}

// Each component's PodDisruptionBudget: on with maxUnavailable 1 by
// default, off on its own, minAvailable or maxUnavailable (a number or a
// percentage) as given; both at once is refused by the schema, naming the
// value.
func TestPodDisruptionBudgets(t *testing.T) { forEachHelm(t, testPodDisruptionBudgets) }

func testPodDisruptionBudgets(t *testing.T, h *framework.Helm) {
	sched, enf := release, release+"-enforcer"
	one := map[string]any{"maxUnavailable": float64(1)}
	for _, tc := range []struct {
		set  string
		want map[string]map[string]any
	}{
		{"", map[string]map[string]any{sched: one, enf: one}},
		{"podDisruptionBudget.enabled=false", map[string]map[string]any{enf: one}},
		{"enforcer.podDisruptionBudget.enabled=false", map[string]map[string]any{sched: one}},
		{"podDisruptionBudget.enabled=false,enforcer.podDisruptionBudget.enabled=false", map[string]map[string]any{}},
		{"podDisruptionBudget.minAvailable=1", map[string]map[string]any{sched: {"minAvailable": float64(1)}, enf: one}},
		{"podDisruptionBudget.maxUnavailable=50%,enforcer.podDisruptionBudget.minAvailable=50%",
			map[string]map[string]any{sched: {"maxUnavailable": "50%"}, enf: {"minAvailable": "50%"}}},
		{"enforcer.podDisruptionBudget.maxUnavailable=0", map[string]map[string]any{sched: one, enf: {"maxUnavailable": float64(0)}}},
	} {
		t.Run(or(tc.set, "defaults"), func(t *testing.T) {
			var args []string
			if tc.set != "" {
				args = []string{"--set", tc.set}
			}
			if diff := cmp.Diff(tc.want, pdbs(t, render(t, h, args...))); diff != "" {
				t.Errorf("PodDisruptionBudgets (-want +got):\n%s", diff)
			}
		})
	}
	for _, prefix := range []string{"", "enforcer."} {
		set := fmt.Sprintf("%[1]spodDisruptionBudget.minAvailable=1,%[1]spodDisruptionBudget.maxUnavailable=1", prefix)
		_, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--kube-version", newestLineCluster, "--set", set)
		want := fmt.Sprintf("at '/%spodDisruptionBudget/maxUnavailable': value must be 'unset, as minAvailable is set: set one of the two'", strings.ReplaceAll(prefix, ".", "/"))
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("%s: %v, want the schema's error %q:\n%s", set, err, want, errOut)
		}
	}
	if _, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--set-string", "podDisruptionBudget.minAvailable=half"); err == nil || !strings.Contains(errOut, "/podDisruptionBudget/minAvailable") {
		t.Errorf("minAvailable=half: %v, want the schema's error naming it:\n%s", err, errOut)
	}
}

// subjects returns every ServiceAccount a rendered binding grants to, as
// "<namespace>/<name>", with the binding's kind/name.
func subjects(t *testing.T, objs []*unstructured.Unstructured) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, o := range objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		subs, _, _ := unstructured.NestedSlice(o.Object, "subjects")
		for _, s := range subs {
			s := s.(map[string]any)
			if s["kind"] == "ServiceAccount" {
				out[fmt.Sprint(s["namespace"], "/", s["name"])] = append(out[fmt.Sprint(s["namespace"], "/", s["name"])], key(o))
			}
		}
	}
	return out
}

// serviceAccount.create=false (and the enforcer's) renders no
// ServiceAccount for that component; its pods run as the name given, and
// every binding of its rights, and the enforcer's admission policy, name
// that account. Without a name the schema refuses it.
func TestExistingServiceAccounts(t *testing.T) { forEachHelm(t, testExistingServiceAccounts) }

func testExistingServiceAccounts(t *testing.T, h *framework.Helm) {
	defaults := renderAll(t, h)
	objs := renderAll(t, h, "--set", "serviceAccount.create=false,serviceAccount.name=sched-sa,enforcer.serviceAccount.create=false,enforcer.serviceAccount.name=enforcer-sa")
	kinds := byKind(objs)
	for name := range kinds["ServiceAccount"] {
		if name != release+"-test" { // the helm test's checker
			t.Errorf("ServiceAccount %s rendered with create=false", name)
		}
	}
	pods := podTemplates(t, objs)
	for pod, want := range map[string]string{"Deployment/" + release: "sched-sa", "Deployment/" + release + "-enforcer": "enforcer-sa"} {
		if got := pods[pod].Spec.ServiceAccountName; got != want {
			t.Errorf("%s runs as %q, want %q", pod, got, want)
		}
	}
	// The same bindings as the defaults', to the given names instead.
	renamed := map[string]string{namespace + "/" + release: namespace + "/sched-sa", namespace + "/" + release + "-enforcer": namespace + "/enforcer-sa"}
	want := map[string][]string{}
	for sa, bindings := range subjects(t, defaults) {
		want[or(renamed[sa], sa)] = bindings
	}
	if diff := cmp.Diff(want, subjects(t, objs)); diff != "" {
		t.Errorf("binding subjects (-want +got):\n%s", diff)
	}
	if len(want[namespace+"/sched-sa"]) == 0 || len(want[namespace+"/enforcer-sa"]) == 0 {
		t.Errorf("the defaults bind nothing to the scheduler's or the enforcer's ServiceAccount: %v", want)
	}
	conditions, _, _ := unstructured.NestedSlice(kinds["ValidatingAdmissionPolicy"][release+"-enforcer"].Object, "spec", "matchConditions")
	if got := fmt.Sprint(conditions); !strings.Contains(got, "'system:serviceaccount:"+namespace+":enforcer-sa'") {
		t.Errorf("the enforcer's admission policy does not name enforcer-sa: %s", got)
	}

	// Annotations land on the ServiceAccount the chart makes.
	sa := byKind(render(t, h, "--set", "enforcer.serviceAccount.annotations.iam\\.example\\.com/role=enforce"))["ServiceAccount"][release+"-enforcer"]
	if sa == nil || sa.GetAnnotations()["iam.example.com/role"] != "enforce" {
		t.Errorf("enforcer.serviceAccount.annotations did not reach the enforcer's ServiceAccount: %v", sa)
	}

	for _, prefix := range []string{"", "enforcer."} {
		_, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--set", prefix+"serviceAccount.create=false")
		want := fmt.Sprintf("/%sserviceAccount/name", strings.ReplaceAll(prefix, ".", "/"))
		if err == nil || !strings.Contains(errOut, want) {
			t.Errorf("%sserviceAccount.create=false without a name: %v, want the schema's error naming %s:\n%s", prefix, err, want, errOut)
		}
	}
}

// rbac.create=false renders no RBAC object at all (the enforcer's, the
// delegation bindings, the readers, the scrapers' and the helm test's
// included) and nothing else less; NOTES.txt then lists what to grant.
func TestNoRBAC(t *testing.T) { forEachHelm(t, testNoRBAC) }

func testNoRBAC(t *testing.T, h *framework.Helm) {
	monitoring := []string{"--set", "monitoring.serviceMonitor.enabled=true,monitoring.serviceMonitor.prometheusServiceAccount.name=prom,monitoring.serviceMonitor.prometheusServiceAccount.namespace=monitoring"}
	on := renderAll(t, h, monitoring...)
	off := renderAll(t, h, append(monitoring, "--set", "rbac.create=false")...)
	var wantKeys, gotKeys []string
	for _, o := range on {
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			wantKeys = append(wantKeys, key(o))
		}
	}
	for _, o := range off {
		gotKeys = append(gotKeys, key(o))
	}
	if len(wantKeys) == len(on) {
		t.Fatal("the defaults render no RBAC: nothing to leave out")
	}
	if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
		t.Errorf("rbac.create=false renders (-all but RBAC +got):\n%s", diff)
	}

	notes := installNotes(t, h, "--set", "rbac.create=false")
	for _, want := range []string{
		"rbac.create is false",
		"ServiceAccount " + namespace + "/" + release + ": the ClusterRoles system:kube-scheduler and\n    system:volume-scheduler",
		"ServiceAccount " + namespace + "/" + release + "-enforcer: the rules of the ClusterRole " + release + "-enforcer",
		"system:auth-delegator",
		"extension-apiserver-authentication-reader in kube-system",
		"get on the nonResourceURL /metrics",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt with rbac.create=false does not say %q:\n%s", want, notes)
		}
	}
}

// commonLabels land on every object the chart renders, with every optional
// object on, and on every pod; the chart's own labels stay and cannot be
// overridden through them.
func TestCommonLabels(t *testing.T) { forEachHelm(t, testCommonLabels) }

func testCommonLabels(t *testing.T, h *framework.Helm) {
	objs := renderAll(t, h, "--set", "namespace.create=true,monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.grafanaDashboard.enabled=true,"+
		"monitoring.serviceMonitor.prometheusServiceAccount.name=prom,monitoring.serviceMonitor.prometheusServiceAccount.namespace=monitoring",
		"--set-string", "commonLabels.team=platform,commonLabels.example\\.com/cost-center=42")
	want := map[string]string{"team": "platform", "example.com/cost-center": "42", "app.kubernetes.io/part-of": "placement-scheduler"}
	kinds := map[string]bool{}
	for _, o := range objs {
		kinds[o.GetKind()] = true
		for k, v := range want {
			if got := o.GetLabels()[k]; got != v {
				t.Errorf("%s: label %s=%q, want %q", key(o), k, got, v)
			}
		}
	}
	for _, k := range []string{"Namespace", "ServiceMonitor", "PrometheusRule", "Secret", "ValidatingAdmissionPolicy", "Pod", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("no %s rendered: the check does not cover every kind", k)
		}
	}
	for name, pod := range podTemplates(t, objs) {
		if pod.Labels["team"] != "platform" {
			t.Errorf("%s: pod labels %v lack commonLabels", name, pod.Labels)
		}
	}
	_, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--set", "commonLabels.app\\.kubernetes\\.io/name=x")
	if err == nil || !strings.Contains(errOut, "invalid propertyName 'app.kubernetes.io/name'") {
		t.Errorf("commonLabels naming a label of the chart's: %v, want the schema's error:\n%s", err, errOut)
	}
}

// NOTES.txt names the scheduler and the enforcer (only when it runs), how a
// pod opts in, where violations are read, and the reader ClusterRoles.
func TestNotes(t *testing.T) { forEachHelm(t, testNotes) }

func testNotes(t *testing.T, h *framework.Helm) {
	enforcerLines := []string{
		"placement-enforcer runs as 2 replica(s) beside it (Deployment " + release + "-enforcer",
		"kubectl placement violations --lease-namespace " + namespace + " --lease-name " + release + "-enforcer",
		"ClusterRole " + release + "-enforcer-reader (GET /metrics, /violations)",
	}
	always := []string{
		"(Deployment " + release + ", lease " + namespace + "/" + release,
		"Pods opt in with spec.schedulerName",
		"  - placement-scheduler\n",
		"ClusterRole " + release + ":metrics-reader (GET /metrics)",
	}
	notes := installNotes(t, h)
	for _, want := range append(always, enforcerLines...) {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt does not say %q:\n%s", want, notes)
		}
	}
	notes = installNotes(t, h, "--set", "enforcer.enabled=false")
	for _, want := range always {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES.txt with enforcer.enabled=false does not say %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "enforcer") {
		t.Errorf("NOTES.txt with enforcer.enabled=false speaks of the enforcer:\n%s", notes)
	}
}

// Each Helm lints the chart strictly (a warning fails too) and renders it,
// with the defaults and with every monitoring object on.
func TestLintAndTemplate(t *testing.T) { forEachHelm(t, testLintAndTemplate) }

func testLintAndTemplate(t *testing.T, h *framework.Helm) {
	for name, set := range map[string]string{
		"defaults":   "",
		"monitoring": "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.grafanaDashboard.enabled=true",
	} {
		t.Run(name, func(t *testing.T) {
			var args []string
			if set != "" {
				args = []string{"--set", set}
			}
			if out, errOut, err := h.Run(append([]string{"lint", "--strict", framework.ChartDir(t)}, args...)...); err != nil || !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint --strict %s: %v\n%s%s", set, err, out, errOut)
			}
			kinds := map[string]bool{}
			for _, o := range renderAll(t, h, args...) {
				kinds[o.GetKind()] = true
			}
			want := []string{"Deployment", "ConfigMap", "Service", "PodDisruptionBudget", "ServiceAccount", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "Pod"}
			if set != "" {
				want = append(want, "ServiceMonitor", "PrometheusRule")
			}
			for _, k := range want {
				if !kinds[k] {
					t.Errorf("helm template %s renders no %s", set, k)
				}
			}
		})
	}
}

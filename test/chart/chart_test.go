// Package chart checks charts/placement-scheduler against manifests/, the
// one source of truth: rendered with its defaults, the chart is the
// kustomize base, object by object, up to the differences Helm itself
// makes (normalize says which). It also checks that values the chart
// offers land where they should and that values.schema.json turns typos
// away. It drives the helm binary `make helm` builds from tools/helm, and
// renders manifests/ (as embedded in the manifests package) with the
// kustomize library kubectl embeds.
package chart

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/kustomize"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// What `helm install placement-scheduler charts/placement-scheduler -n
// placement-scheduler` is called with; manifests/ uses these names.
const (
	release   = "placement-scheduler"
	namespace = "placement-scheduler"
	configKey = "scheduler-config.yaml"
	// enforcerConfigKey is the enforcer's config, in the same ConfigMap.
	enforcerConfigKey = "enforcer-config.yaml"
)

// helmLine is a Helm the chart is checked with, and how to find its binary.
type helmLine struct {
	name string
	find func(home string) (*framework.Helm, error)
}

// helmLines are the Helms users install the chart with: Helm 4, and Helm 3,
// which reads values.schema.json's draft 2020-12 from 3.18 on.
func helmLines() []helmLine {
	return []helmLine{
		{name: "helm4", find: framework.FindHelm},
		{name: "helm3", find: framework.FindHelm3},
	}
}

// forEachHelm runs test once with each of helmLines, as a subtest named
// after it.
func forEachHelm(t *testing.T, test func(t *testing.T, h *framework.Helm)) {
	t.Helper()
	for _, l := range helmLines() {
		t.Run(l.name, func(t *testing.T) {
			h, err := l.find(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			test(t, h)
		})
	}
}

// render is `helm template` of the chart with args (--set, -f ...),
// without the `helm test` hooks (renderAll has them): `helm install` never
// creates those, only `helm test` does.
func render(t *testing.T, h *framework.Helm, args ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderAll(t, h, append([]string{"--skip-tests"}, args...)...)
}

// newestLineCluster is the Kubernetes version the tests render for unless
// they say otherwise (rather than whatever the helm binary defaults to): a
// cluster of the newest build line, the line manifests/ pins.
const newestLineCluster = "v1.37.2"

// renderAll is `helm template` of the chart with args, test hooks included.
func renderAll(t *testing.T, h *framework.Helm, args ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderRelease(t, h, release, args...)
}

// renderRelease is renderAll for a release called name.
func renderRelease(t *testing.T, h *framework.Helm, name string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, errOut, err := h.Run(append([]string{"template", name, framework.ChartDir(t), "--namespace", namespace, "--kube-version", newestLineCluster}, args...)...)
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	objs, err := framework.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatalf("decoding helm template output: %v", err)
	}
	return objs
}

// renderKustomize is `kubectl kustomize` of the shipped manifests' folder
// dir ("." for the base, lines/k8s-1.<minor> for an older line's overlay).
func renderKustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := kustomize.Render(filepath.Join(framework.WriteManifests(t), dir), "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := framework.DecodeObjects(out)
	if err != nil {
		t.Fatalf("decoding kustomize output: %v", err)
	}
	return objs
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// helmLabels are the labels Helm charts conventionally add, and ours does,
// to every object and to the pod template; manifests/ has no release to name.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// kustomizeHash is the content-hash suffix configMapGenerator appends.
var kustomizeHash = regexp.MustCompile(`^(placement-scheduler-config)-[a-z0-9]{10}$`)

// normalize removes the differences that are Helm's and kustomize's own
// ways of doing the same thing, and nothing else:
//   - Helm's labels (helmLabels) on every object and the pod template;
//   - the config ConfigMap's name: kustomize appends a hash of its content
//     (and rewrites the Deployment's volume to match) to roll the pods on a
//     change; the chart keeps a fixed name and rolls them with the pod
//     template's checksum/config annotation instead, which is checked
//     (against the ConfigMap's data) and then dropped;
//   - the config files in the ConfigMap (the scheduler's and the
//     enforcer's), parsed: manifests/ ships them with comments, the chart
//     renders them from values; the enforcer's Deployment also carries
//     checksum/enforcer-config, checked and dropped like checksum/config.
func normalize(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	var config, enforcerConfig string
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		o = o.DeepCopy()
		dropLabels(o.Object, "metadata", "labels")
		if o.GetKind() == "ConfigMap" {
			o.SetName(kustomizeHash.ReplaceAllString(o.GetName(), "$1"))
			config, _, _ = unstructured.NestedString(o.Object, "data", configKey)
			enforcerConfig, _, _ = unstructured.NestedString(o.Object, "data", enforcerConfigKey)
			// Every config file in it (the scheduler's, the enforcer's), parsed.
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			for k, v := range data {
				var parsed map[string]any
				if err := yaml.Unmarshal([]byte(v), &parsed); err != nil {
					t.Fatalf("%s: %s: %v", key(o), k, err)
				}
				if err := unstructured.SetNestedField(o.Object, parsed, "data", k); err != nil {
					t.Fatal(err)
				}
			}
		}
		out[key(o)] = o
	}
	for _, o := range out {
		if o.GetKind() != "Deployment" {
			continue
		}
		dropLabels(o.Object, "spec", "template", "metadata", "labels")
		volumes, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "volumes")
		for _, v := range volumes {
			if name, ok, _ := unstructured.NestedString(v.(map[string]any), "configMap", "name"); ok {
				_ = unstructured.SetNestedField(v.(map[string]any), kustomizeHash.ReplaceAllString(name, "$1"), "configMap", "name")
			}
		}
		_ = unstructured.SetNestedSlice(o.Object, volumes, "spec", "template", "spec", "volumes")
		annotations, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "annotations")
		if sum, ok := annotations["checksum/config"]; ok {
			// The checksum is of the config the ConfigMap carries, so a
			// change to it changes the pod template and rolls the pods.
			if want := sha256.Sum256([]byte(strings.TrimSuffix(config, "\n"))); sum != hex.EncodeToString(want[:]) {
				t.Errorf("%s: checksum/config %s is not the sha256 of the ConfigMap's %s", key(o), sum, configKey)
			}
			delete(annotations, "checksum/config")
			_ = unstructured.SetNestedStringMap(o.Object, annotations, "spec", "template", "metadata", "annotations")
		}
		if sum, ok := annotations["checksum/enforcer-config"]; ok {
			if want := sha256.Sum256([]byte(strings.TrimSuffix(enforcerConfig, "\n"))); sum != hex.EncodeToString(want[:]) {
				t.Errorf("%s: checksum/enforcer-config %s is not the sha256 of the ConfigMap's %s", key(o), sum, enforcerConfigKey)
			}
			delete(annotations, "checksum/enforcer-config")
			_ = unstructured.SetNestedStringMap(o.Object, annotations, "spec", "template", "metadata", "annotations")
		}
		if len(annotations) == 0 { // the enforcer's pods have only the checksums
			unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "annotations")
		}
	}
	return out
}

// imageUser is the numeric user and group the image runs as (hack/image's
// USER, which test/integration checks in the built image).
const imageUser = int64(65532)

// leaveUserToImage removes from a kustomize Deployment's pod securityContext
// the runAsUser and runAsGroup that name the image's own user: manifests/
// states them, the chart leaves them unset (podSecurityContext) so that a
// platform assigning users from a range (OpenShift's restricted SCC) can,
// and the process runs as the same user either way. Any other value is
// kept, and so differs.
func leaveUserToImage(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	if o.GetKind() != "Deployment" {
		return
	}
	for _, field := range []string{"runAsUser", "runAsGroup"} {
		path := []string{"spec", "template", "spec", "securityContext", field}
		// Decoded from YAML through JSON, a number is a float64.
		if id, ok, _ := unstructured.NestedFieldNoCopy(o.Object, path...); ok && id == float64(imageUser) {
			unstructured.RemoveNestedField(o.Object, path...)
		}
	}
}

func dropLabels(obj map[string]any, path ...string) {
	labels, ok, _ := unstructured.NestedStringMap(obj, path...)
	if !ok {
		return
	}
	for _, l := range helmLabels {
		delete(labels, l)
	}
	_ = unstructured.SetNestedStringMap(obj, labels, path...)
}

// With its defaults the chart installs what `kubectl apply -k manifests/`
// does, up to normalize; the Namespace only when namespace.create is set
// (`helm install` needs the release namespace to exist beforehand). Among
// other things this keeps the chart's default profile equal to
// manifests/scheduler-config.yaml's, with no second copy of the config
// allowed to drift. TestEachLineInstallsItsKustomization does the same for
// the older lines.
func TestDefaultsRenderTheKustomizeBase(t *testing.T) {
	forEachHelm(t, testDefaultsRenderTheKustomizeBase)
}

func testDefaultsRenderTheKustomizeBase(t *testing.T, h *framework.Helm) {
	base := renderKustomize(t, ".")
	for _, tc := range []struct {
		name string
		args []string
		skip string // a kind the chart leaves out with these values
	}{
		{name: "defaults", skip: "Namespace"},
		{name: "namespace.create=true", args: []string{"--set", "namespace.create=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			compareInstalls(t, base, render(t, h, tc.args...), tc.skip)
		})
	}
}

// compareInstalls fails t where the chart's objects (got) differ from
// kustomize's (want), up to normalize; skip is a kind the chart may leave
// out.
func compareInstalls(t *testing.T, want, got []*unstructured.Unstructured, skip string) {
	t.Helper()
	wantObjs, gotObjs := normalize(t, want), normalize(t, got)
	for _, w := range wantObjs {
		leaveUserToImage(t, w)
	}
	for _, k := range slices.Sorted(maps.Keys(wantObjs)) {
		w := wantObjs[k]
		g, ok := gotObjs[k]
		switch {
		case !ok && w.GetKind() == skip:
		case !ok:
			t.Errorf("%s: in manifests/, not rendered by the chart", k)
		case w.GetKind() == "ConfigMap":
			if diff := cmp.Diff(w.Object["data"], g.Object["data"]); diff != "" {
				t.Errorf("%s: the chart's config (its profile) drifted from the manifests' scheduler-config.yaml (-manifests +chart):\n%s", k, diff)
			}
			delete(w.Object, "data")
			delete(g.Object, "data")
			fallthrough
		default:
			if diff := cmp.Diff(w.Object, g.Object); diff != "" {
				t.Errorf("%s differs (-manifests +chart):\n%s", k, diff)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(gotObjs)) {
		if _, ok := wantObjs[k]; !ok {
			t.Errorf("%s: rendered by the chart, not in manifests/", k)
		}
	}
}

// renderedConfig returns the ConfigMap's config and the Deployment of a render.
func renderedConfig(t *testing.T, objs []*unstructured.Unstructured) (config map[string]any, deployment *unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedString(o.Object, "data", configKey)
			if err := yaml.Unmarshal([]byte(data), &config); err != nil {
				t.Fatalf("%s: %v\n%s", configKey, err, data)
			}
		case "Deployment":
			if o.GetName() == release { // the scheduler's, not the enforcer's
				deployment = o
			}
		}
	}
	if config == nil || deployment == nil {
		t.Fatal("the render has no ConfigMap or no Deployment")
	}
	return config, deployment
}

func at(t *testing.T, obj map[string]any, path ...string) any {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, path...)
	if err != nil || !ok {
		t.Fatalf("%s: not found (%v)", strings.Join(path, "."), err)
	}
	return v
}

// writeValues writes a values file for -f.
func writeValues(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The values the chart offers change what they say and nothing else: the
// scheduler's own placement, resources, image, verbosity, extra flags,
// leader-election timings; plugin args merged into the shipped profile
// (an existing entry's args key by key, a new entry for another plugin);
// additional profiles appended. A config change changes the checksum, so
// the Deployment rolls.
func TestValuesLandWhereTheySay(t *testing.T) { forEachHelm(t, testValuesLandWhereTheySay) }

func testValuesLandWhereTheySay(t *testing.T, h *framework.Helm) {
	values := writeValues(t, `
image: {repository: registry.example.com/ps, tag: v9.9.9, pullPolicy: Always}
replicas: 3
logVerbosity: 4
extraArgs: ["--kube-api-qps=100"]
nodeSelector: {pool: infra}
tolerations: [{key: infra, operator: Exists, effect: NoSchedule}]
resources: {requests: {cpu: 200m, memory: 256Mi}}
priorityClassName: infra-critical
podAnnotations: {example.com/team: sched}
podLabels: {example.com/cost-center: "42"}
topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app.kubernetes.io/name: placement-scheduler}}}
serviceAccount: {annotations: {iam.example.com/role: sched}}
leaderElection: {leaseDuration: 30s, renewDeadline: 20s, retryPeriod: 4s}
pluginArgs:
  PlacementInterPodAffinity: {hardPodAffinityWeight: 5}
  PlacementNodeAffinity:
    addedAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: pool, operator: In, values: [foo]}]
additionalProfiles:
  - schedulerName: placement-scheduler-batch
    plugins:
      multiPoint:
        enabled: [{name: PlacementNodeAffinity}]
`)
	objs := render(t, h, "-f", values)
	config, d := renderedConfig(t, objs)
	_, defaultD := renderedConfig(t, render(t, h))
	var sa *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sa = o
		}
	}
	if sa == nil {
		t.Fatal("no ServiceAccount rendered")
	}

	pod := at(t, d.Object, "spec", "template", "spec").(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"replicas", at(t, d.Object, "spec", "replicas"), float64(3)},
		{"image", c["image"], "registry.example.com/ps:v9.9.9"},
		{"imagePullPolicy", c["imagePullPolicy"], "Always"},
		{"args", c["args"], []any{"--config=/etc/placement-scheduler/scheduler-config.yaml", "--v=4", "--kube-api-qps=100"}},
		// Maps merge into the defaults, as Helm merges values (a key set
		// to null removes a default).
		{"nodeSelector", pod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "pool": "infra"}},
		{"tolerations", pod["tolerations"], []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}},
		{"resources", c["resources"], map[string]any{"requests": map[string]any{"cpu": "200m", "memory": "256Mi"}, "limits": map[string]any{"memory": "1Gi"}}},
		{"priorityClassName", pod["priorityClassName"], "infra-critical"},
		{"topologySpreadConstraints", pod["topologySpreadConstraints"], []any{map[string]any{
			"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "placement-scheduler"}},
		}}},
		// Added to the chart's own, which stay.
		{"podAnnotations", at(t, d.Object, "spec", "template", "metadata", "annotations", "example.com/team"), "sched"},
		{"the chart's annotation next to podAnnotations", at(t, d.Object, "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/default-container"), "scheduler"},
		{"podLabels", at(t, d.Object, "spec", "template", "metadata", "labels", "example.com/cost-center"), "42"},
		{"the selector label next to podLabels", at(t, d.Object, "spec", "template", "metadata", "labels", "app.kubernetes.io/name"), "placement-scheduler"},
		{"serviceAccount.annotations", sa.GetAnnotations(), map[string]string{"iam.example.com/role": "sched"}},
		{"leaderElection", config["leaderElection"], map[string]any{
			"leaderElect": true, "resourceLock": "leases", "resourceNamespace": namespace, "resourceName": release,
			"leaseDuration": "30s", "renewDeadline": "20s", "retryPeriod": "4s",
		}},
	} {
		if diff := cmp.Diff(check.want, check.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", check.what, diff)
		}
	}

	profiles := config["profiles"].([]any)
	if len(profiles) != 2 {
		t.Fatalf("%d profiles, want the shipped one and the additional one", len(profiles))
	}
	shipped := profiles[0].(map[string]any)
	wantPluginConfig := []any{
		map[string]any{"name": "PlacementInterPodAffinity", "args": map[string]any{"hardPodAffinityWeight": float64(5), "ignorePreferredTermsOfExistingPods": false}},
		map[string]any{"name": "PlacementNodeAffinity", "args": map[string]any{"addedAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{
				map[string]any{"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"foo"}}}},
			}},
		}}},
	}
	if diff := cmp.Diff(wantPluginConfig, shipped["pluginConfig"]); diff != "" {
		t.Errorf("the shipped profile's pluginConfig with pluginArgs (-want +got):\n%s", diff)
	}
	if shipped["schedulerName"] != "placement-scheduler" || profiles[1].(map[string]any)["schedulerName"] != "placement-scheduler-batch" {
		t.Errorf("profiles %v, want placement-scheduler then placement-scheduler-batch", profiles)
	}
	if _, ok := profiles[1].(map[string]any)["pluginConfig"]; ok {
		t.Error("pluginArgs leaked into an additional profile")
	}

	sum := at(t, d.Object, "spec", "template", "metadata", "annotations", "checksum/config")
	if sum == at(t, defaultD.Object, "spec", "template", "metadata", "annotations", "checksum/config") {
		t.Error("checksum/config did not change with the config: the pods would not roll")
	}
}

// The enforcer's values land on the enforcer's Deployment, and the
// scheduler's on the scheduler's only: each has its own placement, priority,
// pod labels and annotations, and resources. The enforcer's
// PodDisruptionBudget selects its pods and nothing else.
func TestEnforcerValuesLandWhereTheySay(t *testing.T) {
	forEachHelm(t, testEnforcerValuesLandWhereTheySay)
}

func testEnforcerValuesLandWhereTheySay(t *testing.T, h *framework.Helm) {
	values := writeValues(t, `
enforcer:
  replicas: 3
  logVerbosity: 5
  nodeSelector: {pool: infra}
  tolerations: [{key: infra, operator: Exists, effect: NoSchedule}]
  resources: {requests: {cpu: 100m}}
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: placement-scheduler-enforcer}}}
  topologySpreadConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app.kubernetes.io/name: placement-scheduler-enforcer}}}
  priorityClassName: enforcer-priority
  podAnnotations: {example.com/team: enforce}
  podLabels: {example.com/cost-center: "7"}
`)
	objs := byKind(render(t, h, "-f", values))
	d := objs["Deployment"][release+"-enforcer"]
	if d == nil {
		t.Fatal("no enforcer Deployment rendered")
	}
	pod := at(t, d.Object, "spec", "template", "spec").(map[string]any)
	c := pod["containers"].([]any)[0].(map[string]any)
	meta := at(t, d.Object, "spec", "template", "metadata").(map[string]any)
	for _, check := range []struct {
		what      string
		got, want any
	}{
		{"replicas", at(t, d.Object, "spec", "replicas"), float64(3)},
		{"args", c["args"], []any{"--config=/etc/placement-scheduler/enforcer-config.yaml", "--v=5"}},
		// Maps merge into the defaults, as Helm merges values.
		{"nodeSelector", pod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux", "pool": "infra"}},
		{"tolerations", pod["tolerations"], []any{map[string]any{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}}},
		{"resources", c["resources"], map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "1Gi"}}},
		{"affinity", pod["affinity"], map[string]any{"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
			"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "placement-scheduler-enforcer"}},
		}}}}},
		{"topologySpreadConstraints", pod["topologySpreadConstraints"], []any{map[string]any{
			"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
			"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "placement-scheduler-enforcer"}},
		}}},
		{"priorityClassName", pod["priorityClassName"], "enforcer-priority"},
		// Added to the chart's own, which stay.
		{"podAnnotations", at(t, meta, "annotations", "example.com/team"), "enforce"},
		{"the checksum next to podAnnotations", at(t, meta, "annotations", "checksum/enforcer-config") != "", true},
		{"podLabels", at(t, meta, "labels", "example.com/cost-center"), "7"},
		{"the selector label next to podLabels", at(t, meta, "labels", "app.kubernetes.io/name"), release + "-enforcer"},
	} {
		if diff := cmp.Diff(check.want, check.got); diff != "" {
			t.Errorf("enforcer %s (-want +got):\n%s", check.what, diff)
		}
	}

	// None of it reaches the scheduler's Deployment, whose own defaults stay.
	sched := at(t, objs["Deployment"][release].Object, "spec", "template").(map[string]any)
	schedPod := sched["spec"].(map[string]any)
	if schedPod["priorityClassName"] != "system-cluster-critical" || schedPod["tolerations"] != nil || schedPod["topologySpreadConstraints"] != nil ||
		!cmp.Equal(schedPod["nodeSelector"], map[string]any{"kubernetes.io/os": "linux"}) {
		t.Errorf("the enforcer's values reached the scheduler's pod spec: %v", schedPod)
	}
	if l := at(t, sched, "metadata", "labels").(map[string]any); l["example.com/cost-center"] != nil {
		t.Errorf("enforcer.podLabels reached the scheduler's pods: %v", l)
	}
	// And the scheduler's placement values do not reach the enforcer.
	e := byKind(render(t, h, "--set", "priorityClassName=x,tolerations[0].key=k,tolerations[0].operator=Exists,podLabels.team=s"))["Deployment"][release+"-enforcer"]
	if ePod := at(t, e.Object, "spec", "template", "spec").(map[string]any); ePod["priorityClassName"] != nil || ePod["tolerations"] != nil {
		t.Errorf("the scheduler's priorityClassName or tolerations reached the enforcer's pod spec: %v", ePod)
	}
	if l := at(t, e.Object, "spec", "template", "metadata", "labels").(map[string]any); l["team"] != nil {
		t.Errorf("podLabels reached the enforcer's pods: %v", l)
	}

	// Its PodDisruptionBudget selects exactly its pods, whatever the
	// release is called.
	for _, name := range []string{release, "other"} {
		var pdb, dep *unstructured.Unstructured
		for _, o := range renderRelease(t, h, name, "--skip-tests") {
			switch {
			case o.GetKind() == "PodDisruptionBudget" && strings.HasSuffix(o.GetName(), "-enforcer"):
				pdb = o
			case o.GetKind() == "Deployment" && strings.HasSuffix(o.GetName(), "-enforcer"):
				dep = o
			}
		}
		if pdb == nil || dep == nil {
			t.Fatalf("release %s: no enforcer PodDisruptionBudget (%v) or Deployment (%v)", name, pdb != nil, dep != nil)
		}
		sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		want, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "selector", "matchLabels")
		if !maps.Equal(sel, want) || pdb.GetName() != dep.GetName() {
			t.Errorf("release %s: PodDisruptionBudget %s selects %v, Deployment %s's pods are %v", name, pdb.GetName(), sel, dep.GetName(), want)
		}
	}
}

// image.digest pins the image: repository@digest is deployed, whatever the
// tag says, and `helm test`'s canary runs that same image. NOTES.txt names
// the image deployed, not the chart's appVersion when a tag or digest
// overrides it.
func TestImageDigestOverridesTag(t *testing.T) { forEachHelm(t, testImageDigestOverridesTag) }

func testImageDigestOverridesTag(t *testing.T, h *framework.Helm) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"defaults: the newest line's tag", nil, "ghcr.io/placement-scheduler/placement-scheduler:" + appVersion(t) + "-k8s1.37"},
		{"tag", []string{"--set", "image.tag=v9.9.9"}, "ghcr.io/placement-scheduler/placement-scheduler:v9.9.9"},
		{"digest over tag", []string{"--set", "image.tag=v9.9.9,image.digest=" + digest}, "ghcr.io/placement-scheduler/placement-scheduler@" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range renderAll(t, h, tc.args...) {
				if o.GetKind() != "Deployment" && o.GetName() != release+"-test-canary" {
					continue
				}
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				if o.GetKind() == "Pod" {
					containers, _, _ = unstructured.NestedSlice(o.Object, "spec", "containers")
				}
				if got := containers[0].(map[string]any)["image"]; got != tc.want {
					t.Errorf("%s: image %v, want %s", key(o), got, tc.want)
				}
			}
			if first, _, _ := strings.Cut(installNotes(t, h, tc.args...), "\n"); !strings.HasPrefix(first, "placement-scheduler "+tc.want+" runs as ") {
				t.Errorf("NOTES.txt's first line %q does not name the deployed image %s", first, tc.want)
			}
		})
	}
}

// installNotes is NOTES.txt rendered by h for a release with args, on the
// newest line's cluster. `helm install --dry-run=client` would print it, but
// Helm 3's still needs a reachable cluster, so a copy of the chart renders
// NOTES.txt's text with tpl, the same engine and values, into a ConfigMap.
func installNotes(t *testing.T, h *framework.Helm, args ...string) string {
	t.Helper()
	probe := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes-probe}\ndata:\n" +
		"  notes: {{ tpl (.Files.Get \"notes-probe.txt\") . | quote }}\n"
	chart := chartCopy(t, map[string]string{"notes-probe.yaml": probe})
	notes, err := os.ReadFile(filepath.Join(chart, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chart, "notes-probe.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	return probeData(t, h, chart, "notes-probe.yaml", append([]string{"--kube-version", newestLineCluster}, args...)...)["notes"]
}

// appVersion is Chart.yaml's appVersion.
func appVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.ChartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %v", err)
	}
	return chart.AppVersion
}

// values.schema.json turns a mistake away before anything is installed,
// naming the value: an unknown key at any level, a wrong type, a malformed
// duration, a flag the chart owns.
func TestSchemaRejectsMistakes(t *testing.T) { forEachHelm(t, testSchemaRejectsMistakes) }

func testSchemaRejectsMistakes(t *testing.T, h *framework.Helm) {
	for _, tc := range []struct {
		name   string
		args   []string
		values string
		want   []string // each must appear in helm's error
	}{
		{name: "top-level typo", args: []string{"--set", "replica=3"}, want: []string{"replica"}},
		{name: "nested typo", args: []string{"--set", "image.repo=x"}, want: []string{"/image", "repo"}},
		{name: "wrong type", args: []string{"--set-string", "replicas=two"}, want: []string{"/replicas", "integer"}},
		{name: "zero replicas", args: []string{"--set", "replicas=0"}, want: []string{"/replicas"}},
		{name: "bad duration", args: []string{"--set", "leaderElection.leaseDuration=15"}, want: []string{"/leaderElection/leaseDuration"}},
		{name: "the chart's --config", args: []string{"--set", "extraArgs[0]=--config=/tmp/x"}, want: []string{"/extraArgs/0"}},
		{name: "profile typo", values: "additionalProfiles: [{schedulerName: x, plugin: {}}]\n", want: []string{"/additionalProfiles/0", "plugin"}},
		{name: "plugin list typo", values: "additionalProfiles: [{schedulerName: x, plugins: {multipoint: {}}}]\n", want: []string{"/additionalProfiles/0/plugins", "multipoint"}},
		{name: "profile without schedulerName", values: "additionalProfiles: [{plugins: {}}]\n", want: []string{"/additionalProfiles/0", "schedulerName"}},
		{name: "a pod label the chart owns", args: []string{"--set", "podLabels.app\\.kubernetes\\.io/name=x"}, want: []string{"invalid propertyName 'app.kubernetes.io/name'"}},
		{name: "the chart's checksum annotation", args: []string{"--set", "podAnnotations.checksum/config=x"}, want: []string{"invalid propertyName 'checksum/config'"}},
		{name: "a tag as digest", args: []string{"--set", "image.digest=v1.2.3"}, want: []string{"/image/digest"}},
		{name: "monitoring typo", args: []string{"--set", "monitoring.serviceMonitor.enable=true"}, want: []string{"/monitoring/serviceMonitor", "enable"}},
		{name: "alert duration without unit", args: []string{"--set-string", "monitoring.prometheusRule.downFor=5"}, want: []string{"/monitoring/prometheusRule/downFor"}},
		{name: "enforcer typo", args: []string{"--set", "enforcer.nodeselector.pool=x"}, want: []string{"/enforcer", "nodeselector"}},
		{name: "an enforcer pod label the chart owns", args: []string{"--set", "enforcer.podLabels.app\\.kubernetes\\.io/component=x"}, want: []string{"invalid propertyName 'app.kubernetes.io/component'"}},
		{name: "the enforcer's checksum annotation", args: []string{"--set", "enforcer.podAnnotations.checksum/enforcer-config=x"}, want: []string{"invalid propertyName 'checksum/enforcer-config'"}},
		{name: "enforcer affinity typo", values: "enforcer: {affinity: {podAntiAfinity: {}}}\n", want: []string{"/enforcer/affinity", "podAntiAfinity"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", release, framework.ChartDir(t), "--namespace", namespace}, tc.args...)
			if tc.values != "" {
				args = append(args, "-f", writeValues(t, tc.values))
			}
			_, errOut, err := h.Run(args...)
			if err == nil {
				t.Fatalf("helm template %s: accepted, want a schema error", strings.Join(tc.args, " "))
			}
			if !strings.Contains(errOut, "values don't meet the specifications of the schema") {
				t.Errorf("error is not the schema's:\n%s", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error does not name %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// enforcer.enabled=false leaves out every enforcer object and its config;
// enforcer.config reaches the enforcer's config file, merged over what the
// chart sets.
func TestEnforcerToggleAndConfig(t *testing.T) { forEachHelm(t, testEnforcerToggleAndConfig) }

func testEnforcerToggleAndConfig(t *testing.T, h *framework.Helm) {
	for _, o := range render(t, h, "--set", "enforcer.enabled=false") {
		if strings.Contains(o.GetName(), "enforcer") {
			t.Errorf("enforcer.enabled=false still renders %s", key(o))
		}
		if o.GetKind() == "ConfigMap" {
			if _, ok, _ := unstructured.NestedString(o.Object, "data", enforcerConfigKey); ok {
				t.Errorf("enforcer.enabled=false still renders %s", enforcerConfigKey)
			}
		}
	}
	for _, o := range render(t, h, "--set", "enforcer.config.dryRun=true") {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		data, _, _ := unstructured.NestedString(o.Object, "data", enforcerConfigKey)
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(data), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["dryRun"] != true || cfg["schedulerConfig"] != "/etc/placement-scheduler/scheduler-config.yaml" || cfg["kind"] != "EnforcerConfiguration" {
			t.Errorf("enforcer config with enforcer.config.dryRun=true:\n%s", data)
		}
	}
}

// The enforcer's admission policy names the release's own ServiceAccount
// (another release, another name), its binding names the policy, and
// enforcer.admissionPolicy.enabled=false renders neither, and nothing else
// less.
func TestEnforcerAdmissionPolicy(t *testing.T) { forEachHelm(t, testEnforcerAdmissionPolicy) }

func testEnforcerAdmissionPolicy(t *testing.T, h *framework.Helm) {
	const other = "edge"
	objs := byKind(renderRelease(t, h, other))
	name := other + "-placement-scheduler-enforcer"
	if objs["ServiceAccount"][name] == nil {
		t.Fatalf("no ServiceAccount %s rendered", name)
	}
	policy := objs["ValidatingAdmissionPolicy"][name]
	binding := objs["ValidatingAdmissionPolicyBinding"][name]
	if policy == nil || binding == nil {
		t.Fatalf("release %s: no ValidatingAdmissionPolicy or binding %s rendered", other, name)
	}
	want := fmt.Sprintf("request.userInfo.username == 'system:serviceaccount:%s:%s'", namespace, name)
	conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	found := false
	for _, c := range conditions {
		found = found || c.(map[string]any)["expression"] == want
	}
	if !found {
		t.Errorf("the policy's matchConditions %v do not hold %q", conditions, want)
	}
	if got := at(t, binding.Object, "spec", "policyName"); got != name {
		t.Errorf("the binding names policy %v, want %s", got, name)
	}

	on := render(t, h)
	off := render(t, h, "--set", "enforcer.admissionPolicy.enabled=false")
	if len(off) != len(on)-2 {
		t.Errorf("enforcer.admissionPolicy.enabled=false renders %d objects, want the %d of the defaults less two", len(off), len(on))
	}
	for _, o := range off {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			t.Errorf("enforcer.admissionPolicy.enabled=false still renders %s", key(o))
		}
	}
}

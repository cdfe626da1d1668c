package chart

// The build lines: the chart deploys the image of the line that serves the
// cluster's Kubernetes version (the skew policy: the line of the cluster's
// minor, or the newest line for a cluster one minor newer), lets a pinned
// image win, and refuses a cluster no line serves.

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

const repository = "ghcr.io/placement-scheduler/placement-scheduler"

// images returns the image of every container the chart runs, helm test
// hooks included, by "<kind>/<name>".
func images(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		path := []string{"spec", "template", "spec", "containers"}
		if o.GetKind() == "Pod" {
			path = []string{"spec", "containers"}
		} else if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, path...)
		if err != nil || len(containers) != 1 {
			t.Fatalf("%s: want one container, got %d (%v)", key(o), len(containers), err)
		}
		out[o.GetKind()+"/"+o.GetName()] = containers[0].(map[string]any)["image"].(string)
	}
	return out
}

// wantImages is what images returns when the scheduler, the enforcer and the
// canary run image and the lease check runs kubectl.
func wantImages(image, kubectl string) map[string]string {
	return map[string]string{
		"Deployment/" + release:               image,
		"Deployment/" + release + "-enforcer": image,
		"Pod/" + release + "-test-canary":     image,
		"Pod/" + release + "-test-lease":      kubectl,
	}
}

// Each supported cluster version gets its line's image for the scheduler,
// the enforcer and the helm test's canary, and a kubectl of that line's
// Kubernetes release (one minor from a 1.38 apiserver at most, as kubectl's
// skew policy allows); a provider's suffix does not change the line.
func TestImageFollowsTheClusterLine(t *testing.T) { forEachHelm(t, testImageFollowsTheClusterLine) }

func testImageFollowsTheClusterLine(t *testing.T, h *framework.Helm) {
	app := appVersion(t)
	for _, tc := range []struct {
		cluster, tag, kubectl string
	}{
		{"1.35.0", app + "-k8s1.35", "v1.35.4"},
		{"1.36.2", app + "-k8s1.36", "v1.36.3"},
		{"v1.36.2-eks-1234abcd", app + "-k8s1.36", "v1.36.3"},
		{"1.37.1", app + "-k8s1.37", "v1.37.2"},
		// One minor newer than the newest line: the newest line.
		{"1.38.0", app + "-k8s1.37", "v1.37.2"},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			got := images(t, renderAll(t, h, "--kube-version", tc.cluster))
			want := wantImages(repository+":"+tc.tag, "registry.k8s.io/kubectl:"+tc.kubectl)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("images on Kubernetes %s (-want +got):\n%s", tc.cluster, diff)
			}
		})
	}
}

// or is a unless it is empty, else b.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// A pinned image (image.tag, or image.digest over any tag) is deployed as
// given whatever the cluster's line, and so is a pinned kubectl.
func TestPinnedImageWinsOverTheLine(t *testing.T) { forEachHelm(t, testPinnedImageWinsOverTheLine) }

func testPinnedImageWinsOverTheLine(t *testing.T, h *framework.Helm) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, cluster := range []string{"1.35.0", "1.38.0"} {
		for _, tc := range []struct {
			name           string
			set            string
			image, kubectl string
		}{
			{"tag", "image.tag=v9.9.9", repository + ":v9.9.9", ""},
			{"digest", "image.tag=v9.9.9,image.digest=" + digest, repository + "@" + digest, ""},
			{"kubectl tag", "tests.kubectlImage.tag=v1.30.0", "", "registry.k8s.io/kubectl:v1.30.0"},
			{"kubectl digest", "tests.kubectlImage.digest=" + digest, "", "registry.k8s.io/kubectl@" + digest},
		} {
			t.Run(cluster+"/"+tc.name, func(t *testing.T) {
				unpinned := images(t, renderAll(t, h, "--kube-version", cluster))
				want := wantImages(
					or(tc.image, unpinned["Deployment/"+release]),
					or(tc.kubectl, unpinned["Pod/"+release+"-test-lease"]))
				got := images(t, renderAll(t, h, "--kube-version", cluster, "--set", tc.set))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("images with %s on Kubernetes %s (-want +got):\n%s", tc.set, cluster, diff)
				}
			})
		}
	}
}

// A cluster no line serves is refused before anything is rendered, by
// Chart.yaml's kubeVersion, naming the supported range; a provider's
// pre-release suffix on a supported version is admitted.
func TestKubeVersionGuard(t *testing.T) { forEachHelm(t, testKubeVersionGuard) }

func testKubeVersionGuard(t *testing.T, h *framework.Helm) {
	for _, tc := range []struct {
		version string
		ok      bool
	}{
		{"v1.34.9", false},
		{"v1.35.0", true},
		{"v1.37.2-eks-1234abcd", true},
		{"v1.38.4", true},
		{"v1.39.0", false},
	} {
		_, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--kube-version", tc.version)
		switch {
		case tc.ok && err != nil:
			t.Errorf("Kubernetes %s: refused, want accepted: %v\n%s", tc.version, err, errOut)
		case !tc.ok && err == nil:
			t.Errorf("Kubernetes %s: accepted, want refused by kubeVersion", tc.version)
		case !tc.ok && !strings.Contains(errOut, "chart requires kubeVersion: >=1.35.0-0 <1.39.0-0 "):
			t.Errorf("Kubernetes %s: refused without naming kubeVersion's range:\n%s", tc.version, errOut)
		}
	}
}

// chartCopy is the chart in a temporary directory without Chart.yaml's
// kubeVersion, so that the templates' own guard is reached, with the probe
// templates given (name -> text) added.
func chartCopy(t *testing.T, probes map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "placement-scheduler")
	if err := os.CopyFS(dir, os.DirFS(framework.ChartDir(t))); err != nil {
		t.Fatal(err)
	}
	chartYAML := filepath.Join(dir, "Chart.yaml")
	b, err := os.ReadFile(chartYAML)
	if err != nil {
		t.Fatal(err)
	}
	kubeVersion := regexp.MustCompile(`(?m)^kubeVersion:.*\n`)
	if !kubeVersion.Match(b) {
		t.Fatal("Chart.yaml has no kubeVersion")
	}
	if err := os.WriteFile(chartYAML, kubeVersion.ReplaceAll(b, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range probes {
		if err := os.WriteFile(filepath.Join(dir, "templates", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// probeData renders the probe template name (a ConfigMap) of chart with h
// and args, and returns its data.
func probeData(t *testing.T, h *framework.Helm, chart, name string, args ...string) map[string]string {
	t.Helper()
	out, errOut, err := h.Run(append([]string{"template", release, chart, "--namespace", namespace, "--show-only", "templates/" + name}, args...)...)
	if err != nil {
		t.Fatalf("rendering the probe %s: %v\n%s", name, err, errOut)
	}
	objs, err := framework.DecodeObjects([]byte(out))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding the probe %s (%d objects): %v\n%s", name, len(objs), err, out)
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	return data
}

// Past kubeVersion (a chart repackaged without it, a tool that does not
// check it), the templates refuse a cluster no line serves in one line that
// names the supported range and the value that pins the image; pinned
// images render anywhere.
func TestUnservedClusterFailsNamingTheOverride(t *testing.T) {
	forEachHelm(t, testUnservedClusterFailsNamingTheOverride)
}

func testUnservedClusterFailsNamingTheOverride(t *testing.T, h *framework.Helm) {
	chart := chartCopy(t, nil)
	for _, cluster := range []string{"1.34.0", "1.39.0"} {
		t.Run(cluster, func(t *testing.T) {
			for _, tc := range []struct{ set, value string }{
				{"", "image.tag"},
				// With the image pinned, the helm test's kubectl has no line to
				// follow either.
				{"image.tag=v9.9.9", "tests.kubectlImage.tag"},
			} {
				args := []string{"template", release, chart, "--namespace", namespace, "--kube-version", cluster}
				if tc.set != "" {
					args = append(args, "--set", tc.set)
				}
				_, errOut, err := h.Run(args...)
				want := fmt.Sprintf("placement-scheduler supports Kubernetes 1.35 to 1.38 (build lines 1.35, 1.36, 1.37), not v%s: set %s to run another build", cluster, tc.value)
				if err == nil {
					t.Fatalf("Kubernetes %s with %q: rendered, want refused", cluster, tc.set)
				}
				// Helm's first line is "Error: execution error at (<template>):
				// <our message>"; a hint of Helm's own may follow.
				if first, _, _ := strings.Cut(errOut, "\n"); !strings.HasPrefix(first, "Error: ") || !strings.HasSuffix(first, want) {
					t.Errorf("Kubernetes %s with %q: error\n%s\nwant a first line ending %q", cluster, tc.set, errOut, want)
				}
			}
			out, errOut, err := h.Run("template", release, chart, "--namespace", namespace, "--kube-version", cluster,
				"--set", "image.tag=v9.9.9,tests.kubectlImage.tag=v1.30.0")
			if err != nil {
				t.Fatalf("Kubernetes %s with both images pinned: %v\n%s", cluster, err, errOut)
			}
			objs, err := framework.DecodeObjects([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantImages(repository+":v9.9.9", "registry.k8s.io/kubectl:v1.30.0"), images(t, objs)); diff != "" {
				t.Errorf("Kubernetes %s with both images pinned (-want +got):\n%s", cluster, diff)
			}
		})
	}
}

// kubeVersionProbe reports the line the chart picks for each of versions,
// given as Capabilities.KubeVersion's Major, Minor and Version (as a
// cluster's discovery reports them, Minor "36+" included), and the chart's
// list of lines.
func kubeVersionProbe(t *testing.T, h *framework.Helm, versions [][3]string) (lines map[string]string, picked []string) {
	t.Helper()
	var probe strings.Builder
	probe.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: line-probe}\ndata:\n")
	probe.WriteString("  lines: {{ include \"placement-scheduler.k8sLines\" . | quote }}\n")
	for i, v := range versions {
		fmt.Fprintf(&probe, "  v%d: {{ include \"placement-scheduler.k8sLine\" (dict \"Capabilities\" (dict \"KubeVersion\" (dict \"Major\" %q \"Minor\" %q \"Version\" %q))) | quote }}\n", i, v[0], v[1], v[2])
	}
	chart := chartCopy(t, map[string]string{"line-probe.yaml": probe.String()})
	data := probeData(t, h, chart, "line-probe.yaml", "--kube-version", newestLineCluster)
	if err := json.Unmarshal([]byte(data["lines"]), &lines); err != nil {
		t.Fatalf("placement-scheduler.k8sLines: %v", err)
	}
	for i := range versions {
		picked = append(picked, data[fmt.Sprintf("v%d", i)])
	}
	return lines, picked
}

// The line for what a cluster reports: managed clusters' Minor "36+" and
// GitVersion suffixes count as their minor; another major or an unparsable
// minor has no line.
func TestLineFromReportedVersion(t *testing.T) { forEachHelm(t, testLineFromReportedVersion) }

func testLineFromReportedVersion(t *testing.T, h *framework.Helm) {
	for _, tc := range []struct {
		major, minor, version, line string
	}{
		{"1", "35", "v1.35.1", "35"},
		{"1", "36+", "v1.36.2-gke.1245000", "36"},
		{"1", "37+", "v1.37.0-eks-1234abcd", "37"},
		{"1", "38+", "v1.38.3-gke.100", "37"},
		{"1", "34+", "v1.34.9-gke.1", ""},
		{"1", "39", "v1.39.0", ""},
		{"2", "36", "v2.36.0", ""},
		{"1", "", "v1.36.0", ""},
		{"", "", "v0.0.0-master", ""},
	} {
		_, picked := kubeVersionProbe(t, h, [][3]string{{tc.major, tc.minor, tc.version}})
		if picked[0] != tc.line {
			t.Errorf("Major %q Minor %q (%s): line %q, want %q", tc.major, tc.minor, tc.version, picked[0], tc.line)
		}
	}
}

// Chart.yaml's kubeVersion admits exactly the minors a line serves (the
// templates' guard and Helm's agree), and the chart's lines are the
// project's: the newest is go.mod's k8s.io/kubernetes, every other one a
// lines/k8s-1.<minor> workspace, each at the Kubernetes release the chart
// gives the helm test's kubectl.
func TestLinesAreTheBuilds(t *testing.T) { forEachHelm(t, testLinesAreTheBuilds) }

func testLinesAreTheBuilds(t *testing.T, h *framework.Helm) {
	var versions [][3]string
	for minor := 30; minor <= 45; minor++ {
		versions = append(versions, [3]string{"1", fmt.Sprint(minor), fmt.Sprintf("v1.%d.0", minor)})
	}
	lines, picked := kubeVersionProbe(t, h, versions)
	for i, v := range versions {
		_, _, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--kube-version", v[2],
			"--set", "image.tag=v9.9.9,tests.kubectlImage.tag=v9.9.9")
		if admitted := err == nil; admitted != (picked[i] != "") {
			t.Errorf("Kubernetes %s: Chart.yaml's kubeVersion admits it: %v; the templates' line: %q", v[2], admitted, picked[i])
		}
	}

	root := filepath.Join(framework.ChartDir(t), "..", "..")
	want := map[string]string{}
	pinned := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (?:=> k8s\.io/kubernetes )?(v1\.(\d+)\.\d+)$`)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := pinned.FindSubmatch(gomod)
	if m == nil {
		t.Fatal("go.mod pins no k8s.io/kubernetes release")
	}
	want[string(m[2])] = string(m[1])
	workspaces, err := filepath.Glob(filepath.Join(root, "lines", "k8s-1.*", "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workspaces {
		b, err := os.ReadFile(w)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Base(filepath.Dir(w))
		m := pinned.FindSubmatch(b)
		if m == nil || "k8s-1."+string(m[2]) != dir {
			t.Fatalf("%s does not replace k8s.io/kubernetes with a release of its minor", w)
		}
		want[string(m[2])] = string(m[1])
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("the chart's build lines (templates/_helpers.tpl, placement-scheduler.k8sLines) drifted from go.mod and lines/ (-builds +chart):\n%s", diff)
	}
}

// Each line's default install is its kustomization's: on a cluster of the
// line's minor the chart renders what `kubectl apply -k` of that line's
// folder does (manifests/ for the newest, manifests/lines/k8s-1.<minor>/ for
// an older one), its image and profile included; the chart's files/ copy of
// the line's scheduler-config.yaml is the manifests' one byte for byte; and
// an image tag naming a line brings that line's profile whatever the
// cluster's.
func TestEachLineInstallsItsKustomization(t *testing.T) {
	forEachHelm(t, testEachLineInstallsItsKustomization)
}

func testEachLineInstallsItsKustomization(t *testing.T, h *framework.Helm) {
	lines, _ := kubeVersionProbe(t, h, nil)
	minors := slices.Sorted(maps.Keys(lines))
	newest := minors[len(minors)-1]
	dir := func(minor string) string {
		if minor == newest {
			return "."
		}
		return "lines/k8s-1." + minor
	}
	for _, minor := range minors {
		t.Run("1."+minor, func(t *testing.T) {
			shipped, err := fs.ReadFile(manifests.Files(), path.Join(dir(minor), "scheduler-config.yaml"))
			if err != nil {
				t.Fatalf("line 1.%s has no scheduler-config.yaml in manifests/: %v", minor, err)
			}
			copied, err := os.ReadFile(filepath.Join(framework.ChartDir(t), "files", "scheduler-config-k8s1."+minor+".yaml"))
			if err != nil {
				t.Fatalf("line 1.%s: %v", minor, err)
			}
			if diff := cmp.Diff(string(shipped), string(copied)); diff != "" {
				t.Errorf("the chart's files/scheduler-config-k8s1.%s.yaml drifted from manifests/%s/scheduler-config.yaml (-manifests +chart):\n%s", minor, dir(minor), diff)
			}
			compareInstalls(t, renderKustomize(t, dir(minor)), render(t, h, "--kube-version", lines[minor]), "Namespace")
		})
	}
	t.Run("image tag names the line", func(t *testing.T) {
		oldest := minors[0]
		want := normalize(t, renderKustomize(t, dir(oldest)))
		got := normalize(t, render(t, h, "--kube-version", lines[newest], "--set", "image.tag="+appVersion(t)+"-k8s1."+oldest))
		for k, w := range want {
			if w.GetKind() != "ConfigMap" {
				continue
			}
			if diff := cmp.Diff(w.Object["data"], got[k].Object["data"]); diff != "" {
				t.Errorf("a 1.%s image on a 1.%s cluster: the config is not the 1.%s line's (-want +got):\n%s", oldest, newest, oldest, diff)
			}
		}
	})
}

// helmDefaultLine returns the Kubernetes version h renders for without a
// cluster and without --kube-version (its .Capabilities default: Helm 4's
// client-go's, Helm 3's as its build stamps it), and the line the chart
// picks for it ("" for none).
func helmDefaultLine(t *testing.T, h *framework.Helm) (version, line string) {
	t.Helper()
	probe := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-probe}\ndata:\n" +
		"  version: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
		"  line: {{ include \"placement-scheduler.k8sLine\" . | quote }}\n"
	chart := chartCopy(t, map[string]string{"kube-probe.yaml": probe})
	data := probeData(t, h, chart, "kube-probe.yaml", "--set", "image.tag=v9.9.9,tests.kubectlImage.tag=v9.9.9")
	if data["version"] == "" {
		t.Fatalf("the probe found no Kubernetes version: %v", data)
	}
	return data["version"], data["line"]
}

// `helm template` without --kube-version (and without a cluster) renders
// for the helm binary's own Kubernetes version, as Helm documents: with
// Helm 4 (its client-go's) and Helm 3 (stamped as its releases are) that
// version has a line, so the render works and deploys that line, exactly
// what --kube-version <that version> renders. A version no line serves
// (what an unstamped Helm 3 reports, v1.20.0) fails in one line, by
// Chart.yaml's kubeVersion, before anything renders.
func TestTemplateWithoutKubeVersion(t *testing.T) { forEachHelm(t, testTemplateWithoutKubeVersion) }

func testTemplateWithoutKubeVersion(t *testing.T, h *framework.Helm) {
	version, line := helmDefaultLine(t, h)
	if line == "" {
		t.Fatalf("this helm renders for Kubernetes %s without --kube-version, which no line serves (build it with make)", version)
	}
	out, errOut, err := h.Run("template", release, framework.ChartDir(t), "--namespace", namespace)
	if err != nil {
		t.Fatalf("helm template without --kube-version (Kubernetes %s): %v\n%s", version, err, errOut)
	}
	objs, err := framework.DecodeObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	got := images(t, objs)
	if want := repository + ":" + appVersion(t) + "-k8s1." + line; got["Deployment/"+release] != want {
		t.Errorf("without --kube-version (Kubernetes %s): image %s, want %s", version, got["Deployment/"+release], want)
	}
	if diff := cmp.Diff(images(t, renderAll(t, h, "--kube-version", version)), got); diff != "" {
		t.Errorf("without --kube-version, not what --kube-version %s renders (-with +without):\n%s", version, diff)
	}

	_, errOut, err = h.Run("template", release, framework.ChartDir(t), "--namespace", namespace, "--kube-version", "v1.20.0")
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if err == nil || !strings.HasPrefix(lines[0], "Error: chart requires kubeVersion: >=1.35.0-0 <1.39.0-0 which is incompatible with Kubernetes v1.20.0") {
		t.Errorf("Kubernetes v1.20.0: %v, want one line naming kubeVersion's range:\n%s", err, errOut)
	}
}

package release

// The publishing round trip: hack/publish (what `make publish` runs) pushes
// the release's image indexes and chart to a registry, here
// go-containerregistry's in-process one on loopback; the test pulls them
// back, then installs the chart from oci:// into each line's own
// kube-apiserver and checks the chart deployed that line's image. And the
// krew index path: `krew install` from an index (a local git repository)
// whose manifest points at the release's archives served over HTTP.

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// published is a release under test for publishing: its directory,
// version and Kubernetes lines, oldest first.
type published struct {
	dist, version, root string
	lines               []string
}

// newest is the line krew installs and an unpinned cluster past every line runs.
func (p *published) newest() string { return p.lines[len(p.lines)-1] }

func (p *published) indexTar(line string) string {
	return filepath.Join(p.dist, "placement-scheduler-"+p.version+"-k8s"+line+"-image-index.tar")
}

// loadPublished is the release under test (load) as publishing sees it:
// its directory, version, the repository root and the lines' minors.
func loadPublished(t *testing.T) *published {
	t.Helper()
	r := load(t)
	p := &published{dist: r.dist, version: r.version, root: filepath.Dir(r.bin)}
	for _, l := range r.lines {
		p.lines = append(p.lines, l.minor)
	}
	return p
}

// publishExec runs name with args and env added to the test's, failing the
// test with its output if it fails; it returns stdout.
func publishExec(t *testing.T, env []string, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

// toolBin is a binary `make helm krew` builds into bin/, or env's value.
func (p *published) toolBin(t *testing.T, env, base, target string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		bin = filepath.Join(p.root, "bin", base)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no %s: run `make %s`: %v", base, target, err)
	}
	return bin
}

// tarIndexDigest is the digest index.json of an OCI layout tarball names
// for its one image index, read straight from the tar.
func tarIndexDigest(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no index.json", file)
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Digest string `json:"digest"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			t.Fatalf("%s: index.json: %v", file, err)
		}
		if len(index.Manifests) != 1 {
			t.Fatalf("%s: index.json names %d manifests, want the one image index", file, len(index.Manifests))
		}
		return index.Manifests[0].Digest
	}
}

// TestRegistryRoundTrip: hack/publish pushes every line's image index and
// the chart to an in-process registry and lists what it pushed; each index
// pulls back whole with the tarball's digest; then, for every line, the
// chart installed from oci:// into that line's kube-apiserver deploys only
// images whose tag resolves to the digest pushed for that line: the chart's
// pick of the line from the cluster's version, against real registries and
// real apiservers.
func TestRegistryRoundTrip(t *testing.T) {
	p := loadPublished(t)
	// It starts every line's kube-apiserver, which a tag's workflow does not
	// build (it publishes to the real registry right after): make
	// test-release, which builds them, asks for it.
	if os.Getenv("RELEASE_ROUNDTRIP") == "" {
		t.Skip("RELEASE_ROUNDTRIP is not set: `make test-release` runs the round trip, with every line's control plane built")
	}
	helm := p.toolBin(t, "PLACEMENT_HELM", "helm", "helm")
	tmp := t.TempDir()

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/placement-scheduler"

	// The workflow's code path: hack/publish as `make publish` runs it,
	// with its own Helm and docker configuration (no credentials).
	publish := filepath.Join(tmp, "publish")
	publishExec(t, nil, p.root, "go", "build", "-o", publish, "./hack/publish")
	helmEnv := []string{
		"HELM_CONFIG_HOME=" + filepath.Join(tmp, "helm", "config"),
		"HELM_CACHE_HOME=" + filepath.Join(tmp, "helm", "cache"),
		"HELM_DATA_HOME=" + filepath.Join(tmp, "helm", "data"),
		"DOCKER_CONFIG=" + filepath.Join(tmp, "docker"),
	}
	out := filepath.Join(tmp, "published.txt")
	stdout := publishExec(t, helmEnv, p.root, publish, "-dist", p.dist, "-version", p.version,
		"-lines", strings.Join(p.lines, " "), "-registry", reg, "-out", out, "-helm", helm, "-plain-http")
	listed := readFile(t, out)
	if stdout != string(listed) {
		t.Errorf("publish printed\n%s\nbut wrote to %s\n%s", stdout, out, listed)
	}
	pushed := map[string]string{} // ref -> digest
	for _, l := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		ref, digest, ok := strings.Cut(l, "@")
		if !ok || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
			t.Fatalf("%s: %q is not <ref>@sha256:<hex>", out, l)
		}
		pushed[ref] = digest
	}
	if len(pushed) != len(p.lines)+1 {
		t.Errorf("%s lists %d references, want %d (an image index per line %v and the chart):\n%s", out, len(pushed), len(p.lines)+1, p.lines, listed)
	}

	lineDigest := map[string]string{}
	for _, line := range p.lines {
		ref := reg + "/placement-scheduler:" + p.version + "-k8s" + line
		want := tarIndexDigest(t, p.indexTar(line))
		if pushed[ref] != want {
			t.Errorf("%s: published as %q, want the tarball's index %s", ref, pushed[ref], want)
		}
		tag, err := name.NewTag(ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(tag)
		if err != nil {
			t.Fatalf("pulling %s: %v", ref, err)
		}
		if got, err := idx.Digest(); err != nil || got.String() != want {
			t.Errorf("%s pulls back as %v (%v), want %s", ref, got, err, want)
		}
		// Every manifest, config and layer, pulled and checked against its digest.
		if err := validate.Index(idx); err != nil {
			t.Errorf("%s pulled back broken: %v", ref, err)
		}
		for other, d := range lineDigest {
			if d == want {
				t.Fatalf("lines %s and %s have the same image index %s: the per-line check below could not tell them apart", other, line, d)
			}
		}
		lineDigest[line] = want
	}
	chartVersion := strings.TrimPrefix(p.version, "v")
	chartRef := reg + "/charts/placement-scheduler:" + chartVersion
	chartTag, err := name.NewTag(chartRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if desc, err := remote.Head(chartTag); err != nil {
		t.Errorf("chart %s: %v", chartRef, err)
	} else if pushed[chartRef] != desc.Digest.String() {
		t.Errorf("chart %s: published as %q, the registry has %s", chartRef, pushed[chartRef], desc.Digest)
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, line := range p.lines {
		t.Run("k8s"+line, func(t *testing.T) {
			kubeconfig, client := p.startAPIServer(t, line)
			ns := "publish-k8s" + strings.ReplaceAll(line, ".", "-")
			helmRun := func(args ...string) string {
				return publishExec(t, helmEnv, tmp, helm, append(args, "--namespace", ns, "--kubeconfig", kubeconfig)...)
			}
			helmRun("install", "placement-scheduler", "oci://"+reg+"/charts/placement-scheduler", "--version", chartVersion,
				"--plain-http", "--create-namespace", "--set", "image.repository="+reg+"/placement-scheduler")

			var want []string
			for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(helmRun("get", "manifest", "placement-scheduler"), -1) {
				var obj struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				}
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Fatalf("helm get manifest: %v\n%s", err, doc)
				}
				if obj.Kind == "Deployment" {
					want = append(want, obj.Metadata.Name)
				}
			}
			deps, err := client.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range deps.Items {
				got = append(got, d.Name)
				spec := d.Spec.Template.Spec
				for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
					ref, err := name.ParseReference(c.Image, name.Insecure)
					if err != nil {
						t.Errorf("Deployment %s, container %s: image %q: %v", d.Name, c.Name, c.Image, err)
						continue
					}
					desc, err := remote.Head(ref)
					if err != nil {
						t.Errorf("Deployment %s, container %s: image %s does not resolve in the registry: %v", d.Name, c.Name, c.Image, err)
						continue
					}
					if desc.Digest.String() != lineDigest[line] {
						t.Errorf("Deployment %s, container %s on a %s cluster: image %s is %s, want line %s's index %s",
							d.Name, c.Name, line, c.Image, desc.Digest, line, lineDigest[line])
					}
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("Deployments in %s: %v, want the chart's %v (at least one)", ns, got, want)
			}
			if !t.Failed() {
				t.Logf("line %s: Deployments %v run its index %s", line, got, lineDigest[line])
			}
		})
	}
}

// startAPIServer starts line's etcd and kube-apiserver (bin/ for the newest
// line, bin/k8s-<line>/ for an older one; `make controlplane-envtest
// K8S=<line>` builds them) and returns an admin kubeconfig and client. It
// checks the apiserver reports the line's minor: that version is what the
// chart picks the image by.
func (p *published) startAPIServer(t *testing.T, line string) (string, kubernetes.Interface) {
	t.Helper()
	assets := filepath.Join(p.root, "bin")
	if line != p.newest() {
		assets = filepath.Join(assets, "k8s-"+line)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			t.Fatalf("no %s for line %s: run `make controlplane-envtest K8S=%s`: %v", bin, line, line, err)
		}
	}
	// The paths, not only the directory: KUBEBUILDER_ASSETS (the newest
	// line's, as the Makefile exports it) would win over the directory.
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	env.ControlPlane.GetAPIServer().Path = filepath.Join(assets, "kube-apiserver")
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd")}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting line %s's etcd and kube-apiserver from %s: %v", line, assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping line %s's control plane: %v", line, err)
		}
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Major + "." + strings.TrimSuffix(v.Minor, "+"); got != line {
		t.Fatalf("the apiserver in %s is %s (%s), want line %s", assets, got, v.GitVersion, line)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, client
}

// TestKrewIndex installs the plugin the way users do, from a krew index:
// a git repository holding plugins/placement.yaml, the release's manifest
// with its download URLs pointed at an HTTP server of the release's files.
// krew clones the index, downloads the host's archive, checks its sha256
// and links the binary, which must be the newest line's build of this
// version.
func TestKrewIndex(t *testing.T) {
	p := loadPublished(t)
	krew := p.toolBin(t, "", "krew", "krew")
	tmp := t.TempDir()

	srv := httptest.NewServer(http.FileServer(http.Dir(p.dist)))
	t.Cleanup(srv.Close)
	var m map[string]any
	if err := yaml.Unmarshal(readFile(t, filepath.Join(p.dist, "placement.yaml")), &m); err != nil {
		t.Fatalf("placement.yaml: %v", err)
	}
	spec, _ := m["spec"].(map[string]any)
	platforms, _ := spec["platforms"].([]any)
	if len(platforms) == 0 {
		t.Fatal("placement.yaml has no spec.platforms")
	}
	for _, pl := range platforms {
		pm, _ := pl.(map[string]any)
		uri, _ := pm["uri"].(string)
		archive := path.Base(uri)
		if _, err := os.Stat(filepath.Join(p.dist, archive)); err != nil {
			t.Fatalf("placement.yaml's %s names no file of the release: %v", uri, err)
		}
		pm["uri"] = srv.URL + "/" + archive
	}
	manifest, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}

	index := filepath.Join(tmp, "index")
	if err := os.MkdirAll(filepath.Join(index, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, "plugins", "placement.yaml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(tmp, "home")
	gitEnv := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=release test", "GIT_AUTHOR_EMAIL=release-test@example.invalid",
		"GIT_COMMITTER_NAME=release test", "GIT_COMMITTER_EMAIL=release-test@example.invalid"}
	publishExec(t, gitEnv, index, "git", "init", "-q", "-b", "master")
	publishExec(t, gitEnv, index, "git", "add", "plugins/placement.yaml")
	publishExec(t, gitEnv, index, "git", "commit", "-q", "-m", "placement")

	root := filepath.Join(tmp, "krew")
	krewEnv := append(gitEnv, "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1")
	publishExec(t, krewEnv, tmp, krew, "index", "add", "local", index)
	// --no-update-index: krew would otherwise fetch its default index too.
	publishExec(t, krewEnv, tmp, krew, "install", "--no-update-index", "local/placement")

	plugin := filepath.Join(root, "bin", "kubectl-placement")
	version := publishExec(t, nil, tmp, plugin, "version")
	if want := fmt.Sprintf("kubectl-placement %s (Kubernetes %s line,", p.version, p.newest()); !strings.HasPrefix(version, want) {
		t.Errorf("the plugin krew installed from the index says %q, want it to start %q", version, want)
	}
	var info map[string]string
	if err := json.Unmarshal([]byte(publishExec(t, nil, tmp, plugin, "version", "-o", "json")), &info); err != nil {
		t.Fatalf("version -o json: %v", err)
	}
	if info["version"] != p.version || info["kubernetesLine"] != p.newest() {
		t.Errorf("version -o json: %v, want version %s, kubernetesLine %s", info, p.version, p.newest())
	}
}

package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// HelmEnv names the helm binary; `make` sets it to bin/helm, which
// `make helm` builds from tools/helm/go.mod.
const HelmEnv = "PLACEMENT_HELM"

// Helm3Env names the Helm 3 binary the chart is also checked with; `make`
// sets it to bin/helm3, which `make helm3` builds from tools/helm3/go.mod.
const Helm3Env = "PLACEMENT_HELM3"

// Helm runs a helm binary built from tools/helm (or tools/helm3), isolated from the
// user's own Helm configuration, cache and repositories.
type Helm struct {
	binary string
	home   string // HELM_CONFIG_HOME, HELM_CACHE_HOME and HELM_DATA_HOME live here
}

// FindHelm returns a Helm for $PLACEMENT_HELM, else the module's bin/helm,
// keeping Helm's state under home; or an error saying how to build it.
func FindHelm(home string) (*Helm, error) {
	return findHelm(HelmEnv, "helm", home)
}

// FindHelm3 is FindHelm for Helm 3: $PLACEMENT_HELM3, else bin/helm3.
func FindHelm3(home string) (*Helm, error) {
	return findHelm(Helm3Env, "helm3", home)
}

// findHelm returns a Helm for $env, else the module's bin/<name>.
func findHelm(env, name, home string) (*Helm, error) {
	bin := os.Getenv(env)
	if bin == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, fmt.Errorf("%s is not set and the module root is unknown: %w", env, err)
		}
		bin = filepath.Join(root, "bin", name)
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no %s binary (run `make %s` or set %s): %w", name, name, env, err)
	}
	return &Helm{binary: bin, home: home}, nil
}

// Run runs helm with args and returns its stdout and stderr.
func (h *Helm) Run(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(h.binary, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// ChartDir is charts/placement-scheduler in this module (a chart is a
// directory helm reads, so it is not embedded the way manifests/ is).
func ChartDir(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "charts", "placement-scheduler")
}

// MustHelm runs helm as admin against the control plane and fails the test
// if it fails. It returns stdout.
func (e *Env) MustHelm(t testing.TB, args ...string) string {
	t.Helper()
	h, err := FindHelm(filepath.Join(e.dir, "helm"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := h.Run(append(args, "--kubeconfig", e.Kubeconfig)...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// InstallChart runs `helm install` of chart as release Name into Namespace
// (which Start created, so the chart must not render it: its default,
// namespace.create=false) with args (--set ...), and `helm uninstall` when
// the test ends, deleting the lease too if the test's schedulers created it.
// Installed as Name, the chart names its objects as the kustomize base does.
func (e *Env) InstallChart(t testing.TB, chart string, args ...string) *Installation {
	t.Helper()
	e.removeLeaseAtEnd(t)
	e.MustHelm(t, append([]string{"install", Name, chart, "--namespace", Namespace}, args...)...)
	t.Cleanup(func() {
		h, err := FindHelm(filepath.Join(e.dir, "helm"))
		if err == nil {
			var out, errOut string
			if out, errOut, err = h.Run("uninstall", Name, "--namespace", Namespace, "--kubeconfig", e.Kubeconfig); err != nil {
				err = fmt.Errorf("%w\n%s%s", err, out, errOut)
			}
		}
		if err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
	})
	objs, err := DecodeObjects([]byte(e.MustHelm(t, "get", "manifest", Name, "--namespace", Namespace)))
	if err != nil {
		t.Fatalf("decoding helm get manifest: %v", err)
	}
	return e.readInstallation(t, chart, objs)
}

// DecodeObjects decodes a multi-document YAML stream of Kubernetes objects
// (kustomize's or helm's output), skipping empty documents.
func DecodeObjects(stream []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// KubernetesVersion is the k8s.io/kubernetes release this build's line is
// built from (go.mod's for the newest line, the replace in the line's
// go.work for an older one), read as the Makefile reads it: `go list -m`
// in the test's environment, whose GOWORK selects the line. It is the
// version the line's stamped control plane reports.
func KubernetesVersion(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}", "k8s.io/kubernetes").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -m k8s.io/kubernetes: %v\n%s", err, stderr)
	}
	return strings.TrimSpace(string(out))
}

package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// HelmEnv names the helm binary the tests drive; `make` sets it to bin/helm,
// which `make helm` builds from tools/helm/go.mod.
const HelmEnv = "PLACEMENT_HELM"

// Helm runs the helm binary built from tools/helm, isolated from the
// user's own Helm configuration, cache and repositories.
type Helm struct {
	Binary string
	Home   string // HELM_CONFIG_HOME, HELM_CACHE_HOME and HELM_DATA_HOME live here
}

// FindHelm returns a Helm for $PLACEMENT_HELM or repoRoot/bin/helm, keeping
// its state under home, or an error saying how to build it.
func FindHelm(repoRoot, home string) (*Helm, error) {
	bin := os.Getenv(HelmEnv)
	if bin == "" {
		bin = filepath.Join(repoRoot, "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("no helm binary at %s (set %s or run `make helm`): %w", bin, HelmEnv, err)
	}
	return &Helm{Binary: bin, Home: home}, nil
}

// Run runs helm with args and returns its stdout and stderr.
func (h *Helm) Run(args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(h.Binary, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(h.Home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(h.Home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.Home, "data"),
	)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// DecodeObjects decodes a multi-document YAML stream of Kubernetes objects
// (kubectl kustomize's or helm template's output), skipping empty documents.
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

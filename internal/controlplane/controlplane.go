// Package controlplane starts a local etcd and kube-apiserver for `make run`
// and the integration tests. It is a thin layer over controller-runtime's
// envtest: the binaries come from our own module graph (built into bin/ by
// `make controlplane`), never from a download.
package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// AssetsEnv names the directory holding kube-apiserver and etcd, as envtest
// and setup-envtest spell it.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// ControlPlane is a running etcd + kube-apiserver.
type ControlPlane struct {
	env *envtest.Environment
	// Config is an admin client config (system:masters).
	Config *rest.Config
	// KubeConfig is the same credentials as a kubeconfig file's bytes.
	KubeConfig []byte
}

// Start brings up etcd and kube-apiserver from the binaries in
// $KUBEBUILDER_ASSETS. The apiserver runs without the TaintNodesByCondition
// admission plugin: there is no node lifecycle controller here to remove the
// not-ready taint it puts on every new node, so nodes would never be
// schedulable.
func Start() (*ControlPlane, error) {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return nil, fmt.Errorf("%s is not set: run `make controlplane` and point it at bin/ (the Makefile's test and run targets do this)", AssetsEnv)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, fmt.Errorf("%s=%s has no %s (run `make controlplane`): %w", AssetsEnv, dir, bin, err)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	api := env.ControlPlane.GetAPIServer()
	api.Configure().
		Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", dir, err)
	}
	return &ControlPlane{env: env, Config: cfg, KubeConfig: env.KubeConfig}, nil
}

// WriteKubeconfig writes the admin kubeconfig to path (mode 0600).
func (c *ControlPlane) WriteKubeconfig(path string) error {
	if err := os.WriteFile(path, c.KubeConfig, 0o600); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (c *ControlPlane) Stop() error {
	if c == nil || c.env == nil {
		return errors.New("control plane not started")
	}
	return c.env.Stop()
}

// PointConfigAt returns a copy of a KubeSchedulerConfiguration document with
// clientConnection.kubeconfig set to kubeconfigPath. With --config,
// kube-scheduler ignores --kubeconfig, so running the shipped config outside
// a cluster means rewriting that one field; everything else stays as shipped.
func PointConfigAt(config []byte, kubeconfigPath string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("parsing scheduler config: %w", err)
	}
	cc, _ := doc["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfigPath
	doc["clientConnection"] = cc
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("writing scheduler config: %w", err)
	}
	return out, nil
}

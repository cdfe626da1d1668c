// Package integration runs the real placement-scheduler binary against a
// real kube-apiserver and etcd (envtest). One control plane serves the whole
// test binary; each test works in its own namespace and removes only what it
// created.
package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/controlplane"
)

// env is the state TestMain sets up for every test in this binary. It is
// written once before m.Run and only read afterwards.
var env struct {
	cp         *controlplane.ControlPlane
	client     kubernetes.Interface
	dir        string // scratch dir shared by the binary's tests
	kubeconfig string // admin kubeconfig for the control plane
	binary     string // placement-scheduler under test
	repoRoot   string
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "placement-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	env.dir = dir
	env.repoRoot, _ = filepath.Abs(filepath.Join("..", ".."))

	env.binary = os.Getenv("PLACEMENT_SCHEDULER_BIN")
	if env.binary == "" {
		// `go test ./test/integration` by hand: build the binary ourselves
		// rather than test something stale.
		env.binary = filepath.Join(dir, "placement-scheduler")
		build := exec.Command("go", "build", "-o", env.binary, "./cmd/scheduler")
		build.Dir = env.repoRoot
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building placement-scheduler:", err)
			return 1
		}
	}
	if os.Getenv(controlplane.AssetsEnv) == "" {
		if bin := filepath.Join(env.repoRoot, "bin"); fileExists(filepath.Join(bin, "kube-apiserver")) {
			os.Setenv(controlplane.AssetsEnv, bin)
		}
	}

	cp, err := controlplane.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	env.cp = cp
	env.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(env.kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.client, err = kubernetes.NewForConfig(cp.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The shipped config keeps its leader-election lease in the
	// placement-scheduler namespace, which an install creates.
	leaseNS := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "placement-scheduler"}}
	if _, err := env.client.CoreV1().Namespaces().Create(context.Background(), leaseNS, metav1.CreateOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "creating namespace placement-scheduler:", err)
		return 1
	}
	defer stopSharedScheduler()
	return m.Run()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

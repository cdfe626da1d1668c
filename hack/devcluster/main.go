// Command devcluster is what `make run` runs: a local etcd and kube-apiserver
// (the binaries `make controlplane` built from our module graph), a kubeconfig
// for them, and placement-scheduler running the shipped config against them.
// Ctrl-C stops the scheduler, then the control plane. No cluster needed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/controlplane"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	scheduler := flag.String("scheduler", "bin/placement-scheduler", "placement-scheduler binary")
	config := flag.String("config", "manifests/scheduler-config.yaml", "KubeSchedulerConfiguration to run")
	workDir := flag.String("dir", ".run", "where to write the kubeconfig and the scheduler config")
	flag.Parse()
	extraArgs := flag.Args() // passed through to placement-scheduler

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := filepath.Abs(*workDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	shipped, err := os.ReadFile(*config)
	if err != nil {
		return fmt.Errorf("reading scheduler config: %w", err)
	}

	fmt.Println("starting etcd and kube-apiserver ...")
	cp, err := controlplane.Start()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping kube-apiserver and etcd ...")
		if err := cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster: stopping control plane:", err)
		}
	}()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	cfg, err := controlplane.PointConfigAt(shipped, kubeconfig)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	// The shipped config keeps its leader-election lease in the
	// placement-scheduler namespace, which a cluster install creates.
	client, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "placement-scheduler"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace placement-scheduler: %w", err)
	}

	fmt.Printf(`
control plane is up: %s
point kubectl at it (make controlplane also built bin/kubectl):

    export KUBECONFIG=%s
    bin/kubectl apply -f manifests/examples/nodes.yaml
    bin/kubectl apply -f manifests/examples/pod.yaml
    bin/kubectl get pods -o wide

starting placement-scheduler (Ctrl-C stops everything) ...

`, cp.Config.Host, kubeconfig)

	args := append([]string{"--config", cfgPath}, extraArgs...)
	cmd := exec.Command(*scheduler, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", *scheduler, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// The scheduler exited by itself (bad config, lost lease, ...).
		return fmt.Errorf("placement-scheduler exited: %w", err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) {
				return err
			}
		}
		return nil
	}
}

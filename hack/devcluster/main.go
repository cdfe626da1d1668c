// Command devcluster is what `make run` runs: a local etcd and kube-apiserver
// (the binaries `make controlplane` built from our module graph), a kubeconfig
// for them, and placement-scheduler running the shipped config against them,
// all brought up by test/framework exactly as the integration tests do.
// Ctrl-C stops the scheduler, then the control plane. No cluster needed.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	scheduler := flag.String("scheduler", "bin/placement-scheduler", "placement-scheduler binary")
	config := flag.String("config", "", "KubeSchedulerConfiguration to run (default: the shipped manifests/scheduler-config.yaml)")
	dir := flag.String("dir", ".run", "where to write the kubeconfig, the scheduler config and its log")
	flag.Parse()
	extraArgs := flag.Args() // passed through to placement-scheduler, after ours

	var cfg []byte // nil: the shipped config
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return fmt.Errorf("-config: %w", err)
		}
		cfg = b
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Println("starting etcd and kube-apiserver ...")
	env, err := framework.Start(framework.Options{Dir: *dir, Binary: *scheduler})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping kube-apiserver and etcd ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster: stopping control plane:", err)
		}
	}()

	sched, err := env.LaunchScheduler(framework.SchedulerOptions{Name: "devcluster", Config: cfg, Args: extraArgs, Output: os.Stdout})
	if err != nil {
		return err
	}
	fmt.Printf(`
control plane is up: %s
placement-scheduler is starting, secure port %d (its output follows; Ctrl-C stops everything).
In another terminal (make controlplane also built bin/kubectl):

    export KUBECONFIG=%s
    bin/kubectl apply -f manifests/examples/nodes.yaml
    bin/kubectl apply -f manifests/examples/pod.yaml
    bin/kubectl get pods -o wide

`, env.Config.Host, sched.Port(), env.Kubeconfig)

	select {
	case <-sched.Done():
		// The scheduler exited by itself (bad config, lost lease, ...).
		return fmt.Errorf("placement-scheduler exited: %v", sched.Err())
	case <-ctx.Done():
		sched.Stop()
		return nil
	}
}

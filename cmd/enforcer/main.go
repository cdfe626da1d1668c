// Command placement-enforcer holds running pods to their own placement rules
// (RequiredDuringSchedulingRequiredDuringExecution) through the Eviction
// API, judged with placement-scheduler's plugins. See docs/enforcement.md.
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"

	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// Set by the Makefile with -ldflags -X.
var (
	version   = "v0.0.0-dev"
	gitCommit = "unknown"
	buildDate = "unknown"
)

func main() {
	fs := pflag.NewFlagSet("placement-enforcer", pflag.ExitOnError)
	klogFlags := goflag.NewFlagSet("klog", goflag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	printVersion := fs.Bool("version", false, "print the version and the Kubernetes line this build mirrors, then exit")
	configPath := fs.String("config", "", "the EnforcerConfiguration file (required)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; empty means in-cluster credentials")
	serving := enforcer.NewServingOptions()
	serving.AddFlags(fs)
	_ = fs.Parse(os.Args[1:])
	if *printVersion {
		// The Kubernetes release too, stamped into component-base as the
		// scheduler's is: the line alone does not say which patch judged.
		fmt.Printf("placement-enforcer %s (Kubernetes %s line, commit %s, built %s, Kubernetes %s, %s)\n",
			version, k8sline.Minor, gitCommit, buildDate, k8sversion.Get().GitVersion, runtime.Version())
		return
	}
	if err := run(*configPath, *kubeconfig, serving); err != nil {
		fmt.Fprintln(os.Stderr, "placement-enforcer:", err)
		os.Exit(1)
	}
}

func run(configPath, kubeconfig string, servingOptions *enforcer.ServingOptions) error {
	if configPath == "" {
		return fmt.Errorf("--config is required: the EnforcerConfiguration file")
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	cfg, err := enforcer.LoadConfig(data, configPath)
	if err != nil {
		return err
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	serving, err := servingOptions.Apply(kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	build := buildinfo.Info{Version: version, GitCommit: gitCommit, BuildDate: buildDate}
	return enforcer.Run(klog.NewContext(ctx, klog.Background()), cfg, restConfig, serving, build)
}

// Command placement-scheduler is kube-scheduler with placement-scheduler's
// plugins registered. Everything else (flags, leader election, secure serving,
// metrics, health) is upstream's app.NewSchedulerCommand.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	k8sversion "k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/schedulerapp"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Set by the Makefile with -ldflags -X. We do not stamp our version into
// k8s.io/component-base/version.gitVersion: that string is parsed as the
// binary's Kubernetes version and decides which feature gates exist, so it
// must stay the Kubernetes version we are built against.
var (
	version   = "v0.0.0-dev"
	gitCommit = "unknown"
	buildDate = "unknown"
)

func main() {
	// Upstream's /metrics serves legacyregistry, beside kube-scheduler's
	// own metrics and our plugins' (pkg/plugins.RegisterMetrics).
	buildinfo.Register(legacyregistry.MustRegister, plugins.MetricsNamespace, buildinfo.Info{Version: version, GitCommit: gitCommit, BuildDate: buildDate})
	command := app.NewSchedulerCommand(schedulerapp.Options()...)
	command.Use = "placement-scheduler"
	checkProfiles(command)
	interceptVersion(command)
	os.Exit(cli.Run(command))
}

// checkProfiles runs schedulerapp.CheckProfiles on the --config file before
// upstream's start-up, so that a profile kube-scheduler would accept but our
// plugins would silently misbehave in (ours and the in-tree plugin both
// enabled, args under the in-tree name) stops start-up with the fix.
func checkProfiles(command *cobra.Command) {
	inner := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
			if err := schedulerapp.CheckConfigFile(klog.Background(), f.Value.String()); err != nil {
				return err
			}
		}
		return inner(cmd, args)
	}
}

// interceptVersion makes --version report placement-scheduler's version (and
// the Kubernetes version it embeds) instead of upstream's "Kubernetes vX".
// Upstream prints and exits from inside RunE once flags are parsed, so we
// check the parsed flag first. --version=vX.Y.Z (override the reported
// Kubernetes version) is left to upstream.
func interceptVersion(command *cobra.Command) {
	inner := command.RunE
	command.RunE = func(cmd *cobra.Command, args []string) error {
		if f := cmd.Flags().Lookup("version"); f != nil && f.Changed {
			switch f.Value.String() {
			case "true":
				fmt.Printf("placement-scheduler %s (Kubernetes %s line, commit %s, built %s, kube-scheduler %s, %s)\n",
					version, k8sline.Minor, gitCommit, buildDate, k8sversion.Get().GitVersion, runtime.Version())
				return nil
			case "raw":
				out, _ := json.MarshalIndent(map[string]string{
					"version":        version,
					"kubernetesLine": k8sline.Minor,
					"gitCommit":      gitCommit,
					"buildDate":      buildDate,
					"kubeScheduler":  k8sversion.Get().GitVersion,
					"goVersion":      runtime.Version(),
				}, "", "  ")
				fmt.Println(string(out))
				return nil
			}
		}
		return inner(cmd, args)
	}
}

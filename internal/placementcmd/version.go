package placementcmd

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// BuildInfo is the release a binary was built as. cmd/kubectl-placement
// gets it from the Makefile's -ldflags -X, like the scheduler.
type BuildInfo = buildinfo.Info

// versionInfo is what `kubectl placement version` prints: the stamped
// release plus what the binary was compiled against, read from the module
// build info Go embeds (so it cannot drift from go.mod).
type versionInfo struct {
	BuildInfo
	// Kubernetes is the k8s.io/kubernetes module whose scheduler framework
	// explain runs; ClientGo the client the plugin talks to the apiserver with.
	Kubernetes string `json:"kubernetes"`
	// Line is the Kubernetes minor this build's line mirrors
	// (docs/compatibility.md).
	Line      string `json:"kubernetesLine"`
	ClientGo  string `json:"clientGo"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// NewVersion returns `kubectl placement version`.
func NewVersion(streams genericiooptions.IOStreams, build BuildInfo) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the plugin's version, commit, build date and the Kubernetes version it was built against",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			info := versionInfo{
				BuildInfo:  build,
				Kubernetes: moduleVersion(bi, "k8s.io/kubernetes"),
				Line:       k8sline.Minor,
				ClientGo:   moduleVersion(bi, "k8s.io/client-go"),
				GoVersion:  runtime.Version(),
				Platform:   runtime.GOOS + "/" + runtime.GOARCH,
			}
			switch output {
			case "":
				_, err := fmt.Fprintf(streams.Out, "kubectl-placement %s (Kubernetes %s line, commit %s, built %s, Kubernetes %s, client-go %s, %s %s)\n",
					info.Version, info.Line, info.GitCommit, info.BuildDate, info.Kubernetes, info.ClientGo, info.GoVersion, info.Platform)
				return err
			case "json":
				out, err := json.MarshalIndent(info, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(streams.Out, "%s\n", out)
				return err
			case "yaml":
				out, err := yaml.Marshal(info)
				if err != nil {
					return err
				}
				_, err = streams.Out.Write(out)
				return err
			default:
				return fmt.Errorf("-o %q: want json or yaml (or no -o for one line)", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (default: one line)")
	return cmd
}

// moduleVersion is the version of module path (after replace directives)
// in a binary's build info, or "unknown" when Go recorded none (test
// binaries record no dependencies).
func moduleVersion(bi *debug.BuildInfo, path string) string {
	if bi == nil {
		return "unknown"
	}
	for _, dep := range bi.Deps {
		if dep.Path != path {
			continue
		}
		if dep.Replace != nil && dep.Replace.Version != "" {
			return dep.Replace.Version
		}
		return dep.Version
	}
	return "unknown"
}

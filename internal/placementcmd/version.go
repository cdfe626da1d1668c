package placementcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd/skew"
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
	// ServerVersion is the apiserver's git version, when it answered. A
	// string, as every other field, so that the output reads as a flat map.
	ServerVersion string `json:"serverVersion,omitempty"`
}

// serverTimeout bounds version's one request when --request-timeout does
// not: a version check should not hang on a cluster that does not answer.
const serverTimeout = 10 * time.Second

// newVersion returns `kubectl placement version`.
func newVersion(streams genericiooptions.IOStreams, build BuildInfo) *cobra.Command {
	var output string
	var clientOnly bool
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml] [--client]",
		Short: "Print the plugin's version, commit, build date, the Kubernetes version it was built against and the server's",
		Long: `Prints the plugin's release, the Kubernetes line it is built for (its
scheduler framework and client-go) and, unless --client, the apiserver's
version. When the server is not the one this build's line serves, a warning
on stderr names the release archive to use instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "", "json", "yaml":
			default:
				return fmt.Errorf("-o %q: want json or yaml (or no -o for text)", output)
			}
			bi, _ := debug.ReadBuildInfo()
			info := versionInfo{
				BuildInfo:  build,
				Kubernetes: moduleVersion(bi, "k8s.io/kubernetes"),
				Line:       k8sline.Minor,
				ClientGo:   moduleVersion(bi, "k8s.io/client-go"),
				GoVersion:  runtime.Version(),
				Platform:   runtime.GOOS + "/" + runtime.GOARCH,
			}
			server := "not asked (--client)"
			if !clientOnly {
				server = "not reached"
				if d, err := versionDiscovery(flags); err != nil {
					server += ": " + oneLine(err)
				} else if sv, err := d.ServerVersion(); err != nil {
					server += ": " + oneLine(err)
				} else {
					info.ServerVersion, server = sv.GitVersion, "Kubernetes "+sv.GitVersion
					warnSkewOf(streams.ErrOut, sv, build)
				}
			}
			switch output {
			case "":
				_, err := fmt.Fprintf(streams.Out, "kubectl-placement %s (Kubernetes %s line, commit %s, built %s, Kubernetes %s, client-go %s, %s %s)\nserver: %s\n",
					info.Version, info.Line, info.GitCommit, info.BuildDate, info.Kubernetes, info.ClientGo, info.GoVersion, info.Platform, server)
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
			}
			return nil
		},
	}
	flags.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml (default: text)")
	cmd.Flags().BoolVar(&clientOnly, "client", false, "The plugin's version only: do not ask the server")
	return cmd
}

// versionDiscovery is a discovery client for the kubeconfig flags, with
// serverTimeout unless --request-timeout gives one.
func versionDiscovery(flags *genericclioptions.ConfigFlags) (discovery.ServerVersionInterface, error) {
	rc, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	if rc.Timeout == 0 {
		rc.Timeout = serverTimeout
	}
	return discovery.NewDiscoveryClientForConfig(rc)
}

// warnSkew asks d for the server's version and prints, on w, the one-line
// warning when this build's line is not the one that serves it
// (internal/placementcmd/skew). A server that does not answer is no
// reason to warn, nor to fail: the verb reports what it could not read.
func warnSkew(w io.Writer, d discovery.ServerVersionInterface, build BuildInfo) {
	if sv, err := d.ServerVersion(); err == nil {
		warnSkewOf(w, sv, build)
	}
}

// warnSkewOf prints the warning for a server whose version is known.
func warnSkewOf(w io.Writer, server *apimachineryversion.Info, build BuildInfo) {
	if msg := skew.Decide(k8sline.Minor, k8sline.Lines(), server).Warning(build.Version, runtime.GOOS, runtime.GOARCH); msg != "" {
		fmt.Fprintln(w, msg)
	}
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
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

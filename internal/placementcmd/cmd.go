// Package placementcmd is the kubectl-placement command tree, on
// k8s.io/cli-runtime: the usual kubeconfig flags, read-only access.
package placementcmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// New returns the root command, `kubectl placement`, of the plugin
// released as build.
func New(streams genericiooptions.IOStreams, build BuildInfo) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-placement",
		Short:         "Explain placement-scheduler decisions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newExplain(streams, build, nil), newViolations(streams, build), newSimulate(streams, build, nil), newVersion(streams, build))
	setUpKubectlPlugin(root, streams)
	return root
}

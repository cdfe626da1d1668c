package placementcmd

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// displayName is how usage names the root command. kubectl runs the binary
// kubectl-placement as `kubectl placement`, and krew's plugin guide asks
// plugins to show the name users type.
const displayName = "kubectl placement"

// completionHelp comes first in `kubectl placement completion --help`: the
// scripts cobra generates complete the binary's own name (kubectl-placement),
// while `kubectl placement <TAB>` goes through kubectl itself.
const completionHelp = `Completion of "kubectl placement <TAB>" (kubectl 1.26 or later): put the
kubectl_complete-placement script shipped in the release archive (the .bat on
Windows) on your PATH, next to kubectl-placement. kubectl's own completion
then asks it for the plugin's words; nothing else to configure.

The scripts below complete the binary run directly as kubectl-placement.

`

// setUpKubectlPlugin names the root as users type it, sends cobra's own
// output (help, completion scripts) to the streams, and adds cobra's
// `completion bash|zsh|fish|powershell` command with the kubectl note. The
// output goes first: the completion command keeps the writer it finds.
func setUpKubectlPlugin(root *cobra.Command, streams genericiooptions.IOStreams) {
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = displayName
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Long = completionHelp + strings.TrimLeft(c.Long, "\n")
		}
	}
}

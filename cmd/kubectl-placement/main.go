// Command kubectl-placement is a kubectl plugin (`kubectl placement ...`,
// found on PATH) that explains placement-scheduler's decisions.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd"
)

// Set by the Makefile with -ldflags -X, as for the scheduler.
var (
	version   = "v0.0.0-dev"
	gitCommit = "unknown"
	buildDate = "unknown"
)

func main() {
	defer func() {
		// A bug must still end in one line, not a goroutine dump.
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "error: internal error (please report): %v\n", r)
			os.Exit(2)
		}
	}()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	cmd := placementcmd.New(streams, placementcmd.BuildInfo{Version: version, GitCommit: gitCommit, BuildDate: buildDate})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		// One line, no usage dump, no stack trace.
		fmt.Fprintln(os.Stderr, "error: "+strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

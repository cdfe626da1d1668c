package placementcmd

import (
	"strings"
	"testing"
)

// --fail-if-pending fails a drain kubectl would refuse (after writing the
// output), and passes once the flag kubectl asks for is given and the
// drain completes; kubectl's drain flags without a drain are bad input.
func TestSimulateDrainFailIfPending(t *testing.T) {
	args := []string{"simulate", "--drain", "node-1", "--from-file", "testdata/simulate/drain-with-pdb/cluster.json", "--fail-if-pending"}
	out, err := runCLI(t, "", args...)
	if err == nil || err.Error() != "--fail-if-pending: kubectl drain --ignore-daemonsets would not finish: refused" {
		t.Fatalf("error %v, want the refused drain", err)
	}
	if !strings.Contains(out, "refused: node-1: cannot delete Pods that declare no controller (use --force to override): default/debug") {
		t.Errorf("the refusal is not written before failing:\n%s", out)
	}
	out, err = runCLI(t, "", append(args, "--force")...)
	if err != nil {
		t.Fatalf("with --force: %v", err)
	}
	if !strings.Contains(out, "Drain (kubectl drain --ignore-daemonsets --force): node-1 cordoned; completes.") {
		t.Errorf("with --force, want the drain to complete:\n%s", out)
	}
	for _, flag := range []string{"--force", "--delete-emptydir-data"} {
		out, err := runCLI(t, "", "simulate", flag, "--from-file", "testdata/simulate/drain-with-pdb/cluster.json")
		if err == nil || !strings.Contains(err.Error(), "give --drain NODE or -l SELECTOR with them") || out != "" {
			t.Errorf("%s without --drain: error %v, output %q", flag, err, out)
		}
	}
}

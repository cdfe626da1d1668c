package placementcmd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

var update = flag.Bool("update", false, "rewrite testdata/*/*.golden from the current output")

// runCLI runs `kubectl placement` with args as the binary would.
func runCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := New(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestGolden explains each seed scenario's pod (testdata/<scenario>/pod.json)
// against its offline snapshot (cluster.json), with the scenario's
// config.yaml or else the shipped profile, and compares the table, wide
// and JSON outputs with the golden files. Run with -update to rewrite them,
// then read the diff: the goldens are the reviewed expectations.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 7 {
		t.Fatalf("found %d scenarios in testdata, want the 7 seed scenarios", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, format := range []string{"table", "wide", "json"} {
				args := []string{"explain", "-f", filepath.Join(dir, "pod.json"), "--from-file", filepath.Join(dir, "cluster.json"), "-o", format}
				if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
					args = append(args, "--config", filepath.Join(dir, "config.yaml"))
				}
				got, err := runCLI(t, "", args...)
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				golden := filepath.Join(dir, format+".golden")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./internal/placementcmd -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("%s output differs from %s (-want +got); if intended, rerun with -update:\n%s", format, golden, diff)
				}
			}
		})
	}
}

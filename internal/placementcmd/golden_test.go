package placementcmd

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

var update = flag.Bool("update", false, "rewrite testdata/*/*.golden from the current output")

// runCLI runs `kubectl placement` with args as the binary would.
func runCLI(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := New(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, BuildInfo{})
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// runExplainLive runs `kubectl placement explain args` against client
// instead of a kubeconfig's cluster.
func runExplainLive(t *testing.T, client kubernetes.Interface, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newExplain(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{},
		func() (kubernetes.Interface, error) { return client, nil })
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root
	cmd.SetArgs(args[1:])                            // the explain command itself, without the root
	err := cmd.Execute()
	return out.String(), err
}

// clusterScoped are the kinds explain lists that have no namespace.
var clusterScoped = sets.New("nodes", "namespaces", "persistentvolumes", "storageclasses", "csinodes",
	"csidrivers", "resourceslices", "deviceclasses", "priorityclasses")

// namespaceUser is a fake apiserver holding the objects of snapshot, as
// seen by a user whose rights are list on nodes and everything in
// namespace: like RBAC, it answers Forbidden to any other read.
func namespaceUser(t *testing.T, snapshot, namespace string) *fake.Clientset {
	t.Helper()
	f, err := os.Open(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := explain.DecodeObjects(f, snapshot)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // NewClientset needs apply configurations for every kind; nothing here applies
	client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		res := a.GetResource().Resource
		allowed := res == "nodes" && a.GetVerb() == "list" ||
			!clusterScoped.Has(res) && a.GetNamespace() == namespace && (a.GetVerb() == "list" || a.GetVerb() == "get")
		if allowed {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", fmt.Errorf("user %q cannot %s here", "team-user", a.GetVerb()))
	})
	return client
}

// TestGolden explains each seed scenario's pod (testdata/<scenario>/pod.json)
// against its offline snapshot (cluster.json), with the scenario's
// config.yaml or else the shipped profile, and compares the table, wide
// and JSON outputs with the golden files. Run with -update to rewrite them,
// then read the diff: the goldens are the reviewed expectations.
func TestGolden(t *testing.T) {
	pods, err := filepath.Glob("testdata/*/pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, p := range pods {
		dirs = append(dirs, filepath.Dir(p))
	}
	if len(dirs) < 12 {
		t.Fatalf("found %d scenarios in testdata, want the 7 seed scenarios and the 5 of resources, preemption and namespace-scoped reading", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			// A scenario with readable-namespace is read live, by a user
			// with rights in that namespace only.
			readable, err := os.ReadFile(filepath.Join(dir, "readable-namespace"))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			for _, format := range []string{"table", "wide", "json"} {
				args := []string{"explain", "-f", filepath.Join(dir, "pod.json"), "-o", format}
				if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
					args = append(args, "--config", filepath.Join(dir, "config.yaml"))
				}
				var got string
				if ns := strings.TrimSpace(string(readable)); ns != "" {
					got, err = runExplainLive(t, namespaceUser(t, filepath.Join(dir, "cluster.json"), ns), append(args, "-n", ns)...)
				} else {
					got, err = runCLI(t, "", append(args, "--from-file", filepath.Join(dir, "cluster.json"))...)
				}
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				checkGolden(t, filepath.Join(dir, format+".golden"), got)
			}
		})
	}
}

// checkGolden compares got with the golden file, or rewrites it with
// -update (then read the diff: the goldens are the reviewed expectations).
func checkGolden(t *testing.T, golden, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/placementcmd -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("output differs from %s (-want +got); if intended, rerun with -update:\n%s", golden, diff)
	}
}

// fileWriter returns a function writing test input files into a fresh
// temporary directory, returning each one's path.
func fileWriter(t *testing.T) func(name, body string) string {
	t.Helper()
	dir := t.TempDir()
	return func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

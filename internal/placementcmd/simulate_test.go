package placementcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// TestSimulateGolden runs each scenario of testdata/simulate (its args
// file: one argument a line) and compares the table and JSON outputs with
// the golden files; -update rewrites them (then read the diff).
func TestSimulateGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/simulate/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 4 {
		t.Fatalf("found %d simulate scenarios, want 4", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "args"))
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"simulate"}, strings.Split(strings.TrimSpace(string(raw)), "\n")...)
			for _, format := range []string{"table", "json"} {
				got, err := runCLI(t, "", append(args, "-o", format)...)
				if err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				checkGolden(t, filepath.Join(dir, format+".golden"), got)
			}
		})
	}
}

// The JSON output's contract: integer counts at the top level that add up
// to the replicas, each replica with a node or a reason.
func TestSimulateJSONContract(t *testing.T) {
	out, err := runCLI(t, "", "simulate", "-f", "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml",
		"--from-file", "testdata/zone-affinity-anti-affinity/cluster.json", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Placed, Pending, Preempting *int
		Replicas                    []struct{ Node, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Placed == nil || got.Pending == nil || got.Preempting == nil {
		t.Fatalf("placed, pending or preempting missing:\n%s", out)
	}
	if *got.Placed != 3 || *got.Pending != 2 || *got.Preempting != 0 || len(got.Replicas) != 5 {
		t.Errorf("placed %d pending %d preempting %d of %d, want 3, 2, 0 of 5", *got.Placed, *got.Pending, *got.Preempting, len(got.Replicas))
	}
	for i, r := range got.Replicas {
		if (r.Node == "") == (r.Reason == "") {
			t.Errorf("replica %d: node %q, reason %q: want exactly one", i, r.Node, r.Reason)
		}
	}
}

// --fail-if-pending: the output is written, then a one-line error (exit 1).
func TestSimulateFailIfPending(t *testing.T) {
	args := []string{"simulate", "-f", "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml",
		"--from-file", "testdata/zone-affinity-anti-affinity/cluster.json"}
	out, err := runCLI(t, "", append(args, "--fail-if-pending")...)
	if err == nil || !strings.Contains(err.Error(), "2 of 5 replica(s) would stay Pending") {
		t.Fatalf("error %v, want 2 of 5 Pending", err)
	}
	if !strings.Contains(out, "Placed 3, pending 2, would preempt 0.") {
		t.Errorf("the summary is not written before failing:\n%s", out)
	}
	// Everything fits once enough nodes like a-1 are added: no error.
	if _, err := runCLI(t, "", append(args, "--fail-if-pending", "--add-nodes", "2", "--like", "a-1")...); err != nil {
		t.Errorf("with two more nodes: %v", err)
	}
}

// A long run reports progress on stderr, never on stdout.
func TestSimulateProgress(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := newSimulateWith(&simulateOptions{
		explainOptions: explainOptions{flags: genericclioptions.NewConfigFlags(true),
			streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}},
		progressMin: 1, progressEvery: time.Nanosecond,
	})
	cmd.SetArgs([]string{"-f", "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml",
		"--from-file", "testdata/zone-affinity-anti-affinity/cluster.json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "simulate: 5/5 replicas placed or judged") {
		t.Errorf("stderr %q: want a progress line up to 5/5", errOut.String())
	}
	if strings.Contains(out.String(), "simulate: ") {
		t.Errorf("progress on stdout:\n%s", out.String())
	}
}

// Live, simulate only reads: every request it makes is a get or a list.
func TestSimulateOnlyReads(t *testing.T) {
	objs := decodeFile(t, "testdata/simulate/drain-with-pdb/cluster.json")
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // NewClientset needs apply configurations for every kind; nothing here applies
	var out, errOut bytes.Buffer
	cmd := newSimulate(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{},
		func() (kubernetes.Interface, error) { return client, nil })
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--drain", "node-1", "-f", "testdata/simulate/statefulset-by-hostname/workload.yaml", "-n", "default", "--add-nodes", "1", "--like", "node-2"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if len(client.Actions()) == 0 {
		t.Fatal("no request recorded")
	}
	for _, a := range client.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("simulate made a %s request on %s", v, a.GetResource().Resource)
		}
	}
	if !strings.Contains(out.String(), "Drain (kubectl drain --ignore-daemonsets): node-1 cordoned") {
		t.Errorf("output:\n%s", out.String())
	}
}

func decodeFile(t *testing.T, path string) []runtime.Object {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := explain.DecodeObjects(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestSimulateBadInput: each bad input fails before anything is placed,
// with an error naming the fix (main prints it on one line, exit 1).
func TestSimulateBadInput(t *testing.T) {
	write := fileWriter(t)
	snap := "testdata/simulate/drain-with-pdb/cluster.json"
	deploy := "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml"
	unknown := write("unknown.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
	service := write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n")
	empty := write("empty.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: hollow}\nspec: {replicas: 2}\n")
	otherNS := write("other.yaml", strings.Replace(mustRead(t, deploy), "namespace: default", "namespace: absent", 1))
	noNS := write("nons.json", `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}]}`)
	two := write("two.yaml", mustRead(t, deploy)+"\n---\n"+strings.Replace(mustRead(t, deploy), "name: api", "name: api2", 1))
	ds := write("ds.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: x}]}\n")
	notConfig := write("notconfig.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown kind", []string{"-f", unknown}, []string{unknown, "Widget"}},
		{"no pod template", []string{"-f", service}, []string{"kind Service has no pod template", "Deployment, StatefulSet"}},
		{"empty pod template", []string{"-f", empty}, []string{"Deployment/hollow", "no containers"}},
		{"drain of a missing node", []string{"--drain", "node-9"}, []string{"--drain node-9: no such node"}},
		{"drain selector matching nothing", []string{"-l", "pool=none"}, []string{"selector pool=none matches no node"}},
		{"snapshot without namespaces", []string{"-f", deploy, "--from-file", noNS}, []string{"no namespaces", "kubectl get nodes,pods,namespaces"}},
		{"namespace not in the cluster", []string{"-f", otherNS}, []string{`namespace "absent"`, "create it"}},
		{"bad taint", []string{"-f", deploy, "--taint", "node-1:k=v"}, []string{"effect must be NoSchedule, PreferNoSchedule or NoExecute"}},
		{"add-nodes without like", []string{"-f", deploy, "--add-nodes", "2"}, []string{"--add-nodes N and --like NODE go together"}},
		{"bad output", []string{"-f", deploy, "-o", "wide"}, []string{`-o "wide"`, "table, json or yaml"}},
		{"max-replicas without a workload", []string{"--max-replicas"}, []string{"--max-replicas", "-f"}},
		{"max-replicas with a drain", []string{"--max-replicas", "-f", deploy, "--drain", "node-1"}, []string{"drop --drain/-l"}},
		{"max-replicas with two workloads", []string{"--max-replicas", "-f", two}, []string{two, "one workload, the file has 2"}},
		{"max-replicas of a DaemonSet", []string{"--max-replicas", "-f", ds}, []string{ds, "DaemonSet runs one pod per node"}},
		{"max-replicas and a comparison", []string{"--max-replicas", "-f", deploy, "--compare-profile", "x"}, []string{"give one of them"}},
		{"max-replicas and fail-if-pending", []string{"--max-replicas", "-f", deploy, "--fail-if-pending"}, []string{"drop --fail-if-pending"}},
		{"negative limit", []string{"--max-replicas", "-f", deploy, "--max-replicas-limit", "-1"}, []string{"--max-replicas-limit -1", "0 (no limit)"}},
		{"compare-config missing", []string{"-f", deploy, "--compare-config", "absent.yaml"}, []string{"--compare-config", "absent.yaml"}},
		{"compare-config not a config", []string{"-f", deploy, "--compare-config", notConfig}, []string{"--compare-config " + notConfig, "KubeSchedulerConfiguration"}},
		{"compare-profile unknown", []string{"-f", deploy, "--compare-profile", "other"}, []string{`--profile "other": no such profile`}},
		{"compare-profile the same", []string{"-f", deploy, "--compare-profile", "placement-scheduler"}, []string{"--compare-profile placement-scheduler is the profile simulated", "name another"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"simulate"}, tc.args...)
			if !contains(tc.args, "--from-file") {
				args = append(args, "--from-file", snap)
			}
			out, err := runCLI(t, "", args...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if out != "" {
				t.Errorf("output written before the error:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// Live, a user who may not list namespaces is not refused for a workload's
// namespace that exists; one that does not exist is still an error.
func TestSimulateNamespaceNotListable(t *testing.T) {
	deploy := "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml"
	run := func(namespace string) error {
		client := fake.NewSimpleClientset(decodeFile(t, "testdata/zone-affinity-anti-affinity/cluster.json")...) //nolint:staticcheck // nothing here applies
		client.PrependReactor("list", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no list"))
		})
		var out bytes.Buffer
		cmd := newSimulate(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, BuildInfo{},
			func() (kubernetes.Interface, error) { return client, nil })
		cmd.SetArgs([]string{"-f", deploy, "-n", namespace})
		return cmd.Execute()
	}
	// The manifest's namespace is default; with -n elsewhere only
	// elsewhere is read, and default is asked for by name.
	if err := run("elsewhere"); err != nil {
		t.Errorf("workload in an existing namespace, namespaces not listable: %v", err)
	}
	deploy = fileWriter(t)("absent.yaml", strings.Replace(mustRead(t, deploy), "namespace: default", "namespace: absent", 1))
	if err := run("default"); err == nil || !strings.Contains(err.Error(), `namespace "absent"`) {
		t.Errorf("workload in a missing namespace: %v", err)
	}
}

// Files that create the workload's namespace, as `kubectl apply -f` of the
// same files would, are simulated as if it existed, with a note; the
// affinity terms then look in that new, empty namespace (their default),
// so the replicas that need a cache pod there stay Pending.
func TestSimulateNamespaceFromTheFiles(t *testing.T) {
	write := fileWriter(t)
	deploy := mustRead(t, "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml")
	withNS := write("with-ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh, labels: {team: a}}\n---\n"+
		strings.Replace(deploy, "namespace: default", "namespace: fresh", 1))
	out, err := runCLI(t, "", "simulate", "-f", withNS, "--from-file", "testdata/zone-affinity-anti-affinity/cluster.json", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Placed, Pending int
		Replicas        []struct{ Pod string }
		Notes           []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Replicas) != 5 || got.Placed != 0 || got.Pending != 5 {
		t.Errorf("placed %d, pending %d of %d replicas; want 0, 5 of 5 (no cache pod in namespace fresh)", got.Placed, got.Pending, len(got.Replicas))
	}
	for _, r := range got.Replicas {
		if !strings.HasPrefix(r.Pod, "fresh/") {
			t.Errorf("replica %s is not in namespace fresh", r.Pod)
		}
	}
	if !slices.ContainsFunc(got.Notes, func(n string) bool { return strings.Contains(n, "namespace fresh is created by the given files") }) {
		t.Errorf("no note on the namespace the files create: %q", got.Notes)
	}
	// A file of namespaces only has nothing to place.
	onlyNS := write("only-ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: fresh}\n")
	if _, err := runCLI(t, "", "simulate", "-f", onlyNS, "--from-file", "testdata/zone-affinity-anti-affinity/cluster.json"); err == nil || !strings.Contains(err.Error(), "only namespaces") {
		t.Errorf("namespaces only: error %v, want one saying so", err)
	}
}

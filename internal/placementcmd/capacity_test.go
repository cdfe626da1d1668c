package placementcmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSimulateCapacityAndCompareBadInput: --max-replicas and the
// comparison flags refuse what has no answer before anything is placed,
// in one line naming the fix.
func TestSimulateCapacityAndCompareBadInput(t *testing.T) {
	write := fileWriter(t)
	snap := "testdata/simulate/drain-with-pdb/cluster.json"
	deploy := "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml"
	two := write("two.yaml", mustRead(t, deploy)+"\n---\n"+strings.Replace(mustRead(t, deploy), "name: web", "name: web2", 1))
	ds := write("ds.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: default}\nspec:\n  selector: {matchLabels: {app: a}}\n  template:\n    metadata: {labels: {app: a}}\n    spec: {containers: [{name: c, image: x}]}\n")
	notConfig := write("notconfig.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
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
			args := append([]string{"simulate", "--from-file", snap}, tc.args...)
			out, err := runCLI(t, "", args...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if out != "" {
				t.Errorf("output written before the error:\n%s", out)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on several lines: %q", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// Live, --max-replicas and a comparison only read, as every simulation.
func TestSimulateCapacityAndCompareOnlyRead(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-replicas", "-f", "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml", "-n", "default"}, "Capacity: "},
		{[]string{"--drain", "node-1", "-n", "default", "--compare-config", "../../docs/simulate/bin-packing.yaml"}, "Compared with profile"},
	} {
		args := tc.args
		client := fake.NewSimpleClientset(decodeFile(t, "testdata/simulate/drain-with-pdb/cluster.json")...) //nolint:staticcheck // nothing here applies
		var out, errOut bytes.Buffer
		cmd := newSimulate(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{},
			func() (kubernetes.Interface, error) { return client, nil })
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, a := range client.Actions() {
			if v := a.GetVerb(); v != "get" && v != "list" {
				t.Errorf("%v: a %s request on %s", args, v, a.GetResource().Resource)
			}
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", args, tc.want, out.String())
		}
	}
}

// --max-replicas picks the profile by the workload's schedulerName, as a
// run of its replicas does.
func TestSimulateMaxReplicasPicksTheWorkloadsProfile(t *testing.T) {
	deploy := mustRead(t, "testdata/simulate/zone-affinity-hostname-anti-affinity/workload.yaml")
	foo := fileWriter(t)("foo.yaml", strings.Replace(deploy, "schedulerName: placement-scheduler", "schedulerName: placement-scheduler-foo", 1))
	out, err := runCLI(t, "", "simulate", "--max-replicas", "-f", foo, "--config", "../../manifests/examples/profile-pool/scheduler-config.yaml",
		"--from-file", "testdata/zone-affinity-anti-affinity/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "with profile placement-scheduler-foo of --config"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

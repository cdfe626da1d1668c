package placementcmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

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

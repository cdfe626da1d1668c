package placementcmd

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputNamesTheFix: each bad input fails with an error that names
// what to fix. main prints it on one line and exits 1 (the integration
// test checks the binary's exit code and stderr).
func TestBadInputNamesTheFix(t *testing.T) {
	write := fileWriter(t)
	snap := "testdata/nodeselector-disktype/cluster.json"
	pod := "testdata/nodeselector-disktype/pod.json"
	malformed := write("malformed.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n")
	badConfig := write("config.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: placement-scheduler\n  plugins:\n    multiPoint:\n      enabled:\n      - name: NoSuchPlugin\n")
	notConfig := write("notconfig.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	service := write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\n")
	unreachable := write("kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"unknown pod", []string{"explain", "nope", "-n", "default", "--from-file", snap}, []string{`pod "nope" not found in namespace "default"`, "-n"}},
		{"malformed -f", []string{"explain", "-f", malformed, "--from-file", snap}, []string{malformed, "not valid YAML or JSON"}},
		{"malformed snapshot", []string{"explain", "-f", pod, "--from-file", malformed}, []string{malformed, "not valid YAML or JSON"}},
		{"missing file", []string{"explain", "-f", filepath.Join(t.TempDir(), "absent.yaml"), "--from-file", snap}, []string{"-f", "absent.yaml", "no such file"}},
		{"kind without pod template", []string{"explain", "-f", service, "--from-file", snap}, []string{"Service has no pod template"}},
		{"config with unknown plugin", []string{"explain", "-f", pod, "--from-file", snap, "--config", badConfig}, []string{"profile \"placement-scheduler\"", "NoSuchPlugin"}},
		{"config of the wrong kind", []string{"explain", "-f", pod, "--from-file", snap, "--config", notConfig}, []string{"--config " + notConfig, "KubeSchedulerConfiguration"}},
		{"unknown profile", []string{"explain", "-f", pod, "--from-file", snap, "--profile", "other"}, []string{`--profile "other"`, "placement-scheduler"}},
		{"unreachable cluster", []string{"explain", "p", "--kubeconfig", unreachable, "--request-timeout", "5s"}, []string{"cannot list nodes", "--kubeconfig"}},
		{"no pod named", []string{"explain", "--from-file", snap}, []string{"POD or -f FILE"}},
		{"bad output", []string{"explain", "-f", pod, "--from-file", snap, "-o", "xml"}, []string{`-o "xml"`, "table, wide, json or yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, "", tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestStdinWorkload: -f - reads a Deployment and explains its pod template.
func TestStdinWorkload(t *testing.T) {
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: default}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      schedulerName: placement-scheduler
      nodeSelector: {disktype: hdd}
      containers: [{name: c, image: x}]
`
	out, err := runCLI(t, deploy, "explain", "-f", "-", "--from-file", "testdata/nodeselector-disktype/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Pod default/db,", "Would pick node-b", "nodeSelector disktype=hdd: node has disktype=ssd"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// A pod for another scheduler is explained with the profile, and says so.
func TestOtherSchedulerNameIsNoted(t *testing.T) {
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}`
	out, err := runCLI(t, pod, "explain", "-f", "-", "--from-file", "testdata/nodeselector-disktype/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := `Note: the pod asks for schedulerName "default-scheduler", not this profile: this is what placement-scheduler would do with it.`; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

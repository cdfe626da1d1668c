package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// explainResult is the part of `kubectl placement explain -o json` these
// tests read.
type explainResult struct {
	Nodes            int    `json:"nodes"`
	Feasible         int    `json:"feasible"`
	Selected         string `json:"selected"`
	SchedulerMessage string `json:"schedulerMessage"`
	NodeResults      []struct {
		Node     string `json:"node"`
		Feasible bool   `json:"feasible"`
	} `json:"nodeResults"`
	Hints []struct {
		Change string `json:"change"`
		Nodes  int    `json:"nodes"`
	} `json:"hints"`
}

// binDir is where `make build controlplane` puts the binaries: the
// control-plane assets directory the framework uses too.
func binDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv(framework.AssetsEnv); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "..", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// kubectlPlacement runs `bin/kubectl placement ARGS` with the plugin binary
// found through PATH, as kubectl's plugin discovery does for a user.
func kubectlPlacement(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	pluginDir := filepath.Dir(placementPluginBinary(t))
	kubectlBin := filepath.Join(binDir(t), "kubectl")
	if _, err := os.Stat(kubectlBin); err != nil {
		t.Fatalf("%s is missing: run `make controlplane`", kubectlBin)
	}
	var out, errOut strings.Builder
	cmd := exec.Command(kubectlBin, append([]string{"placement"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// placementPluginBinary is bin/kubectl-placement when `make
// test-integration` built it with everything else; run by hand, the test
// builds its own rather than test something stale.
func placementPluginBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir(t), "kubectl-placement")
	if _, err := os.Stat(bin); err == nil && os.Getenv("PLACEMENT_SCHEDULER_BIN") != "" {
		return bin
	}
	bin = filepath.Join(t.TempDir(), "kubectl-placement")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-placement")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-placement: %v\n%s", err, out)
	}
	return bin
}

func explainJSON(t *testing.T, args ...string) explainResult {
	t.Helper()
	out, errOut, err := kubectlPlacement(t, append(args, "-o", "json")...)
	if err != nil {
		t.Fatalf("kubectl placement %v: %v\nstderr: %s", args, err, errOut)
	}
	var r explainResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("kubectl placement %v: output is not JSON: %v\n%s", args, err, out)
	}
	return r
}

// A Pending pod and a bound one, explained through `kubectl placement` on a
// live cluster and on a dump of it: the answers agree with each other and
// with what the running scheduler did (the node it bound, the counts in its
// FailedScheduling event).
func TestExplainAgreesWithTheScheduler(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	gpu1 := framework.SchedulableNode(ns, "gpu-1").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()
	gpu2 := framework.SchedulableNode(ns, "gpu-2").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()
	hdd := framework.SchedulableNode(ns, "hdd").Label("disktype", "hdd").Obj()
	env.CreateNodes(t, gpu1, gpu2, hdd)

	env.CreatePod(t, testutil.MakePod(ns, "bound").Placement().NodeSelector(map[string]string{"disktype": "hdd"}).Obj())
	env.CreatePod(t, testutil.MakePod(ns, "pending").Placement().Obj())
	boundTo := env.WaitForBound(t, ns, "bound")
	// "pending" fits only on hdd, which it may take; make it really Pending
	// by asking for a disk type no node has.
	env.CreatePod(t, testutil.MakePod(ns, "stuck").Placement().NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	ev := env.WaitForEvent(t, ns, "stuck", "FailedScheduling", "nodes are available")

	// The bound pod: explain picks the node the scheduler bound it to.
	if got := explainJSON(t, "explain", "bound", "-n", ns, "--kubeconfig", env.Kubeconfig); got.Selected != boundTo {
		t.Errorf("explain picks %q for the bound pod, the scheduler bound it to %q", got.Selected, boundTo)
	}

	live := explainJSON(t, "explain", "stuck", "-n", ns, "--kubeconfig", env.Kubeconfig)
	if live.Feasible != 0 || live.Selected != "" {
		t.Errorf("explain finds %d feasible nodes and picks %q; the scheduler found none", live.Feasible, live.Selected)
	}
	// The event says "<FitError>" plus " preemption: ..."; the FitError
	// part is what explain reproduces, counts included.
	if live.SchedulerMessage == "" || !strings.HasPrefix(ev.Message, live.SchedulerMessage) {
		t.Errorf("explain says the scheduler reports\n  %q\nthe scheduler's FailedScheduling event says\n  %q", live.SchedulerMessage, ev.Message)
	}
	t.Logf("FailedScheduling: %s\nexplain:          %s", ev.Message, live.SchedulerMessage)
	var tolerate int
	for _, h := range live.Hints {
		if h.Change == "tolerating dedicated=gpu:NoSchedule" {
			tolerate = h.Nodes
		}
	}
	if tolerate != 0 {
		t.Errorf("tolerating the gpu taint cannot help a pod wanting disktype=ssd, yet explain says it frees %d nodes", tolerate)
	}

	// Offline: a dump of the same cluster gives the same answer.
	dump, errOut, err := env.Kubectl(t, "get", "nodes,pods,namespaces", "-A", "-o", "yaml")
	if err != nil {
		t.Fatalf("kubectl get: %v: %s", err, errOut)
	}
	snap := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := os.WriteFile(snap, []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
	offline := explainJSON(t, "explain", "stuck", "-n", ns, "--from-file", snap)
	liveJSON, _ := json.Marshal(live)
	offlineJSON, _ := json.Marshal(offline)
	if string(liveJSON) != string(offlineJSON) {
		t.Errorf("offline answer differs from the live one:\nlive:    %s\noffline: %s", liveJSON, offlineJSON)
	}

	// The pending pod that may have fit: whatever the scheduler did, explain agrees.
	p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "pending", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		if got := explainJSON(t, "explain", "pending", "-n", ns, "--kubeconfig", env.Kubeconfig); got.Selected == "" {
			t.Errorf("explain finds pod %q unschedulable; the scheduler bound it to %s", "pending", p.Spec.NodeName)
		}
	}
}

// Bad input through the real binaries: one line on stderr naming what to
// fix, a non-zero exit, no stack trace.
func TestExplainBadInputIsOneLine(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	dir := t.TempDir()
	malformed := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(malformed, []byte("kind: Pod\nmetadata: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o644); err != nil {
		t.Fatal(err)
	}
	podFile := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(podFile, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {schedulerName: x, containers: [{name: c, image: i}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(badConfig, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: x, plugins: {multiPoint: {enabled: [{name: Nope}]}}}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown pod", []string{"explain", "nope", "-n", ns, "--kubeconfig", env.Kubeconfig}, `pod "nope" not found`},
		{"malformed file", []string{"explain", "-f", malformed, "--kubeconfig", env.Kubeconfig}, "not valid YAML or JSON"},
		{"config that does not load", []string{"explain", "-f", podFile, "--config", badConfig, "--kubeconfig", env.Kubeconfig}, "Nope"},
		{"unreachable cluster", []string{"explain", "x", "--kubeconfig", unreachable, "--request-timeout", "5s"}, "cannot list nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := kubectlPlacement(t, tc.args...)
			if err == nil {
				t.Fatalf("exit 0; stdout %q", out)
			}
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || strings.Contains(errOut, "goroutine") {
				t.Errorf("stderr is not one error line:\n%s", errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tc.want)
			}
		})
	}
}

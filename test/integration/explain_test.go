package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
		Filters  []struct {
			Plugin    string        `json:"plugin"`
			Resources []resourceFit `json:"resources"`
		} `json:"filters"`
	} `json:"nodeResults"`
	Hints []struct {
		Change string `json:"change"`
		Nodes  int    `json:"nodes"`
	} `json:"hints"`
	Config   string   `json:"config"`
	BoundTo  string   `json:"boundTo"`
	Notes    []string `json:"notes"`
	Warnings []string `json:"warnings"`
	// PostFilter is the preemption dry run.
	PostFilter *struct {
		WouldPreempt bool   `json:"wouldPreempt"`
		Node         string `json:"node"`
		Victims      []struct {
			Pod string `json:"pod"`
		} `json:"victims"`
		NotHelpful []struct {
			Node   string `json:"node"`
			Reason string `json:"reason"`
		} `json:"notHelpful"`
		Message string `json:"message"`
	} `json:"postFilter"`
}

type resourceFit struct {
	Resource string `json:"resource"`
	Short    string `json:"short"`
	Holders  []struct {
		Pod string `json:"pod"`
	} `json:"holders"`
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

	// The bound pod: explain picks the node the scheduler bound it to, and
	// says the verdict is today's.
	got := explainJSON(t, "explain", "bound", "-n", ns, "--kubeconfig", env.Kubeconfig)
	if got.Selected != boundTo {
		t.Errorf("explain picks %q for the bound pod, the scheduler bound it to %q", got.Selected, boundTo)
	}
	if got.BoundTo != boundTo || !anyContains(got.Notes, "recomputed against today's cluster") {
		t.Errorf("explain of a bound pod: boundTo %q, notes %q; want %q and a note that the verdict is recomputed", got.BoundTo, got.Notes, boundTo)
	}
	// No scheduler ConfigMap is installed here: the output names the
	// shipped profile and warns.
	if !strings.Contains(got.Config, "shipped") || !anyContains(got.Warnings, "--scheduler-namespace") {
		t.Errorf("config %q, warnings %q: want the shipped profile named and a warning on the fallback", got.Config, got.Warnings)
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
	if live.PostFilter == nil || ev.Message != live.SchedulerMessage+" "+live.PostFilter.Message {
		t.Errorf("the event is not explain's message with its preemption part: %+v", live.PostFilter)
	}
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
	// Both judge with the shipped profile; they warn for different reasons
	// (no ConfigMap in the cluster, none in a snapshot).
	if len(live.Warnings) != 1 || len(offline.Warnings) != 1 {
		t.Errorf("want one fallback warning each: live %q, offline %q", live.Warnings, offline.Warnings)
	}
	live.Warnings, offline.Warnings = nil, nil
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

func anyContains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// resourceDetail is node's NodeResourcesFit detail in r.
func (r explainResult) resourceDetail(node string) []resourceFit {
	for _, nr := range r.NodeResults {
		if nr.Node != node {
			continue
		}
		for _, f := range nr.Filters {
			if f.Plugin == "NodeResourcesFit" {
				return f.Resources
			}
		}
	}
	return nil
}

// writePod writes pod as a what-if file for -f.
func writePod(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	pod.APIVersion, pod.Kind = "v1", "Pod"
	data, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), pod.Name+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Resources and preemption, explained and then done by the running
// scheduler: a pod short of CPU everywhere gets the shortfall and the pods
// holding it, and a preemption dry run whose "why not" is the scheduler's
// own FailedScheduling text; a higher-priority pod gets the node and the
// victims the scheduler then nominates and evicts. A user with rights in
// the namespace only gets the same answer, and is told what it could not
// see.
func TestExplainResourcesAndPreemption(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	pool := map[string]string{"explain-pool": ns}
	a := framework.SchedulableNode(ns, "a").Labels(pool).Obj()
	b := framework.SchedulableNode(ns, "b").Labels(pool).Obj()
	env.CreateNodes(t, a, b)
	low, mid, top := testutil.MakePriorityClass(ns+"-low", 100), testutil.MakePriorityClass(ns+"-mid", 500), testutil.MakePriorityClass(ns+"-top", 2000)
	env.Create(t, low, mid, top)
	on := func(n *v1.Node) map[string]string { return map[string]string{v1.LabelHostname: n.Labels[v1.LabelHostname]} }
	env.CreatePod(t, testutil.MakePod(ns, "low-1").Placement().NodeSelector(on(a)).Request("6", "1Gi").PriorityClassName(low.Name).Obj())
	env.CreatePod(t, testutil.MakePod(ns, "top-1").Placement().NodeSelector(on(b)).Request("6", "1Gi").PriorityClassName(top.Name).Obj())
	env.WaitForBound(t, ns, "low-1")
	env.WaitForBound(t, ns, "top-1")

	// Priority 0, four CPUs on nodes with two free: short everywhere, and
	// nobody it may preempt.
	stuck := testutil.MakePod(ns, "stuck").Placement().NodeSelector(pool).Request("4", "1Gi").Obj()
	whatIf := explainJSON(t, "explain", "-f", writePod(t, stuck.DeepCopy()), "-n", ns, "--kubeconfig", env.Kubeconfig)
	if whatIf.Feasible != 0 {
		t.Fatalf("explain finds %d feasible nodes for 4 CPUs on two nodes with 2 free", whatIf.Feasible)
	}
	for node, holder := range map[string]string{a.Name: ns + "/low-1", b.Name: ns + "/top-1"} {
		d := whatIf.resourceDetail(node)
		if len(d) != 1 || d[0].Resource != "cpu" || d[0].Short != "2" || len(d[0].Holders) == 0 || d[0].Holders[0].Pod != holder {
			t.Errorf("node %s: resource detail %+v, want cpu short by 2, held by %s", node, d, holder)
		}
	}
	if pf := whatIf.PostFilter; pf == nil || pf.WouldPreempt || pf.Message == "" {
		t.Fatalf("preemption dry run %+v: want it not to help, with the scheduler's message", pf)
	}

	env.CreatePod(t, stuck)
	ev := env.WaitForEvent(t, ns, "stuck", "FailedScheduling", "preemption:")
	live := explainJSON(t, "explain", "stuck", "-n", ns, "--kubeconfig", env.Kubeconfig)
	if live.PostFilter == nil {
		t.Fatal("no preemption section for an unschedulable pod")
	}
	if want := live.SchedulerMessage + " " + live.PostFilter.Message; ev.Message != want {
		t.Errorf("FailedScheduling says\n  %q\nexplain, with its preemption dry run, says\n  %q", ev.Message, want)
	}

	// The same through a user who may read pods and the like in ns only
	// (and list nodes): same verdict, and a note on what it could not see.
	user := namespaceReader(t, ns)
	scoped := explainJSON(t, "explain", "stuck", "-n", ns, "--kubeconfig", user)
	if scoped.SchedulerMessage != live.SchedulerMessage || scoped.PostFilter == nil || scoped.PostFilter.Message != live.PostFilter.Message {
		t.Errorf("namespace-scoped explain differs:\n  %q %+v\nfull-rights explain:\n  %q %+v", scoped.SchedulerMessage, scoped.PostFilter, live.SchedulerMessage, live.PostFilter)
	}
	if !anyContains(scoped.Notes, "pods in namespaces other than "+ns+" not visible") {
		t.Errorf("namespace-scoped explain does not say what it could not see: notes %q", scoped.Notes)
	}

	// Priority 500 may evict low-1 (100) on a, not top-1 (2000) on b.
	urgent := testutil.MakePod(ns, "urgent").Placement().NodeSelector(pool).Request("4", "1Gi").PriorityClassName(mid.Name).Obj()
	plan := explainJSON(t, "explain", "-f", writePod(t, urgent.DeepCopy()), "-n", ns, "--kubeconfig", env.Kubeconfig)
	pf := plan.PostFilter
	if pf == nil || !pf.WouldPreempt || pf.Node != a.Name || len(pf.Victims) != 1 || pf.Victims[0].Pod != ns+"/low-1" {
		t.Fatalf("preemption dry run %+v: want node %s, victim %s/low-1", pf, a.Name, ns)
	}
	// The dry run evicted nothing.
	if p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "low-1", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("after the dry run low-1 is %v (err %v), want it untouched", p.DeletionTimestamp, err)
	}
	env.CreatePod(t, urgent)
	env.WaitForPod(t, ns, "urgent", "nominatedNodeName", func(p *v1.Pod) bool {
		return p.Status.NominatedNodeName == pf.Node || p.Spec.NodeName == pf.Node
	})
	env.WaitForPod(t, ns, "low-1", "deletion", func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "top-1", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("top-1 is being deleted (err %v); explain said only low-1 would be", err)
	}
}

// namespaceReader is a kubeconfig for a ServiceAccount that may read
// everything in ns and list nodes, nothing else.
func namespaceReader(t *testing.T, ns string) string {
	t.Helper()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	nodes := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-nodes"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}},
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-nodes"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodes.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	env.Create(t, sa, role, rb, nodes, crb)
	// The authorizer learns of new bindings through its informers.
	env.Poll(t, "RBAC to let "+sa.Name+" list nodes", func(ctx context.Context) (bool, error) {
		sar, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + ns + ":" + sa.Name,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"},
			},
		}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	return env.ServiceAccountKubeconfig(t, ns, sa.Name)
}

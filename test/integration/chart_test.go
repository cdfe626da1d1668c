package integration

// charts/placement-scheduler as an install: `helm install` against the real
// apiserver, then the real binary with the ServiceAccount's own token and
// the chart's config and args, as TestInstalledSchedulerNeedsOnlyItsServiceAccount
// does for manifests/. test/chart checks, without a cluster, that the chart
// renders what manifests/ does.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// `helm install` of the chart, defaults only, passes the chart's
// kubeVersion guard against the test apiserver (stamped with the pinned
// Kubernetes version, as a release is) and sets up a scheduler that
// needs nothing but its ServiceAccount: the real binary, run with that
// account's token and the installed ConfigMap's config and Deployment's
// args, leads on the release's lease, schedules an opted-in pod, serves
// /metrics to a holder of the chart's metrics-reader ClusterRole (with the
// series the chart's alerts read), passes `helm test`, and is refused
// nothing. A `helm upgrade` that changes the config changes the pod
// template's checksum, so the replicas roll.
func TestChartInstallsASchedulerThatNeedsOnlyItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	checkAPIServerVersion(t)
	env.StopSharedScheduler()
	in := env.InstallChart(t, framework.ChartDir(t))
	checkStored(t, in, map[string]int{
		"ServiceAccount": 2, "ConfigMap": 1, "Deployment": 2, "Service": 2, "PodDisruptionBudget": 2,
		"ClusterRoleBinding": 4, "Role": 2, "RoleBinding": 4, "ClusterRole": 3, // the scheduler's and the enforcer's
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1, // the enforcer's
	})
	// The chart read the apiserver's version and picked this build's line:
	// its image tag and its shipped profile.
	if img := in.Deployment.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, "-k8s"+k8sline.Minor) {
		t.Errorf("the chart deployed %s on a %s apiserver, want the %s line's image (tag ...-k8s%s)", img, framework.KubernetesVersion(t), k8sline.Minor, k8sline.Minor)
	}
	var installed, shipped struct {
		Profiles []any `json:"profiles"`
	}
	if err := yaml.Unmarshal(in.Config, &installed); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(manifests.SchedulerConfig(), &shipped); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shipped.Profiles, installed.Profiles); diff != "" {
		t.Errorf("the chart's profiles are not the %s line's shipped ones (-shipped +installed):\n%s", k8sline.Minor, diff)
	}

	sched := startLeaderAsInstalled(t, in)

	ns := env.NewNamespace(t, nil)
	// kubernetes.io/os, as every kubelet labels its node: the helm test's
	// canary selects it.
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Label(v1.LabelOSStable, "linux").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "p").Placement().Obj())
	if got := env.WaitForBound(t, ns, "p"); got != ns+"-a" {
		t.Errorf("p bound to %q, want %s-a", got, ns)
	}
	env.WaitForEvent(t, ns, "p", "Scheduled", "Successfully assigned")

	sched.WaitForGet(t, "/healthz", "", 200)
	sched.WaitForGet(t, "/readyz", "", 200)
	scraper := metricsScraper(t, ns)
	sched.WaitForGet(t, "/metrics", scraper, 200)
	checkAlertInputs(t, sched, scraper)
	helmTestAsKubelet(t, ns+"-a")
	if lines := forbiddenLines(sched.Log()); len(lines) > 0 {
		t.Errorf("the scheduler was refused something with the chart's RBAC:\n%s", strings.Join(lines, "\n"))
	}

	checksum := func() string {
		d, err := env.Client.AppsV1().Deployments(framework.Namespace).Get(ctx, framework.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations["checksum/config"]
	}
	before := checksum()
	env.MustHelm(t, "upgrade", framework.Name, framework.ChartDir(t), "--namespace", framework.Namespace, "--reuse-values",
		"--set", "pluginArgs.PlacementInterPodAffinity.hardPodAffinityWeight=5")
	if after := checksum(); after == before || after == "" {
		t.Errorf("checksum/config %q -> %q after a config change: the pods would not roll", before, after)
	}
	cm, err := env.Client.CoreV1().ConfigMaps(framework.Namespace).Get(ctx, in.ConfigMap, metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["scheduler-config.yaml"], "hardPodAffinityWeight: 5") {
		t.Errorf("the upgraded ConfigMap %s (%v) does not carry the change", in.ConfigMap, err)
	}
}

// What the chart's values produce is a config the scheduler accepts: the
// shipped profile with plugin args merged in (an addedAffinity for
// PlacementNodeAffinity, a new hardPodAffinityWeight), an additional
// profile, leader-election timings, all through kube-scheduler's own
// app.Setup, and every profile keeps upstream's plugin set.
func TestChartValuesRenderAConfigTheSchedulerAccepts(t *testing.T) {
	h, err := framework.FindHelm(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := h.Run("template", framework.Name, framework.ChartDir(t), "--namespace", framework.Namespace, "--show-only", "templates/configmap.yaml",
		"--kube-version", framework.KubernetesVersion(t), // the line's profile
		"--set", "leaderElection.leaseDuration=30s,leaderElection.renewDeadline=20s,leaderElection.retryPeriod=4s",
		"--set", "pluginArgs.PlacementInterPodAffinity.hardPodAffinityWeight=5",
		"--set-json", `pluginArgs.PlacementNodeAffinity={"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["foo"]}]}]}}}`,
		"--set-json", "additionalProfiles="+batchProfile(t),
	)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, errOut)
	}
	objs, err := framework.DecodeObjects([]byte(out))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding the ConfigMap: %v (%d objects)", err, len(objs))
	}
	data, _, _ := unstructured.NestedString(objs[0].Object, "data", "scheduler-config.yaml")
	profiles, err := setupConfig(t, []byte(data))
	if err != nil {
		t.Fatalf("app.Setup rejected the chart's config: %v\n%s", err, data)
	}
	want := upstreamDefaultPlugins(t)
	for _, name := range []string{"placement-scheduler", "placement-scheduler-batch"} {
		got, ok := profiles[name]
		if !ok {
			t.Errorf("no profile %s in %v", name, profiles)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("profile %s's plugins differ from upstream's default set (-want +got):\n%s", name, diff)
		}
	}
}

// batchProfile is the chart's default profile for this build's line (the
// line's shipped profile, manifests.SchedulerConfig) renamed
// placement-scheduler-batch, without its pluginConfig, as a one-profile JSON
// list for --set-json.
func batchProfile(t *testing.T) string {
	t.Helper()
	var config struct {
		Profiles []map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal(manifests.SchedulerConfig(), &config); err != nil || len(config.Profiles) == 0 {
		t.Fatalf("the shipped config's profiles: %v (%d)", err, len(config.Profiles))
	}
	p := config.Profiles[0]
	p["schedulerName"] = "placement-scheduler-batch"
	delete(p, "pluginConfig")
	out, err := json.Marshal([]any{p})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// checkAPIServerVersion fails unless the test apiserver reports the
// Kubernetes version this build's line pins (framework.KubernetesVersion):
// the chart's kubeVersion guard and its choice of line are checked against
// it. An unstamped build says v0.0.0-master, which the guard refuses.
func checkAPIServerVersion(t *testing.T) {
	t.Helper()
	pinned := framework.KubernetesVersion(t)
	got, err := env.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got.GitVersion != pinned {
		t.Fatalf("the test apiserver reports %s, want %q (the line's k8s.io/kubernetes): rebuild the line's kube-apiserver with `make controlplane`, which stamps it", got.GitVersion, pinned)
	}
}

// checkAlertInputs scrapes the binary's /metrics, as the chart's
// ServiceMonitor does, and fails unless it serves, under the names and
// labels the chart's alerts and dashboard use, the leader gauge (this
// replica leads), the queue gauge, the panic counter at zero for every
// plugin of ours, and the build.
func checkAlertInputs(t *testing.T, sched *framework.Scheduler, token string) {
	t.Helper()
	code, body, err := sched.GetBody("/metrics", token)
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	want := []string{
		`leader_election_master_status{name="kube-scheduler"} 1`,
		`scheduler_pending_pods{queue="unschedulable"} `,
		`scheduler_schedule_attempts_total{profile="placement-scheduler",result="scheduled"} `,
	}
	for _, p := range plugins.Set() {
		want = append(want, fmt.Sprintf(`placement_scheduler_plugin_panics_total{extension_point="Filter",plugin=%q} 0`, p.Name))
	}
	for _, w := range want {
		if !strings.Contains(string(body), "\n"+w) {
			t.Errorf("/metrics has no line starting %q", w)
		}
	}
	// The build, for the dashboard: this build's line, at 1.
	build := regexp.MustCompile(`\nplacement_scheduler_build_info\{[^}]*kubernetes_line="` + regexp.QuoteMeta(k8sline.Minor) + `"[^}]*\} 1\n`)
	if !build.MatchString(string(body)) {
		t.Errorf("/metrics has no placement_scheduler_build_info of the %s line at 1", k8sline.Minor)
	}
}

// helmTestAsKubelet runs `helm test` on the release, standing in for what
// envtest lacks: the kubelet, and the default scheduler for the pod that
// asks for it. The canary must be bound by placement-scheduler (only it
// serves that schedulerName); it then "runs" (phase Succeeded). The lease
// check's container runs here: kubectl (bin/kubectl, built from the same
// Kubernetes version as the image's) with the pod's args and its
// ServiceAccount's token, so the test's Role is what is exercised; its exit
// status becomes the pod's phase. `helm test` must then report both passed.
func helmTestAsKubelet(t *testing.T, node string) {
	t.Helper()
	h, err := framework.FindHelm(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, err := h.Run("test", framework.Name, "--namespace", framework.Namespace, "--kubeconfig", env.Kubeconfig, "--timeout", "3m")
		done <- result{out, errOut, err}
	}()
	pods := env.Client.CoreV1().Pods(framework.Namespace)
	finish := func(p *v1.Pod, phase v1.PodPhase) {
		t.Helper()
		if p.Spec.NodeName == "" {
			// What the default scheduler would do.
			err := pods.Bind(context.Background(), &v1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target:     v1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("binding %s: %v", p.Name, err)
			}
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := pods.Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Status.Phase = phase
			_, err = pods.UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("setting %s's phase to %s: %v", p.Name, phase, err)
		}
	}

	canary := env.WaitForPod(t, framework.Namespace, framework.Name+"-test-canary", "bound", func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	if canary.Spec.SchedulerName != testutil.SchedulerName {
		t.Errorf("canary schedulerName %q, want %q", canary.Spec.SchedulerName, testutil.SchedulerName)
	}
	env.WaitForEvent(t, framework.Namespace, canary.Name, "Scheduled", "Successfully assigned")
	finish(canary, v1.PodSucceeded)

	lease := env.WaitForPod(t, framework.Namespace, framework.Name+"-test-lease", "created", func(*v1.Pod) bool { return true })
	kubeconfig := env.ServiceAccountKubeconfig(t, framework.Namespace, lease.Spec.ServiceAccountName)
	// The later --kubeconfig wins over the admin one env.Kubectl passes.
	out, errOut, err := env.Kubectl(t, append(slices.Clone(lease.Spec.Containers[0].Args), "--kubeconfig", kubeconfig)...)
	phase := v1.PodSucceeded
	if err != nil {
		phase = v1.PodFailed
		t.Errorf("the lease check, as the test ServiceAccount: kubectl %s: %v\n%s%s", strings.Join(lease.Spec.Containers[0].Args, " "), err, out, errOut)
	}
	finish(lease, phase)

	r := <-done
	if r.err != nil {
		t.Fatalf("helm test: %v\n%s%s", r.err, r.out, r.errOut)
	}
	phases := helmTestPhases(r.out)
	for _, name := range []string{canary.Name, lease.Name} {
		if phases[name] != "Succeeded" {
			t.Errorf("helm test reports %s %q, want Succeeded:\n%s", name, phases[name], r.out)
		}
	}
}

// helmTestPhases reads `helm test`'s report: each "TEST SUITE: <hook>"
// block's "Phase:".
func helmTestPhases(out string) map[string]string {
	phases := map[string]string{}
	var suite string
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "TEST SUITE:"); ok {
			suite = strings.TrimSpace(name)
		} else if phase, ok := strings.CutPrefix(line, "Phase:"); ok && suite != "" {
			phases[suite] = strings.TrimSpace(phase)
		}
	}
	return phases
}

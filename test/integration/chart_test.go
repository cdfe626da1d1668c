package integration

// charts/placement-scheduler as an install: `helm install` against the real
// apiserver, then the real binary with the ServiceAccount's own token and
// the chart's config and args, as TestInstalledSchedulerNeedsOnlyItsServiceAccount
// does for manifests/. test/chart checks, without a cluster, that the chart
// renders what manifests/ does.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// `helm install` of the chart, defaults only, sets up a scheduler that
// needs nothing but its ServiceAccount: the real binary, run with that
// account's token and the installed ConfigMap's config and Deployment's
// args, leads on the release's lease, schedules an opted-in pod, serves
// /metrics to a holder of the chart's metrics-reader ClusterRole, and is
// refused nothing. A `helm upgrade` that changes the config changes the
// pod template's checksum, so the replicas roll.
func TestChartInstallsASchedulerThatNeedsOnlyItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	env.StopSharedScheduler()
	in := env.InstallChart(t, framework.ChartDir(t))
	checkStored(t, in, map[string]int{
		"ServiceAccount": 2, "ConfigMap": 1, "Deployment": 2, "Service": 1, "PodDisruptionBudget": 1,
		"ClusterRoleBinding": 3, "Role": 2, "RoleBinding": 3, "ClusterRole": 2, // the scheduler's and the enforcer's
	})

	sched := startLeaderAsInstalled(t, in)

	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "p").Placement().Obj())
	if got := env.WaitForBound(t, ns, "p"); got != ns+"-a" {
		t.Errorf("p bound to %q, want %s-a", got, ns)
	}
	env.WaitForEvent(t, ns, "p", "Scheduled", "Successfully assigned")

	sched.WaitForGet(t, "/healthz", "", 200)
	sched.WaitForGet(t, "/readyz", "", 200)
	sched.WaitForGet(t, "/metrics", metricsScraper(t, ns), 200)
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

// batchProfile is the chart's default profile (values.yaml) renamed
// placement-scheduler-batch, without its pluginConfig, as a one-profile JSON
// list for --set-json.
func batchProfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(framework.ChartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Profiles []map[string]any `json:"profiles"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil || len(values.Profiles) == 0 {
		t.Fatalf("values.yaml profiles: %v (%d)", err, len(values.Profiles))
	}
	p := values.Profiles[0]
	p["schedulerName"] = "placement-scheduler-batch"
	delete(p, "pluginConfig")
	out, err := json.Marshal([]any{p})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

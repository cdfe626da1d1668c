package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// diagnosisConfig is the shipped config as its own profile and lease, with
// the opt-in PlacementDiagnosis plugin enabled after DefaultPreemption.
func diagnosisConfig(t *testing.T) (config []byte, profile string) {
	t.Helper()
	profile = "placement-scheduler-diagnosis"
	s := string(manifests.SchedulerConfig())
	for _, r := range [][2]string{
		{"  - schedulerName: placement-scheduler\n", "  - schedulerName: " + profile + "\n"},
		{"  resourceName: placement-scheduler\n", "  resourceName: " + profile + "\n"},
		{"          - name: DefaultPreemption\n", "          - name: DefaultPreemption\n          - name: PlacementDiagnosis\n"},
		{"    pluginConfig:\n", "    pluginConfig:\n      - name: PlacementDiagnosis\n        args:\n          minInterval: 1h\n"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("shipped config has no %q to edit", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return []byte(s), profile
}

// With PlacementDiagnosis enabled, a pod no node accepts gets one extra
// event naming the deciding taint and nodeSelector entry with example
// nodes, while FailedScheduling keeps exactly the text kube-scheduler
// writes (explain reproduces it without the plugin's help); a pod that
// schedules gets no diagnosis.
func TestPlacementDiagnosisEvent(t *testing.T) {
	cfg, profile := diagnosisConfig(t)
	env.StartScheduler(t, framework.SchedulerOptions{Name: "diagnosis", Config: cfg})
	ns := env.NewNamespace(t, nil)
	gpu1 := framework.SchedulableNode(ns, "gpu-1").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()
	gpu2 := framework.SchedulableNode(ns, "gpu-2").Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()
	hdd := framework.SchedulableNode(ns, "hdd").Label("disktype", "hdd").Obj()
	env.CreateNodes(t, gpu1, gpu2, hdd)

	env.CreatePod(t, testutil.MakePod(ns, "fits").SchedulerName(profile).NodeSelector(map[string]string{"disktype": "hdd"}).Obj())
	env.WaitForBound(t, ns, "fits")
	env.CreatePod(t, testutil.MakePod(ns, "stuck").SchedulerName(profile).NodeSelector(map[string]string{"disktype": "ssd"}).Obj())

	diag := env.WaitForEvent(t, ns, "stuck", "PlacementDiagnosis", "PlacementTaintToleration")
	t.Logf("PlacementDiagnosis: %s", diag.Message)
	for _, want := range []string{
		"PlacementTaintToleration: taint dedicated=gpu:NoSchedule is not tolerated (2 node(s), e.g. " + gpu1.Name + ", " + gpu2.Name,
		"PlacementNodeAffinity: nodeSelector disktype=ssd: node has disktype=hdd (1 node(s), e.g. " + hdd.Name + ")",
	} {
		if !strings.Contains(diag.Message, want) {
			t.Errorf("diagnosis %q lacks %q", diag.Message, want)
		}
	}
	if diag.Type != v1.EventTypeWarning {
		t.Errorf("diagnosis event type %q, want Warning", diag.Type)
	}

	failed := env.WaitForEvent(t, ns, "stuck", "FailedScheduling", "nodes are available")
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	r := explainJSON(t, "explain", "stuck", "-n", ns, "--kubeconfig", env.Kubeconfig, "--config", cfgFile)
	if r.SchedulerMessage == "" || r.PostFilter == nil || failed.Message != r.SchedulerMessage+" "+r.PostFilter.Message {
		t.Errorf("FailedScheduling %q is not kube-scheduler's own text %q followed by its PostFilter part (%+v)", failed.Message, r.SchedulerMessage, r.PostFilter)
	}
	if strings.Contains(failed.Message, "PlacementDiagnosis") || strings.Contains(failed.Message, "e.g.") {
		t.Errorf("FailedScheduling carries the diagnosis: %q", failed.Message)
	}

	for _, e := range env.PodEvents(t, ns, "fits") {
		if e.Reason == "PlacementDiagnosis" {
			t.Errorf("a pod that scheduled got a diagnosis: %q", e.Message)
		}
	}
}

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

const zoneKey = v1.LabelTopologyZone

func TestNodeSelectorDiskType(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	ssd := schedulableNode(ns, "ssd").Label("disktype", "ssd").Obj()
	createNodes(t, schedulableNode(ns, "hdd").Label("disktype", "hdd").Obj(), ssd,
		schedulableNode(ns, "plain").Obj())
	createPod(t, placementPod(ns, "nginx").NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	if got := waitForBound(t, ns, "nginx"); got != ssd.Name {
		t.Errorf("bound to %s, want %s", got, ssd.Name)
	}
}

func TestRequiredZonesWithPreferredLabel(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	east := schedulableNode(ns, "east").Label(zoneKey, "antarctica-east1").Obj()
	westPreferred := schedulableNode(ns, "west").Label(zoneKey, "antarctica-west1").
		Label("another-node-label-key", "another-node-label-value").Obj()
	elsewhere := schedulableNode(ns, "elsewhere").Label(zoneKey, "arctic-1").
		Label("another-node-label-key", "another-node-label-value").Obj()
	createNodes(t, east, westPreferred, elsewhere)

	pod := func(name string) *v1.Pod {
		return placementPod(ns, name).
			RequiredNodeTerms(testutil.Term(testutil.Expr(zoneKey, v1.NodeSelectorOpIn, "antarctica-east1", "antarctica-west1"))).
			PreferredNodeTerm(1, testutil.Term(testutil.Expr("another-node-label-key", v1.NodeSelectorOpIn, "another-node-label-value"))).
			Obj()
	}
	createPod(t, pod("with-node-affinity"))
	if got := waitForBound(t, ns, "with-node-affinity"); got != westPreferred.Name {
		t.Errorf("bound to %s, want %s (required zone and preferred label)", got, westPreferred.Name)
	}
}

func TestPreferredWeightsPickHeavierTerm(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	light := schedulableNode(ns, "light").Label("label-1", "key-1").Obj()
	heavy := schedulableNode(ns, "heavy").Label("label-2", "key-2").Obj()
	createNodes(t, light, heavy)
	createPod(t, placementPod(ns, "with-affinity-preferred-weight").
		PreferredNodeTerm(1, testutil.Term(testutil.Expr("label-1", v1.NodeSelectorOpIn, "key-1"))).
		PreferredNodeTerm(50, testutil.Term(testutil.Expr("label-2", v1.NodeSelectorOpIn, "key-2"))).
		Obj())
	if got := waitForBound(t, ns, "with-affinity-preferred-weight"); got != heavy.Name {
		t.Errorf("bound to %s, want %s (weight 50 beats weight 1)", got, heavy.Name)
	}
}

func TestRequiredOSLinux(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	linux := schedulableNode(ns, "linux").Label(v1.LabelOSStable, "linux").Obj()
	createNodes(t, schedulableNode(ns, "windows").Label(v1.LabelOSStable, "windows").Obj(), linux)
	createPod(t, placementPod(ns, "linux-only").
		RequiredNodeTerms(testutil.Term(testutil.Expr(v1.LabelOSStable, v1.NodeSelectorOpIn, "linux"))).Obj())
	if got := waitForBound(t, ns, "linux-only"); got != linux.Name {
		t.Errorf("bound to %s, want %s", got, linux.Name)
	}
}

func TestMatchFieldsPinsToNode(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	target := schedulableNode(ns, "target").Obj()
	createNodes(t, schedulableNode(ns, "other").Obj(), target, schedulableNode(ns, "third").Obj())
	createPod(t, placementPod(ns, "pinned").
		RequiredNodeTerms(testutil.FieldTerm(testutil.Expr("metadata.name", v1.NodeSelectorOpIn, target.Name))).Obj())
	if got := waitForBound(t, ns, "pinned"); got != target.Name {
		t.Errorf("bound to %s, want %s", got, target.Name)
	}
}

// A profile's addedAffinity confines its pods to the labelled pool, and a
// pod that cannot fit gets the scheduler-enforced reason in its event.
func TestProfileAddedAffinity(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(env.repoRoot, "manifests", "examples", "pool-foo-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	startScheduler(t, cfg)
	ns := newNamespace(t, nil)
	const profile = "placement-scheduler-foo"
	inPool := schedulableNode(ns, "pool").Label("scheduler-profile", "foo").Obj()
	createNodes(t, schedulableNode(ns, "outside-1").Obj(), inPool,
		schedulableNode(ns, "outside-2").Label("scheduler-profile", "bar").Obj())

	for _, name := range []string{"p1", "p2", "p3"} {
		createPod(t, testutil.MakePod(ns, name).SchedulerName(profile).Obj())
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		if got := waitForBound(t, ns, name); got != inPool.Name {
			t.Errorf("%s bound to %s, want the pool node %s", name, got, inPool.Name)
		}
	}

	// The pod's own nodeSelector excludes the only pool node: nothing fits.
	createPod(t, testutil.MakePod(ns, "nowhere").SchedulerName(profile).
		NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	msg := waitForUnschedulable(t, ns, "nowhere")
	for _, want := range []string{"node(s) didn't match scheduler-enforced node affinity", "node(s) didn't match Pod's node affinity/selector"} {
		if !strings.Contains(msg, want) {
			t.Errorf("PodScheduled message %q lacks %q", msg, want)
		}
	}
	ev := waitForEvent(t, ns, "nowhere", "FailedScheduling", "didn't match scheduler-enforced node affinity")
	if ev.ReportingController != profile && ev.Source.Component != profile {
		t.Errorf("FailedScheduling reported by %q/%q, want %q", ev.ReportingController, ev.Source.Component, profile)
	}
}

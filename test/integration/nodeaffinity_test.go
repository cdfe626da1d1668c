package integration

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

const zoneKey = v1.LabelTopologyZone

func TestNodeSelectorDiskType(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	ssd := framework.SchedulableNode(ns, "ssd").Label("disktype", "ssd").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "hdd").Label("disktype", "hdd").Obj(), ssd,
		framework.SchedulableNode(ns, "plain").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "nginx").Placement().NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	if got := env.WaitForBound(t, ns, "nginx"); got != ssd.Name {
		t.Errorf("bound to %s, want %s", got, ssd.Name)
	}
}

func TestRequiredZonesWithPreferredLabel(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	east := framework.SchedulableNode(ns, "east").Label(zoneKey, "antarctica-east1").Obj()
	westPreferred := framework.SchedulableNode(ns, "west").Label(zoneKey, "antarctica-west1").
		Label("another-node-label-key", "another-node-label-value").Obj()
	elsewhere := framework.SchedulableNode(ns, "elsewhere").Label(zoneKey, "arctic-1").
		Label("another-node-label-key", "another-node-label-value").Obj()
	env.CreateNodes(t, east, westPreferred, elsewhere)

	pod := func(name string) *v1.Pod {
		return testutil.MakePod(ns, name).Placement().
			RequiredNodeTerms(testutil.Term(testutil.Expr(zoneKey, v1.NodeSelectorOpIn, "antarctica-east1", "antarctica-west1"))).
			PreferredNodeTerm(1, testutil.Term(testutil.Expr("another-node-label-key", v1.NodeSelectorOpIn, "another-node-label-value"))).
			Obj()
	}
	env.CreatePod(t, pod("with-node-affinity"))
	if got := env.WaitForBound(t, ns, "with-node-affinity"); got != westPreferred.Name {
		t.Errorf("bound to %s, want %s (required zone and preferred label)", got, westPreferred.Name)
	}
}

func TestPreferredWeightsPickHeavierTerm(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	light := framework.SchedulableNode(ns, "light").Label("label-1", "key-1").Obj()
	heavy := framework.SchedulableNode(ns, "heavy").Label("label-2", "key-2").Obj()
	env.CreateNodes(t, light, heavy)
	env.CreatePod(t, testutil.MakePod(ns, "with-affinity-preferred-weight").Placement().
		PreferredNodeTerm(1, testutil.Term(testutil.Expr("label-1", v1.NodeSelectorOpIn, "key-1"))).
		PreferredNodeTerm(50, testutil.Term(testutil.Expr("label-2", v1.NodeSelectorOpIn, "key-2"))).
		Obj())
	if got := env.WaitForBound(t, ns, "with-affinity-preferred-weight"); got != heavy.Name {
		t.Errorf("bound to %s, want %s (weight 50 beats weight 1)", got, heavy.Name)
	}
}

func TestRequiredOSLinux(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	linux := framework.SchedulableNode(ns, "linux").Label(v1.LabelOSStable, "linux").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "windows").Label(v1.LabelOSStable, "windows").Obj(), linux)
	env.CreatePod(t, testutil.MakePod(ns, "linux-only").Placement().
		RequiredNodeTerms(testutil.Term(testutil.Expr(v1.LabelOSStable, v1.NodeSelectorOpIn, "linux"))).Obj())
	if got := env.WaitForBound(t, ns, "linux-only"); got != linux.Name {
		t.Errorf("bound to %s, want %s", got, linux.Name)
	}
}

func TestMatchFieldsPinsToNode(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	target := framework.SchedulableNode(ns, "target").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "other").Obj(), target, framework.SchedulableNode(ns, "third").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "pinned").Placement().
		RequiredNodeTerms(testutil.FieldTerm(testutil.Expr("metadata.name", v1.NodeSelectorOpIn, target.Name))).Obj())
	if got := env.WaitForBound(t, ns, "pinned"); got != target.Name {
		t.Errorf("bound to %s, want %s", got, target.Name)
	}
}

// A profile's addedAffinity confines its pods to the labelled pool, and a
// pod that cannot fit gets the scheduler-enforced reason in its event.
func TestProfileAddedAffinity(t *testing.T) {
	// The example config serves the shipped profile too, under the shipped
	// lease: it replaces the shared scheduler rather than waiting behind it.
	cfg, err := manifests.Example("profile-pool/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env.StopSharedScheduler()
	env.StartScheduler(t, framework.SchedulerOptions{Config: cfg})
	ns := env.NewNamespace(t, nil)
	const profile = "placement-scheduler-foo"
	inPool := framework.SchedulableNode(ns, "pool").Label("scheduler-profile", "foo").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "outside-1").Obj(), inPool,
		framework.SchedulableNode(ns, "outside-2").Label("scheduler-profile", "bar").Obj())

	for _, name := range []string{"p1", "p2", "p3"} {
		env.CreatePod(t, testutil.MakePod(ns, name).SchedulerName(profile).Obj())
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		if got := env.WaitForBound(t, ns, name); got != inPool.Name {
			t.Errorf("%s bound to %s, want the pool node %s", name, got, inPool.Name)
		}
	}

	// The pod's own nodeSelector excludes the only pool node: nothing fits.
	env.CreatePod(t, testutil.MakePod(ns, "nowhere").SchedulerName(profile).
		NodeSelector(map[string]string{"disktype": "ssd"}).Obj())
	msg := env.WaitForUnschedulable(t, ns, "nowhere")
	for _, want := range []string{"node(s) didn't match scheduler-enforced node affinity", "node(s) didn't match Pod's node affinity/selector"} {
		if !strings.Contains(msg, want) {
			t.Errorf("PodScheduled message %q lacks %q", msg, want)
		}
	}
	ev := env.WaitForEvent(t, ns, "nowhere", "FailedScheduling", "didn't match scheduler-enforced node affinity")
	if ev.ReportingController != profile && ev.Source.Component != profile {
		t.Errorf("FailedScheduling reported by %q/%q, want %q", ev.ReportingController, ev.Source.Component, profile)
	}
}

package integration

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// Dedicated nodes: a taint keeps everyone else off, node affinity keeps the
// tolerating pods on. Only the tolerating pods land there.
func TestDedicatedNodes(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	dedicated := framework.SchedulableNode(ns, "dedicated").Label("dedicated", "ml").
		Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj()
	shared := framework.SchedulableNode(ns, "shared").Obj()
	env.CreateNodes(t, dedicated, shared)

	tolerating := func(name string) *v1.Pod {
		return testutil.MakePod(ns, name).Placement().
			Toleration(testutil.Tol("dedicated", v1.TolerationOpEqual, "ml", v1.TaintEffectNoSchedule)).
			RequiredNodeTerms(testutil.Term(testutil.Expr("dedicated", v1.NodeSelectorOpIn, "ml"))).Obj()
	}
	for _, name := range []string{"ml-1", "ml-2"} {
		env.CreatePod(t, tolerating(name))
	}
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		env.CreatePod(t, testutil.MakePod(ns, name).Placement().Obj())
	}
	for _, name := range []string{"ml-1", "ml-2"} {
		if got := env.WaitForBound(t, ns, name); got != dedicated.Name {
			t.Errorf("%s bound to %s, want the dedicated node", name, got)
		}
	}
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		if got := env.WaitForBound(t, ns, name); got != shared.Name {
			t.Errorf("%s bound to %s, want the shared node (no toleration)", name, got)
		}
	}
}

// A PreferNoSchedule taint steers pods to an untainted node that fits.
func TestPreferNoScheduleSteersAway(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	soft := framework.SchedulableNode(ns, "soft").Taint("maintenance", "soon", v1.TaintEffectPreferNoSchedule).Obj()
	clean := framework.SchedulableNode(ns, "clean").Obj()
	env.CreateNodes(t, soft, clean)
	for _, name := range []string{"a", "b", "c"} {
		env.CreatePod(t, testutil.MakePod(ns, name).Placement().Obj())
		if got := env.WaitForBound(t, ns, name); got != clean.Name {
			t.Errorf("%s bound to %s, want the untainted node %s", name, got, clean.Name)
		}
	}
}

// A pod left Pending by a NoSchedule taint is scheduled as soon as the taint
// is removed, without restarting anything: the node-taint queueing hint
// moves it back to the active queue (otherwise it would sit out the
// five-minute unschedulable timeout, far past this test's deadline).
func TestUntaintRequeuesPendingPod(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	node := framework.SchedulableNode(ns, "only").Taint("blocked", "yes", v1.TaintEffectNoSchedule).Obj()
	env.CreateNodes(t, node)
	env.CreatePod(t, testutil.MakePod(ns, "waiting").Placement().NodeSelector(map[string]string{v1.LabelHostname: node.Name}).Obj())
	msg := env.WaitForUnschedulable(t, ns, "waiting")
	if !strings.Contains(msg, "node(s) had untolerated taint(s)") {
		t.Errorf("PodScheduled message %q lacks the taint reason", msg)
	}

	ctx := context.Background()
	n, err := env.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = nil
	if _, err := env.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := env.WaitForBound(t, ns, "waiting"); got != node.Name {
		t.Errorf("bound to %s, want %s", got, node.Name)
	}
}

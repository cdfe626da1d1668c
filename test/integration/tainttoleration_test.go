package integration

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Dedicated nodes: a taint keeps everyone else off, node affinity keeps the
// tolerating pods on. Only the tolerating pods land there.
func TestDedicatedNodes(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	dedicated := schedulableNode(ns, "dedicated").Label("dedicated", "ml").
		Taint("dedicated", "ml", v1.TaintEffectNoSchedule).Obj()
	shared := schedulableNode(ns, "shared").Obj()
	createNodes(t, dedicated, shared)

	tolerating := func(name string) *v1.Pod {
		return placementPod(ns, name).
			Toleration(testutil.Tol("dedicated", v1.TolerationOpEqual, "ml", v1.TaintEffectNoSchedule)).
			RequiredNodeTerms(testutil.Term(testutil.Expr("dedicated", v1.NodeSelectorOpIn, "ml"))).Obj()
	}
	for _, name := range []string{"ml-1", "ml-2"} {
		createPod(t, tolerating(name))
	}
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		createPod(t, placementPod(ns, name).Obj())
	}
	for _, name := range []string{"ml-1", "ml-2"} {
		if got := waitForBound(t, ns, name); got != dedicated.Name {
			t.Errorf("%s bound to %s, want the dedicated node", name, got)
		}
	}
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		if got := waitForBound(t, ns, name); got != shared.Name {
			t.Errorf("%s bound to %s, want the shared node (no toleration)", name, got)
		}
	}
}

// A PreferNoSchedule taint steers pods to an untainted node that fits.
func TestPreferNoScheduleSteersAway(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	soft := schedulableNode(ns, "soft").Taint("maintenance", "soon", v1.TaintEffectPreferNoSchedule).Obj()
	clean := schedulableNode(ns, "clean").Obj()
	createNodes(t, soft, clean)
	for _, name := range []string{"a", "b", "c"} {
		createPod(t, placementPod(ns, name).Obj())
		if got := waitForBound(t, ns, name); got != clean.Name {
			t.Errorf("%s bound to %s, want the untainted node %s", name, got, clean.Name)
		}
	}
}

// A pod left Pending by a NoSchedule taint is scheduled as soon as the taint
// is removed, without restarting anything: the node-taint queueing hint
// moves it back to the active queue (otherwise it would sit out the
// five-minute unschedulable timeout, far past this test's deadline).
func TestUntaintRequeuesPendingPod(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	node := schedulableNode(ns, "only").Taint("blocked", "yes", v1.TaintEffectNoSchedule).Obj()
	createNodes(t, node)
	createPod(t, placementPod(ns, "waiting").NodeSelector(map[string]string{v1.LabelHostname: node.Name}).Obj())
	msg := waitForUnschedulable(t, ns, "waiting")
	if !strings.Contains(msg, "node(s) had untolerated taint(s)") {
		t.Errorf("PodScheduled message %q lacks the taint reason", msg)
	}

	ctx := context.Background()
	n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = nil
	if _, err := env.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitForBound(t, ns, "waiting"); got != node.Name {
		t.Errorf("bound to %s, want %s", got, node.Name)
	}
}

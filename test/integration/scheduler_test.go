package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// The real binary with the shipped config binds the pods that opt in, leaves
// the default scheduler's pods alone, and leads on its own lease.
func TestShippedConfigSchedulesOptedInPods(t *testing.T) {
	sched := sharedScheduler(t)
	ns := newNamespace(t, nil)
	createNodes(t, schedulableNode(ns, "a").Obj(), schedulableNode(ns, "b").Obj())

	// Created first: by the time our pod is bound, the scheduler's informer
	// has delivered this one too, and it must have been ignored.
	createPod(t, testutil.MakePod(ns, "for-default").SchedulerName("default-scheduler").Obj())
	createPod(t, placementPod(ns, "ours").Obj())

	node := waitForBound(t, ns, "ours")
	if !strings.HasPrefix(node, ns+"-") {
		t.Errorf("pod bound to %q, want one of this test's nodes", node)
	}
	waitForEvent(t, ns, "ours", "Scheduled", "Successfully assigned")
	for _, e := range podEvents(t, ns, "ours") {
		if e.Reason == "Scheduled" && e.ReportingController != schedulerName && e.Source.Component != schedulerName {
			t.Errorf("Scheduled event reported by %q/%q, want %q", e.ReportingController, e.Source.Component, schedulerName)
		}
	}

	other, err := env.client.CoreV1().Pods(ns).Get(context.Background(), "for-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if other.Spec.NodeName != "" || podScheduledCondition(other) != nil {
		t.Errorf("default-scheduler pod was touched: nodeName=%q conditions=%+v", other.Spec.NodeName, other.Status.Conditions)
	}
	if ev := podEvents(t, ns, "for-default"); len(ev) != 0 {
		t.Errorf("default-scheduler pod has events %+v, want none", ev)
	}

	// Leadership is held on our lease, never on the default scheduler's.
	leases := env.client.CoordinationV1().Leases
	var holder string
	err = wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		l, err := leases("placement-scheduler").Get(ctx, "placement-scheduler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *l.Spec.HolderIdentity
		return holder != "", nil
	})
	if err != nil {
		t.Fatalf("lease placement-scheduler/placement-scheduler has no holder: %v", err)
	}
	if _, err := leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system/kube-scheduler lease: got err=%v, want NotFound (we must not take the default scheduler's lease)", err)
	}
	if !strings.Contains(sched.log(), `"Successfully acquired lease" lock="placement-scheduler/placement-scheduler"`) {
		t.Errorf("scheduler log does not show it acquired placement-scheduler/placement-scheduler (holder %q)", holder)
	}
}

// A pod the apiserver accepts but our plugins cannot evaluate (a preferred
// node-affinity term with Gt "x" makes PreScore fail, as upstream's does) gets
// a FailedScheduling event naming the problem, and neither crashes the
// scheduler nor holds up the pods behind it.
func TestBadPodDoesNotBlockOthers(t *testing.T) {
	sched := sharedScheduler(t)
	ns := newNamespace(t, nil)
	createNodes(t, schedulableNode(ns, "a").Label("size", "10").Obj(), schedulableNode(ns, "b").Label("size", "20").Obj())

	createPod(t, placementPod(ns, "bad").
		PreferredNodeTerm(10, testutil.Term(testutil.Expr("size", v1.NodeSelectorOpGt, "x"))).Obj())
	for i := range 5 {
		createPod(t, placementPod(ns, fmt.Sprintf("good-%d", i)).Obj())
	}
	ev := waitForEvent(t, ns, "bad", "FailedScheduling", "for 'Gt', 'Lt' operators, the value must be an integer")
	if !strings.Contains(ev.Message, plugins.NodeAffinityName) {
		t.Errorf("FailedScheduling message %q does not name the plugin %s", ev.Message, plugins.NodeAffinityName)
	}
	for i := range 5 {
		waitForBound(t, ns, fmt.Sprintf("good-%d", i))
	}
	if sched.exited() {
		t.Fatalf("scheduler exited: %v", sched.waitErr)
	}
	bad, err := env.client.CoreV1().Pods(ns).Get(context.Background(), "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bad.Spec.NodeName != "" {
		t.Errorf("bad pod bound to %s, want it left Pending", bad.Spec.NodeName)
	}
}

// --version reports our version and the Kubernetes version we embed.
func TestBinaryVersion(t *testing.T) {
	out, err := exec.Command(env.binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "placement-scheduler ") || !strings.Contains(string(out), "kube-scheduler ") {
		t.Errorf("--version printed %q, want \"placement-scheduler <version> (... kube-scheduler <k8s version> ...)\"", out)
	}
}

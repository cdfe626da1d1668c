package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The real binary with the shipped config binds the pods that opt in, leaves
// the default scheduler's pods alone, and leads on its own lease.
func TestShippedConfigSchedulesOptedInPods(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Obj(), framework.SchedulableNode(ns, "b").Obj())

	// Created first: by the time our pod is bound, the scheduler's informer
	// has delivered this one too, and it must have been ignored.
	env.CreatePod(t, testutil.MakePod(ns, "for-default").SchedulerName("default-scheduler").Obj())
	env.CreatePod(t, testutil.MakePod(ns, "ours").Placement().Obj())

	node := env.WaitForBound(t, ns, "ours")
	if !strings.HasPrefix(node, ns+"-") {
		t.Errorf("pod bound to %q, want one of this test's nodes", node)
	}
	env.WaitForEvent(t, ns, "ours", "Scheduled", "Successfully assigned")
	for _, e := range env.PodEvents(t, ns, "ours") {
		if e.Reason == "Scheduled" && e.ReportingController != testutil.SchedulerName && e.Source.Component != testutil.SchedulerName {
			t.Errorf("Scheduled event reported by %q/%q, want %q", e.ReportingController, e.Source.Component, testutil.SchedulerName)
		}
	}

	other, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "for-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if other.Spec.NodeName != "" || framework.PodCondition(other, v1.PodScheduled) != nil {
		t.Errorf("default-scheduler pod was touched: nodeName=%q conditions=%+v", other.Spec.NodeName, other.Status.Conditions)
	}
	if ev := env.PodEvents(t, ns, "for-default"); len(ev) != 0 {
		t.Errorf("default-scheduler pod has events %+v, want none", ev)
	}

	// Leadership is held on our lease, by a process on this host (the holder
	// is <hostname>_<uuid>), never on the default scheduler's.
	holder := env.WaitForLeaseHolder(t, "")
	if host, _ := os.Hostname(); !strings.HasPrefix(holder, host+"_") {
		t.Errorf("lease %s/%s held by %q, want this host's scheduler (%s_<uuid>)", framework.Namespace, framework.Name, holder, host)
	}
	if _, err := env.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-scheduler", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system/kube-scheduler lease: got err=%v, want NotFound (we must not take the default scheduler's lease)", err)
	}
}

// A pod the apiserver accepts but our plugins cannot evaluate (a preferred
// node-affinity term with Gt "x" makes PreScore fail, as upstream's does) gets
// a FailedScheduling event naming the problem, and neither crashes the
// scheduler nor holds up the pods behind it.
func TestBadPodDoesNotBlockOthers(t *testing.T) {
	sched := env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, framework.SchedulableNode(ns, "a").Label("size", "10").Obj(), framework.SchedulableNode(ns, "b").Label("size", "20").Obj())
	// The bad term fails in scoring, which a cycle with one feasible
	// node skips: the scheduler must know both nodes first. It learns
	// them in order, so a pod bound to b proves it knows a too.
	env.CreatePod(t, testutil.MakePod(ns, "probe").Placement().NodeSelector(map[string]string{"size": "20"}).Obj())
	env.WaitForBound(t, ns, "probe")

	env.CreatePod(t, testutil.MakePod(ns, "bad").Placement().
		PreferredNodeTerm(10, testutil.Term(testutil.Expr("size", v1.NodeSelectorOpGt, "x"))).Obj())
	for i := range 5 {
		env.CreatePod(t, testutil.MakePod(ns, fmt.Sprintf("good-%d", i)).Placement().Obj())
	}
	ev := env.WaitForEvent(t, ns, "bad", "FailedScheduling", "for 'Gt', 'Lt' operators, the value must be an integer")
	if !strings.Contains(ev.Message, nodeaffinity.Name) {
		t.Errorf("FailedScheduling message %q does not name the plugin %s", ev.Message, nodeaffinity.Name)
	}
	for i := range 5 {
		env.WaitForBound(t, ns, fmt.Sprintf("good-%d", i))
	}
	if sched.Exited() {
		t.Fatalf("scheduler exited: %v", sched.Err())
	}
	bad, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bad.Spec.NodeName != "" {
		t.Errorf("bad pod bound to %s, want it left Pending", bad.Spec.NodeName)
	}
}

// --version reports our version and the Kubernetes version we embed.
func TestBinaryVersion(t *testing.T) {
	out, err := exec.Command(env.Binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "placement-scheduler ") || !strings.Contains(string(out), "kube-scheduler ") {
		t.Errorf("--version printed %q, want \"placement-scheduler <version> (... kube-scheduler <k8s version> ...)\"", out)
	}
}

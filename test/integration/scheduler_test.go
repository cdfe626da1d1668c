package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
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

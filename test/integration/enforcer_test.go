package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// A node label removed: the opted-in pod on it is evicted through the
// Eviction API (the apiserver marks it with the DisruptionTarget condition
// the eviction subresource sets) by an enforcer that holds only the shipped
// RBAC and its own Lease, once its grace period is over; its replacement is
// scheduled on the node that now satisfies the rule; a pod that did not opt
// in, breaking the same rule, is left alone.
func TestEnforcerEvictsThroughTheEvictionAPIWithItsOwnRBAC(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	restConfig := enforcerIdentity(t, ns)

	schedConfig := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if err := os.WriteFile(schedConfig, manifests.SchedulerConfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := enforcer.LoadConfig([]byte(`apiVersion: `+enforcerv1alpha1.ConfigAPIVersion+`
kind: `+enforcerv1alpha1.ConfigKind+`
schedulerConfig: `+schedConfig+`
gracePeriod: {nodeAffinity: 1s}
resync: 10s
leaderElection: {leaseNamespace: `+ns+`}
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- enforcer.Run(ctx, cfg, restConfig, nil, buildinfo.Info{Version: "test"}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("enforcer: %v", err)
		}
	})

	a := framework.SchedulableNode(ns, "a").Label("disk", "ssd").Obj()
	b := framework.SchedulableNode(ns, "b").Obj()
	env.CreateNodes(t, a, b)
	pod := func(name string, optIn bool) *v1.Pod {
		p := testutil.MakePod(ns, name).Placement().NodeSelector(map[string]string{"disk": "ssd"}).Obj()
		// Owned by a ReplicaSet (a bare pod is never evicted); no
		// controller runs here, so the test creates the replacement.
		owner := strings.TrimSuffix(name, "-2")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID(ns + "-" + owner), Controller: ptr.To(true)}}
		if optIn {
			p.Annotations = map[string]string{enforcer.Annotation: "node-affinity"}
		}
		return p
	}
	env.CreatePod(t, pod("web", true))
	env.CreatePod(t, pod("bystander", false))
	for _, name := range []string{"web", "bystander"} {
		if got := env.WaitForBound(t, ns, name); got != a.Name {
			t.Fatalf("%s bound to %s, want %s", name, got, a.Name)
		}
	}

	env.SetNodeLabel(t, b.Name, "disk", "ssd")
	env.SetNodeLabel(t, a.Name, "disk", "")
	env.WaitForPod(t, ns, "web", "evicted through the Eviction API", func(p *v1.Pod) bool {
		c := framework.PodCondition(p, v1.DisruptionTarget)
		return p.DeletionTimestamp != nil && c != nil && c.Reason == "EvictionByEvictionAPI"
	})
	env.WaitForEvent(t, ns, "web", "PlacementEvicted", b.Name)

	// What its ReplicaSet would create lands where the rule holds.
	repl := pod("web-2", true)
	env.CreatePod(t, repl)
	if got := env.WaitForBound(t, ns, "web-2"); got != b.Name {
		t.Errorf("replacement bound to %s, want %s", got, b.Name)
	}
	by, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), "bystander", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if by.DeletionTimestamp != nil || framework.PodCondition(by, v1.DisruptionTarget) != nil {
		t.Errorf("the pod that did not opt in was evicted: %+v", by.Status.Conditions)
	}
}

// enforcerIdentity is an identity holding exactly what the kustomize base
// grants the enforcer, its lease Role moved to ns.
func enforcerIdentity(t *testing.T, ns string) *rest.Config {
	t.Helper()
	kubeconfig, _ := env.EnforcerIdentity(t, ns)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

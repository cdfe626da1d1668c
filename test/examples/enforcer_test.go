package examples

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// On the full cluster (the ReplicaSet and disruption controllers, KWOK
// making pods Ready): a Deployment of three opted-in replicas under a PDB
// with maxUnavailable 1 loses its node pool label; the enforcer moves all
// three to the new pool, one at a time, and at no watch event are more than
// one of them unavailable; every pod that left was evicted through the
// Eviction API. The enforcer runs as installed (the shipped RBAC and
// admission policy): it writes its record on the pods it holds, and is
// refused nothing.
func TestEnforcerMovesADeploymentUnderItsPDBOnePodAtATime(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := poolNodes(t, ns, "old", "new-1", "new-2", "new-3")
	deployUnderPDB(t, ns, pool, "web", 3, 1)
	env.Poll(t, "three Ready pods on the old pool and the PDB allowing one disruption", func(ctx context.Context) (bool, error) {
		ready, _, err := readyPods(ctx, ns, ns+"-old")
		if err != nil {
			return false, err
		}
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		return ready == 3 && got.Status.DisruptionsAllowed == 1, err
	})

	// Watch every pod change from here on, starting from a listed state:
	// count the unavailable ones at each event, and see the enforcer's
	// record (written under the shipped admission policy) on the pods it
	// holds.
	maxUnavailable, recorded := 0, false
	w := watchPods(t, ns, "", func(pods map[types.UID]*v1.Pod) {
		healthy := 0
		for _, q := range pods {
			if ready(q) {
				healthy++
			}
			recorded = recorded || q.Annotations[enforcer.RecordAnnotation] != ""
		}
		maxUnavailable = max(maxUnavailable, 3-healthy)
	})

	for _, n := range []string{"new-1", "new-2", "new-3"} {
		env.SetNodeLabel(t, ns+"-"+n, pool, "yes")
	}
	env.SetNodeLabel(t, ns+"-old", pool, "")
	env.Poll(t, "three Ready pods on the new pool and none left on the old one", func(ctx context.Context) (bool, error) {
		_, onOld, err := readyPods(ctx, ns, ns+"-old")
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range []string{"new-1", "new-2", "new-3"} {
			r, _, err := readyPods(ctx, ns, ns+"-"+n)
			if err != nil {
				return false, err
			}
			ready += r
		}
		return ready == 3 && onOld == 0, nil
	})
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if maxUnavailable > 1 {
		t.Errorf("%d pods unavailable at once under maxUnavailable 1", maxUnavailable)
	}
	if !recorded {
		t.Errorf("no pod carried the enforcer's record (%s) while it waited", enforcer.RecordAnnotation)
	}
	if len(w.gone) != 3 {
		t.Errorf("%d pods left, want the three original ones", len(w.gone))
	}
	for uid := range w.gone {
		if w.evictedAt[uid].IsZero() {
			t.Errorf("pod %s left without the Eviction API's DisruptionTarget condition", uid)
		}
	}
	checkRights(t, framework.EnforcerUser)
}

// readyPods counts the pods of ns on node: Ready and not terminating, and all.
func readyPods(ctx context.Context, ns, node string) (ready, all int, err error) {
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		if c := framework.PodCondition(p, v1.PodReady); p.DeletionTimestamp == nil && c != nil && c.Status == v1.ConditionTrue {
			ready++
		}
	}
	return ready, len(list.Items), nil
}

// startEnforcer runs the enforcer in-process beside the examples'
// scheduler, with the same config and a 1 s grace period, as identity
// (the shipped ServiceAccount), until stop.
func startEnforcer(schedConfig []byte, identity *rest.Config) (stop func() error, err error) {
	dir, err := os.MkdirTemp("", "enforcer-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(path, schedConfig, 0o600); err != nil {
		return nil, err
	}
	cfg, err := enforcer.LoadConfig([]byte(`apiVersion: `+enforcerv1alpha1.ConfigAPIVersion+`
kind: `+enforcerv1alpha1.ConfigKind+`
schedulerConfig: `+path+`
gracePeriod: {nodeAffinity: 1s, podAffinity: 1s, podAntiAffinity: 1s}
`), "test config")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan error, 1)
	go func() { done <- enforcer.Run(ctx, cfg, identity, nil, buildinfo.Info{Version: "test"}) }()
	return func() error {
		cancel()
		err := <-done
		_ = os.RemoveAll(dir)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}, nil
}

// A PDB with maxUnavailable 0: the Eviction API refuses (429), the pod is
// reported pdb-blocked and keeps running where it is. (That the enforcer
// then backs off instead of asking again at once is TestPDBRefusalBacksOff
// in internal/enforcer.)
func TestEnforcerNeverBypassesAPDB(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := poolNodes(t, ns, "old", "new")
	deployUnderPDB(t, ns, pool, "db", 1, 0)
	ctx := context.Background()
	var name string
	env.Poll(t, "the pod Ready on the old node and the PDB computed", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		name = list.Items[0].Name
		ready, _, err := readyPods(ctx, ns, ns+"-old")
		if err != nil {
			return false, err
		}
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "db", metav1.GetOptions{})
		return ready == 1 && got.Status.ObservedGeneration == got.Generation, err
	})
	env.SetNodeLabel(t, ns+"-new", pool, "yes")
	env.SetNodeLabel(t, ns+"-old", pool, "")
	env.WaitForEvent(t, ns, name, "PlacementEvictionBlocked", "disruption budget")
	p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod under a PDB with maxUnavailable 0 is gone: %v", err)
	}
	if p.DeletionTimestamp != nil || p.Spec.NodeName != ns+"-old" {
		t.Errorf("the pod was disrupted: node %s, deleting %v", p.Spec.NodeName, p.DeletionTimestamp)
	}
	checkRights(t, framework.EnforcerUser)
}

// poolNodes creates KWOK nodes <ns>-<name> for the test; the first is in
// the returned pool (a node label of the test's own), the others not yet.
func poolNodes(t *testing.T, ns string, names ...string) (pool string) {
	t.Helper()
	pool = "enforcer-pool-" + ns
	for i, name := range names {
		n := framework.SchedulableNode(ns, name).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		if i == 0 {
			n.Labels[pool] = "yes"
		}
		env.CreateNodes(t, n)
	}
	return pool
}

// deployUnderPDB creates a Deployment name (label app=name) of replicas
// opted-in pods confined to pool, under a PDB with maxUnavailable.
func deployUnderPDB(t *testing.T, ns, pool, name string, replicas, maxUnavailable int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	pod := testutil.MakePod(ns, name).Placement().NodeSelector(map[string]string{pool: "yes"}).Obj()
	pod.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}} // KWOK nodes' first seconds
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{enforcer.Annotation: "all"}},
				Spec:       pod.Spec,
			},
		},
	}
	mu := intstr.FromInt32(maxUnavailable)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	ctx := context.Background()
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

package examples

import (
	"context"
	"fmt"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// Pods with a generic ephemeral volume on a WaitForFirstConsumer class. KWOK
// mounts nothing, and no provisioner runs here, so the class has none
// (kubernetes.io/no-provisioner) and each node the test wants usable gets a
// free local PersistentVolume: the scheduler binds a pod's claim (created by
// the ephemeral-volume controller) to the volume on the node it picks, and
// kube-controller-manager's binder completes the binding. A node without a
// volume fits no such pod.

// localVolumes creates a WaitForFirstConsumer class of the test's own and
// one free 1Gi local volume of it on each of nodes; it returns the class.
func localVolumes(t *testing.T, ns string, nodes ...string) string {
	t.Helper()
	class := testutil.MakeWaitForFirstConsumerClass("local-" + ns)
	env.Create(t, class)
	for _, n := range nodes {
		env.Create(t, testutil.MakeLocalPV(n, class.Name, "1Gi", testutil.Term(testutil.Expr(v1.LabelHostname, v1.NodeSelectorOpIn, n))))
	}
	return class.Name
}

// withEphemeralVolume adds a generic ephemeral volume "data" of class to spec.
func withEphemeralVolume(spec *v1.PodSpec, class string) {
	spec.Volumes = append(spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
	}}})
	spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/data"})
}

// boundClaim is the claim of pod's ephemeral volume "data", once bound.
func boundClaim(ctx context.Context, pod *v1.Pod) (bool, error) {
	pvc, err := env.Client.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, pod.Name+"-data", metav1.GetOptions{})
	if err != nil {
		return false, nil // not created yet
	}
	return pvc.Status.Phase == v1.ClaimBound && metav1.IsControlledBy(pvc, pod), nil
}

// The enforcer moves a pod with a generic ephemeral volume: an opted-in
// Deployment pod runs on "old", its claim bound to old's volume; "old"
// leaves the pod's node pool and "new" joins it. The enforcer's placement
// of the replacement models the claim the ephemeral-volume controller will
// create for it (its own, unbound), which VolumeBinding binds to new's free
// volume: the pod is evicted through the Eviction API, and its replacement
// runs on "new" with a claim of its own bound there.
func TestEnforcerMovesAPodWithAnEphemeralVolume(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := poolNodes(t, ns, "old", "new")
	old, target := ns+"-old", ns+"-new"
	class := localVolumes(t, ns, old, target)
	labels := map[string]string{"app": "web"}
	pod := testutil.MakePod(ns, "web").Placement().NodeSelector(map[string]string{pool: "yes"}).Obj()
	pod.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}} // KWOK nodes' first seconds
	withEphemeralVolume(&pod.Spec, class)
	env.Create(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{enforcer.Annotation: "all"}},
				Spec:       pod.Spec,
			},
		},
	})
	var first *v1.Pod
	env.Poll(t, "the pod Ready on old with its claim bound", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, err
		}
		first = &list.Items[0]
		if !ready(first) || first.Spec.NodeName != old {
			return false, nil
		}
		return boundClaim(ctx, first)
	})
	w := watchPods(t, ns, "", func(map[types.UID]*v1.Pod) {})

	env.SetNodeLabel(t, target, pool, "yes")
	env.SetNodeLabel(t, old, pool, "")
	var moved *v1.Pod
	env.Poll(t, "a replacement Ready on new with its own claim bound, and the first pod gone", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		moved = nil
		for i := range list.Items {
			p := &list.Items[i]
			if p.UID == first.UID {
				return false, nil
			}
			if p.Spec.NodeName == target && ready(p) && p.DeletionTimestamp == nil {
				moved = p
			}
		}
		if moved == nil {
			return false, nil
		}
		return boundClaim(ctx, moved)
	})
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.evictedAt[first.UID].IsZero() {
		t.Errorf("pod %s left without the Eviction API's DisruptionTarget condition", first.Name)
	}
}

// `kubectl placement simulate -f` places the replicas of a Deployment with
// a generic ephemeral volume (before the claims exist, as before the
// Deployment is applied): three nodes of the test's pool, a free volume on
// two of them, and two replicas that must not share a host. Simulate puts
// them on the two nodes with a volume, none Pending; applied, the scheduler
// does the same.
func TestSimulatePlacesReplicasWithEphemeralVolumes(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := "claims-" + ns
	var nodes []string
	for _, short := range []string{"a1", "a2", "b1"} {
		n := framework.SchedulableNode(ns, short).Label(pool, "yes").Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		env.CreateNodes(t, n)
		nodes = append(nodes, n.Name)
	}
	waitPoolUp(t, nodes)
	withVolume := nodes[:2]
	class := localVolumes(t, ns, withVolume...)

	spec := testutil.MakePod(ns, "web").Placement().NodeSelector(map[string]string{pool: "yes"}).Obj().Spec
	spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: v1.LabelHostname},
	}}}
	withEphemeralVolume(&spec, class)
	d := newDeployment(ns, "web", 2, spec)
	dir := t.TempDir()
	file := writeYAML(t, dir, "web.yaml", d)
	configFile := profilePoolConfig(t, dir)

	predicted := simulate(t, "-f", file, "--config", configFile, "--kubeconfig", env.Kubeconfig)
	var want []string
	for _, r := range predicted.Replicas {
		if r.Node == "" {
			t.Errorf("simulate left %s Pending: %s", r.Pod, r.Reason)
		}
		want = append(want, r.Node)
	}
	sort.Strings(want)
	if predicted.Placed != 2 || predicted.Pending != 0 || fmt.Sprint(want) != fmt.Sprint(withVolume) {
		t.Errorf("simulate: placed %d pending %d on %v, want 2 and 0 on %v", predicted.Placed, predicted.Pending, want, withVolume)
	}

	env.Create(t, d)
	// A replica is Unschedulable until the ephemeral-volume controller has
	// created its claim, then scheduled: wait for both to be bound.
	var bound []string
	env.Poll(t, "both replicas bound", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		bound = nil
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				bound = append(bound, p.Spec.NodeName)
			}
		}
		return len(bound) == 2, nil
	})
	sort.Strings(bound)
	if fmt.Sprint(bound) != fmt.Sprint(want) {
		t.Errorf("the scheduler placed the replicas on %v; simulate predicted %v", bound, want)
	}
}

package examples

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// TestSimulateStatefulSetVolumes: StatefulSets with a volumeClaimTemplate
// on a WaitForFirstConsumer class whose volumes can only be made in
// zone-a, on four KWOK nodes of the test's own pool (a1, a2 in zone-a, b1,
// b2 in zone-b). `kubectl placement simulate -f` predicts where the
// replicas go; then the StatefulSet is applied (podManagementPolicy
// Parallel: all pods at once) and the scheduler must agree:
//
//   - three replicas: all in zone-a;
//   - three replicas that must not share a host: two in zone-a, one
//     Pending (not in zone-b: its volume cannot be made there);
//   - three replicas whose ordinal 0 holds its claim already, bound to a
//     volume in zone-b: replica 0 in zone-b, the others in zone-a.
//
// No provisioner serves the class, so the test plays one: once the
// scheduler has picked a node for a claim (VolumeBinding's PreBind writes
// volume.kubernetes.io/selected-node on it and waits for the binding), it
// creates a volume for the claim in that node's zone, which
// kube-controller-manager's volume binder binds, and the pod is bound.
func TestSimulateStatefulSetVolumes(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	pool := "sts-" + ns
	zoneOf := map[string]string{}
	var names []string
	for _, short := range []string{"a1", "a2", "b1", "b2"} {
		zone := "zone-" + short[:1]
		n := framework.SchedulableNode(ns, short).Label(pool, "yes").Label(v1.LabelTopologyZone, zone).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		env.CreateNodes(t, n)
		names = append(names, n.Name)
		zoneOf[n.Name] = zone
	}
	waitPoolUp(t, names)
	class := testutil.MakeProvisionedClass("zone-a-"+ns, "disk.example.com", "zone-a")
	env.Create(t, class)
	provision(t, ns, class.Name, zoneOf)

	dir := t.TempDir()
	configFile := profilePoolConfig(t, dir)
	// check simulates set, applies it and compares: the zone of each
	// replica by ordinal ("" Pending), simulate's and the scheduler's.
	check := func(t *testing.T, set *appsv1.StatefulSet, want []string) {
		t.Helper()
		file := writeYAML(t, dir, set.Name+".yaml", set)
		predicted := simulate(t, "-f", file, "--config", configFile, "--kubeconfig", env.Kubeconfig)
		got := make([]string, len(predicted.Replicas))
		for i, r := range predicted.Replicas {
			got[i] = zoneOf[r.Node]
		}
		if !slices.Equal(got, want) {
			t.Errorf("simulate: zones %q by ordinal (placed %d, pending %d), want %q", got, predicted.Placed, predicted.Pending, want)
		}

		env.Create(t, set)
		bound, pending := settle(t, ns, set.Spec.Template.Labels["app"], len(want))
		var zones []string
		for _, n := range bound {
			zones = append(zones, zoneOf[n])
		}
		for range pending {
			zones = append(zones, "")
		}
		sort.Strings(zones)
		sortedWant := slices.Clone(want)
		sort.Strings(sortedWant)
		if !slices.Equal(zones, sortedWant) {
			t.Errorf("the scheduler: zones %q, simulate predicted %q", zones, sortedWant)
		}
		if want[0] != "" {
			pod, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), set.Name+"-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if zoneOf[pod.Spec.NodeName] != want[0] {
				t.Errorf("the scheduler put %s on %q in %q, simulate predicted %q", pod.Name, pod.Spec.NodeName, zoneOf[pod.Spec.NodeName], want[0])
			}
		}
		// The controller's claims are the ones simulate placed with.
		for i := range want {
			name := fmt.Sprintf("data-%s-%d", set.Name, i)
			if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
				t.Errorf("claim %s: %v", name, err)
			}
		}
	}

	t.Run("AllInTheClassZone", func(t *testing.T) {
		check(t, claimingSet(ns, "all", pool, class.Name, false), []string{"zone-a", "zone-a", "zone-a"})
	})
	t.Run("OnePerHost", func(t *testing.T) {
		check(t, claimingSet(ns, "spread", pool, class.Name, true), []string{"zone-a", "zone-a", ""})
	})
	t.Run("ExistingClaimKept", func(t *testing.T) {
		// Ordinal 0's claim, bound to a volume in zone-b before the set
		// exists (a set scaled down and up again, a restored backup).
		pvc := testutil.MakePVC(ns, "data-kept-0", class.Name, "1Gi")
		env.Create(t, pvc, zonalVolume(ns, pvc, "zone-b"))
		env.Poll(t, "data-kept-0 bound", func(ctx context.Context) (bool, error) {
			got, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pvc.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == v1.ClaimBound, err
		})
		check(t, claimingSet(ns, "kept", pool, class.Name, false), []string{"zone-b", "zone-a", "zone-a"})
	})
}

// profilePoolConfig writes the config the examples' scheduler runs (the
// profile-pool example's two profiles) into dir, for simulate's --config.
func profilePoolConfig(t *testing.T, dir string) string {
	t.Helper()
	config, err := manifests.Example("profile-pool/scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(file, config, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// writeYAML writes obj as YAML into dir/name, for simulate's -f.
func writeYAML(t *testing.T, dir, name string, obj any) string {
	t.Helper()
	raw, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// claimingSet is a StatefulSet of three replicas of app name, kept to
// pool, each with a claim "data" of class, one per host when spread.
func claimingSet(ns, name, pool, class string, spread bool) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	spec := testutil.MakePod(ns, name).Placement().NodeSelector(map[string]string{pool: "yes"}).Obj().Spec
	if spread {
		spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: v1.LabelHostname},
		}}}
	}
	spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To[int32](3),
			Selector:             &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{*testutil.MakePVC("", "data", class, "1Gi")},
		},
	}
}

// zonalVolume is a 1Gi volume usable in zone only, made for pvc (its
// claimRef), as a provisioner makes one.
func zonalVolume(ns string, pvc *v1.PersistentVolumeClaim, zone string) *v1.PersistentVolume {
	pv := testutil.MakeLocalPV(ns+"-"+pvc.Name, ptr.Deref(pvc.Spec.StorageClassName, ""), "1Gi",
		testutil.Term(testutil.Expr(v1.LabelTopologyZone, v1.NodeSelectorOpIn, zone)))
	pv.Labels = map[string]string{"test-namespace": ns}
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: pvc.Name, UID: pvc.UID}
	pv.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	return pv
}

// provision plays class's provisioner in ns until the test ends: each
// claim of class the scheduler has picked a node for gets a volume in that
// node's zone. The volumes are deleted when the test ends.
func provision(t *testing.T, ns, class string, zoneOf map[string]string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		c := env.Client.CoreV1().PersistentVolumes()
		list, err := c.List(context.Background(), metav1.ListOptions{LabelSelector: "test-namespace=" + ns})
		if err != nil {
			t.Errorf("listing the test's volumes: %v", err)
			return
		}
		for _, pv := range list.Items {
			if _, err := c.Patch(context.Background(), pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clearing finalizers of %s: %v", pv.Name, err)
			}
			if err := c.Delete(context.Background(), pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", pv.Name, err)
			}
		}
	})
	go func() {
		defer close(done)
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			list, err := env.Client.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil // retried on the next tick; the test's waits report what did not happen
			}
			for i := range list.Items {
				pvc := &list.Items[i]
				node := pvc.Annotations["volume.kubernetes.io/selected-node"]
				if node == "" || pvc.Spec.VolumeName != "" || ptr.Deref(pvc.Spec.StorageClassName, "") != class {
					continue
				}
				_, err := env.Client.CoreV1().PersistentVolumes().Create(ctx, zonalVolume(ns, pvc, zoneOf[node]), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
					t.Errorf("provisioning a volume for %s on %s: %v", pvc.Name, node, err)
				}
			}
			return false, nil
		})
	}()
}

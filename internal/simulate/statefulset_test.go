package simulate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// twoZones: a1, a2 in zone a, b1, b2 in zone b.
func twoZones() *explain.Cluster {
	return &explain.Cluster{Namespaces: ns(), Nodes: []*v1.Node{
		zoned("a1", "a", 110), zoned("a2", "a", 110), zoned("b1", "b", 110), zoned("b2", "b", 110),
	}}
}

// provisionedIn is a WaitForFirstConsumer class of a dynamic provisioner
// whose volumes can only be made in zone.
func provisionedIn(name, zone string) *storagev1.StorageClass {
	return tu.MakeProvisionedClass(name, "disk.example.com", zone)
}

// claimTemplate is a volumeClaimTemplate named name of class (nil: none
// named).
func claimTemplate(name string, class *string) v1.PersistentVolumeClaim {
	pvc := tu.MakePVC("", name, "", "1Gi")
	pvc.Spec.StorageClassName = class
	return *pvc
}

func statefulSet(name string, replicas int32, tmpl v1.PodTemplateSpec, claims ...v1.PersistentVolumeClaim) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{Replicas: int32p(replicas), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: tmpl, VolumeClaimTemplates: claims, PodManagementPolicy: appsv1.ParallelPodManagement},
	}
}

func nodesOf(res *simulatev1alpha1.PlacementSimulation) []string {
	out := make([]string, len(res.Replicas))
	for i, r := range res.Replicas {
		out[i] = r.Node
	}
	return out
}

func zonesOf(res *simulatev1alpha1.PlacementSimulation) []string {
	out := make([]string, len(res.Replicas))
	for i, r := range res.Replicas {
		out[i] = r.Topology
	}
	return out
}

// The problem as a user meets it: three replicas that must not share a
// host, a claim template on a WaitForFirstConsumer class allowed only in
// zone a, two nodes per zone. VolumeBinding keeps every replica in zone a:
// two placed there, the third Pending on its volume, not on zone b.
func TestStatefulSetClaimsFollowTheClassTopology(t *testing.T) {
	c := twoZones()
	c.Others = append(c.Others, provisionedIn("zonal", "a"))
	tmpl := podTemplate("web")
	tmpl.Spec.Affinity = antiHostname("web")
	res := run(t, c, statefulSet("web", 3, tmpl, claimTemplate("data", ptr.To("zonal"))))
	if res.Placed != 2 || res.Pending != 1 {
		t.Fatalf("placed %d pending %d on %q, want 2 placed in zone a and 1 Pending", res.Placed, res.Pending, nodesOf(res))
	}
	if got, want := zonesOf(res), []string{"a", "a", ""}; !slices.Equal(got, want) {
		t.Errorf("zones %q, want %q", got, want)
	}
	if reason := res.Replicas[2].Reason; !strings.Contains(reason, "2 node(s) didn't find available persistent volumes to bind") {
		t.Errorf("the Pending replica's reason %q does not name its volume", reason)
	}

	// Without the anti-affinity, all three fit in zone a.
	c = twoZones()
	c.Others = append(c.Others, provisionedIn("zonal", "a"))
	res = run(t, c, statefulSet("web", 3, podTemplate("web"), claimTemplate("data", ptr.To("zonal"))))
	if got, want := zonesOf(res), []string{"a", "a", "a"}; res.Placed != 3 || !slices.Equal(got, want) {
		t.Errorf("placed %d in zones %q, want 3 in %q", res.Placed, got, want)
	}
}

// An ordinal that exists already keeps its claim as it is: data-web-0 is
// bound to a volume in zone b, which pins replica 0 there, while the new
// ordinals' claims follow the class to zone a. The note counts both.
func TestStatefulSetExistingClaimIsHonoured(t *testing.T) {
	c := twoZones()
	c.Others = append(append(c.Others, provisionedIn("zonal", "a")), boundTo("default", "data-web-0", "zonal", "b")...)
	replicas, notes, err := Workloads([]runtime.Object{statefulSet("web", 3, podTemplate("web"), claimTemplate("data", ptr.To("zonal")))}, "default", c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "StatefulSet/web: 2 PVC(s) modelled from volumeClaimTemplates, 1 existing"; !slices.Contains(notes, want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
	res, err := Run(t.Context(), c, shipped(t), replicas, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := zonesOf(res), []string{"b", "a", "a"}; res.Placed != 3 || !slices.Equal(got, want) {
		t.Errorf("placed %d in zones %q, want 3 in %q (replica 0 where its volume is)", res.Placed, got, want)
	}
	for _, o := range c.Others {
		if p, ok := o.(*v1.PersistentVolumeClaim); ok && p.Name == "data-web-0" && p.UID != "uid-data-web-0" {
			t.Errorf("the existing claim was replaced by %+v", p)
		}
	}
}

// The claims and volumes are the controller's: volume "data" on claim
// data-web-<ordinal> (in place of the template's own "data" volume; other
// volumes stay), ordinals from spec.ordinals.start, the template's labels
// and the set's selector labels on the claim, the default class (the
// newest of two, as the DefaultStorageClass admission plugin picks) for a
// template that names none, unbound and Pending; and the replicas follow
// that class's topology.
func TestStatefulSetClaimsAsTheControllerMakesThem(t *testing.T) {
	c := twoZones()
	old := provisionedIn("old-default", "b")
	old.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	old.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	def := provisionedIn("default-a", "a")
	def.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	def.CreationTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c.Others = append(c.Others, old, def, provisionedIn("zonal-b", "b"))

	tmpl := podTemplate("web")
	tmpl.Spec.Volumes = []v1.Volume{
		{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
	}
	data := claimTemplate("data", nil)
	data.Labels = map[string]string{"tier": "storage"}
	set := statefulSet("web", 2, tmpl, data, claimTemplate("logs", ptr.To("zonal-b")))
	set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
	set.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	replicas, _, err := Workloads([]runtime.Object{set}, "default", c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range replicas {
		names = append(names, r.Pod.Name+" index "+r.Pod.Labels[appsv1.PodIndexLabel])
	}
	if want := []string{"web-5 index 5", "web-6 index 6"}; !slices.Equal(names, want) {
		t.Fatalf("replicas %q, want %q", names, want)
	}
	var vols []string
	for _, v := range replicas[1].Pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			vols = append(vols, v.Name+"="+v.PersistentVolumeClaim.ClaimName)
		case v.EmptyDir != nil:
			vols = append(vols, v.Name+"=emptyDir")
		}
	}
	if want := []string{"data=data-web-6", "logs=logs-web-6", "config=emptyDir"}; !slices.Equal(vols, want) {
		t.Errorf("web-6's volumes %q, want %q", vols, want)
	}
	claims := map[string]*v1.PersistentVolumeClaim{}
	for _, o := range c.Others {
		if p, ok := o.(*v1.PersistentVolumeClaim); ok {
			claims[p.Name] = p
		}
	}
	if len(claims) != 4 {
		t.Errorf("%d claims in the cluster, want data and logs of web-5 and web-6", len(claims))
	}
	got := claims["data-web-6"]
	if got == nil {
		t.Fatal("no claim data-web-6")
	}
	if want := map[string]string{"tier": "storage", "app": "web"}; !reflect.DeepEqual(got.Labels, want) {
		t.Errorf("data-web-6's labels %v, want %v", got.Labels, want)
	}
	if class := ptr.Deref(got.Spec.StorageClassName, "<nil>"); class != "default-a" {
		t.Errorf("data-web-6's class %s, want the newest default, default-a", class)
	}
	if class := ptr.Deref(claims["logs-web-5"].Spec.StorageClassName, "<nil>"); class != "zonal-b" {
		t.Errorf("logs-web-5's class %s, want zonal-b as the template names it", class)
	}
	if got.Namespace != "default" || got.Spec.VolumeName != "" || got.Status.Phase != v1.ClaimPending ||
		ptr.Deref(got.Spec.VolumeMode, "") != v1.PersistentVolumeFilesystem {
		t.Errorf("data-web-6 is not a new unbound claim as the apiserver holds it: %+v", got)
	}
	if set.Spec.VolumeClaimTemplates[0].Labels["app"] != "" {
		t.Error("the StatefulSet's template was changed")
	}

	// data on default-a wants zone a, logs on zonal-b zone b: no node has both.
	res, err := Run(t.Context(), c, shipped(t), replicas, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pending != 2 {
		t.Errorf("placed %d on %q, want both Pending: their two claims' classes allow no common zone", res.Placed, nodesOf(res))
	}
}

// Without a default class a claim that names none stays without: unbound
// and of no class, VolumeBinding takes it for an Immediate claim the volume
// controller has not bound, and the replica stays Pending, as the
// scheduler leaves it.
func TestStatefulSetClaimWithoutAnyClass(t *testing.T) {
	c := twoZones()
	res := run(t, c, statefulSet("web", 1, podTemplate("web"), claimTemplate("data", nil)))
	if res.Pending != 1 || !strings.Contains(res.Replicas[0].Reason, "unbound immediate PersistentVolumeClaims") {
		t.Errorf("placed %d, reason %q; want Pending on an unbound immediate claim", res.Placed, res.Replicas[0].Reason)
	}
}

// Generic ephemeral volumes and claims from a ResourceClaimTemplate in a
// Deployment's template: every replica gets its own claims as their
// controllers create them (modelled by the placer), so the replicas are
// placed where the class's topology and the devices allow, none Pending
// for a claim not created yet.
func TestDeploymentClaimsFromTemplates(t *testing.T) {
	c := twoZones()
	c.Others = append(c.Others, provisionedIn("zonal", "a"))
	tmpl := podTemplate("web")
	tmpl.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: claimTemplate("", ptr.To("zonal")).Spec},
	}}}}
	res := run(t, c, deployment("web", 3, tmpl))
	if got, want := zonesOf(res), []string{"a", "a", "a"}; res.Placed != 3 || !slices.Equal(got, want) {
		t.Errorf("ephemeral volumes: placed %d in zones %q, want 3 in %q", res.Placed, got, want)
	}

	c = twoZones()
	request := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}},
	}}}
	c.Others = append(c.Others, tu.MakeDeviceClass("gpu", "gpu.example.com"),
		tu.MakeNodeResourceSlice("a2-gpus", "gpu.example.com", "a2", "gpu-0"),
		tu.MakeNodeResourceSlice("b1-gpus", "gpu.example.com", "b1", "gpu-0"),
		&resourceapi.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "one-gpu"},
			Spec: resourceapi.ResourceClaimTemplateSpec{Spec: request}})
	tmpl = podTemplate("train")
	tmpl.Spec.Affinity = antiHostname("train")
	tmpl.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	tmpl.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	res = run(t, c, deployment("train", 2, tmpl))
	got := nodesOf(res)
	slices.Sort(got)
	if want := []string{"a2", "b1"}; res.Placed != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("claim templates: placed %d on %q, want 2 on %q (the nodes with a device)", res.Placed, got, want)
	}
}

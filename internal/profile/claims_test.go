package profile

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

const testNS = "shop"

// placerOver builds the shipped profile's Placer over a fake clientset
// holding objs, with pods bound on nodes, its informers synced, in an
// open mutation session.
func placerOver(t *testing.T, nodes []*v1.Node, pods []*v1.Pod, objs ...runtime.Object) (*Placer, *Sources) {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	t.Cleanup(cancel)
	cfg, err := LoadConfig(manifests.SchedulerConfig(), "shipped config")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]runtime.Object{}, objs...)
	for _, n := range nodes {
		all = append(all, n)
	}
	for _, p := range pods {
		all = append(all, p)
	}
	client := fake.NewSimpleClientset(all...) //nolint:staticcheck // as explain's: read-only, no field management needed
	src, err := NewSources(ctx, client, informers.NewSharedInformerFactory(client, 0))
	if err != nil {
		t.Fatal(err)
	}
	fw, err := Build(ctx, &cfg.Profiles[0], src, k8sline.NewSnapshot(pods, nodes), noNominated{})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Sync(ctx, ctx.Done()); err != nil {
		t.Fatal(err)
	}
	if err := fw.Snapshot.StartMutations(); err != nil {
		t.Fatal(err)
	}
	return NewPlacer(fw), src
}

// noNominated: no pod is nominated to any node.
type noNominated struct{}

func (noNominated) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (noNominated) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (noNominated) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (noNominated) NominatedPodsForNode(string) []fwk.PodInfo                     { return nil }

func zoneNode(name, zone string) *v1.Node {
	return tu.MakeNode(name).Label(v1.LabelTopologyZone, zone).Capacity("8", "16Gi", 20).Ready().Obj()
}

// ephemeralPod is a Deployment's pod, running on node, with a generic
// ephemeral volume "data" of storageClass.
func ephemeralPod(name, node, storageClass string) *v1.Pod {
	p := tu.MakePod(testNS, name).UID("uid-"+name).Placement().NodeName(node).Request("100m", "100Mi").Obj()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs", Controller: ptr.To(true)}}
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "data"}},
			Spec: v1.PersistentVolumeClaimSpec{
				AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				StorageClassName: ptr.To(storageClass),
				Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		},
	}}})
	return p
}

// boundEphemeralClaim is the claim the ephemeral-volume controller created
// for pod's volume "data", bound to a local volume on pod's node: what the
// cluster holds for a running pod.
func boundEphemeralClaim(pod *v1.Pod, storageClass string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	pv := tu.MakeLocalPV("pv-"+pod.Name, storageClass, "1Gi", tu.Term(tu.Expr(v1.LabelHostname, v1.NodeSelectorOpIn, pod.Spec.NodeName)))
	pvc := tu.MakePVC(testNS, pod.Name+"-data", storageClass, "1Gi")
	pvc.UID = types.UID("pvc-" + pod.Name)
	pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	tu.BindVolume(pvc, pv)
	return pvc, pv
}

func provisioningClass(name string, zones ...string) *storagev1.StorageClass {
	return tu.MakeProvisionedClass(name, "csi.example.com", zones...)
}

// feasible lists the nodes the replacement of pod passes PreFilter and
// Filter on, its claims modelled.
func feasible(t *testing.T, p *Placer, pod *v1.Pod) []string {
	t.Helper()
	ctx := context.Background()
	nodes, err := p.fw.Snapshot.Lister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := p.fw.AsCreated(ctx, replacement(pod), func(repl *v1.Pod) error {
		for _, ni := range nodes {
			ok, err := p.fits(ctx, repl, ni.Node().Name)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, ni.Node().Name)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// A running pod with a generic ephemeral volume on a WaitForFirstConsumer
// class: its own claim is bound to a volume on its node and owned by it,
// so the replacement (a pod of its own UID) fits another node only with
// the claim the ephemeral-volume controller would create for it.
func TestReplacementWithEphemeralVolumeFits(t *testing.T) {
	pod := ephemeralPod("web-1", "a1", "wffc")
	pvc, pv := boundEphemeralClaim(pod, "wffc")
	p, _ := placerOver(t, []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a"), zoneNode("b1", "b")}, []*v1.Pod{pod},
		provisioningClass("wffc"), pvc, pv)
	if got, want := feasible(t, p, pod), []string{"a1", "a2", "b1"}; !slices.Equal(got, want) {
		t.Errorf("feasible nodes %q, want %q", got, want)
	}
	node, err := p.Place(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if node != "a2" && node != "b1" {
		t.Errorf("replacement placed on %q, want a2 or b1", node)
	}
}

// The class's allowedTopologies are honoured as VolumeBinding sees them:
// the model claim can be provisioned in zone b only.
func TestReplacementEphemeralVolumeAllowedTopologies(t *testing.T) {
	pod := ephemeralPod("web-1", "a1", "zonal")
	pvc, pv := boundEphemeralClaim(pod, "zonal")
	p, _ := placerOver(t, []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a"), zoneNode("b1", "b"), zoneNode("b2", "b")}, []*v1.Pod{pod},
		provisioningClass("zonal", "b"), pvc, pv)
	if got, want := feasible(t, p, pod), []string{"b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("feasible nodes %q, want %q", got, want)
	}
	node, err := p.Place(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if node != "b1" && node != "b2" {
		t.Errorf("replacement placed on %q, want a node of zone b", node)
	}
}

// A class without a provisioner and no free volume: VolumeBinding decides
// on the model claim and finds nowhere to bind it.
func TestReplacementEphemeralVolumeWithoutVolumes(t *testing.T) {
	pod := ephemeralPod("web-1", "a1", "static")
	pvc, pv := boundEphemeralClaim(pod, "static")
	free := tu.MakeLocalPV("free-a2", "static", "1Gi", tu.Term(tu.Expr(v1.LabelHostname, v1.NodeSelectorOpIn, "a2")))
	free.Status.Phase = v1.VolumeAvailable
	p, _ := placerOver(t, []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a")}, []*v1.Pod{pod},
		tu.MakeWaitForFirstConsumerClass("static"), pvc, pv, free)
	node, err := p.Place(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if node != "a2" {
		t.Errorf("replacement placed on %q, want a2, the node with a free volume", node)
	}
	// The free volume is not taken by the placement: a second pod of the
	// same kind finds it too (nothing was assumed or written).
	other := ephemeralPod("web-2", "a1", "static")
	if got := feasible(t, p, other); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("second replacement's feasible nodes %q, want [a2]", got)
	}
}

// The models are seen by the framework's plugins during their placement
// only: the informers the caller shares (the enforcer's judge reads them)
// never hold one, another placement never sees one, and concurrent
// placements on one framework each see their own.
func TestModelsStayInTheirPlacement(t *testing.T) {
	pod := ephemeralPod("web-1", "a1", "wffc")
	pvc, pv := boundEphemeralClaim(pod, "wffc")
	p, src := placerOver(t, []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a")}, []*v1.Pod{pod}, provisioningClass("wffc"), pvc, pv)
	real := src.Informers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(testNS)
	seen := p.fw.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(testNS)
	owner := func(c *v1.PersistentVolumeClaim, err error) types.UID {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c.OwnerReferences[0].UID
	}
	repl := replacement(pod)
	if err := p.fw.AsCreated(context.Background(), repl, func(*v1.Pod) error {
		if got := owner(seen.Get("web-1-data")); got != repl.UID {
			t.Errorf("the framework's lister gives web-1-data owned by %s, want the replacement %s", got, repl.UID)
		}
		if got := owner(real.Get("web-1-data")); got != pod.UID {
			t.Errorf("the shared informer gives web-1-data owned by %s, want the running pod %s", got, pod.UID)
		}
		all, err := real.List(labels.Everything())
		if err != nil || len(all) != 1 {
			t.Errorf("the shared informer lists %d claims (%v), want the one real claim", len(all), err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := owner(seen.Get("web-1-data")); got != pod.UID {
		t.Errorf("after the placement the framework's lister gives web-1-data owned by %s, want the running pod %s", got, pod.UID)
	}

	// Concurrent placements of pods with claims of their own.
	pods := []*v1.Pod{ephemeralPod("web-2", "", "wffc"), ephemeralPod("web-3", "", "wffc"), ephemeralPod("web-4", "", "wffc")}
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for range 20 {
		for _, q := range pods {
			wg.Go(func() {
				_ = p.fw.AsCreated(context.Background(), q, func(*v1.Pod) error {
					for _, r := range pods {
						c, err := seen.Get(r.Name + "-data")
						if r == q && (err != nil || c.OwnerReferences[0].UID != q.UID) {
							errs <- "placement of " + q.Name + " does not see its own claim"
						}
						if r != q && err == nil {
							errs <- "placement of " + q.Name + " sees " + r.Name + "'s claim"
						}
					}
					return nil
				})
			})
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// A pod whose claim comes from a ResourceClaimTemplate: the running pod's
// claim is allocated on its node's only device; the replacement gets a
// claim of its own from the template, which DynamicResources (enabled in
// the shipped profile of every line) allocates on the one node with a free
// device (not a2, which has none, nor a1, whose device the running pod's
// claim holds).
func TestReplacementGetsItsClaimFromTheTemplate(t *testing.T) {
	nodes := []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a"), zoneNode("b1", "b")}
	class := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}}
	slice := func(node string) *resourceapi.ResourceSlice {
		return &resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"},
			Spec: resourceapi.ResourceSliceSpec{
				Driver:   "gpu.example.com",
				Pool:     resourceapi.ResourcePool{Name: node, ResourceSliceCount: 1},
				NodeName: ptr.To(node),
				Devices:  []resourceapi.Device{{Name: "gpu-0"}},
			},
		}
	}
	request := resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu", AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}},
	}}}
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "one-gpu"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: request},
	}
	pod := tu.MakePod(testNS, "train-1").UID("uid-train-1").Placement().NodeName("a1").Obj()
	pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	pod.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("train-1-gpu-x7k2p")}}
	own := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "train-1-gpu-x7k2p", UID: "claim-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}},
		Spec: request,
		Status: resourceapi.ResourceClaimStatus{
			Allocation: &resourceapi.AllocationResult{
				Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
					{Request: "gpu", Driver: "gpu.example.com", Pool: "a1", Device: "gpu-0"},
				}},
				NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{tu.FieldTerm(tu.Expr("metadata.name", v1.NodeSelectorOpIn, "a1"))}},
			},
			ReservedFor: []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
		},
	}
	p, src := placerOver(t, nodes, []*v1.Pod{pod}, class, slice("a1"), slice("b1"), tmpl, own)
	// The DRA manager learns of allocated devices from its claim cache's
	// events, which follow the informer's sync.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		devices, err := src.dra.ResourceClaims().ListAllAllocatedDevices()
		return err == nil && devices.Len() == 1, nil
	}); err != nil {
		t.Fatalf("the running pod's device never counted as allocated: %v", err)
	}
	if got, want := feasible(t, p, pod), []string{"b1"}; !slices.Equal(got, want) {
		t.Errorf("feasible nodes %q, want %q (the one node with a free device)", got, want)
	}
	node, err := p.Place(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if node != "b1" {
		t.Errorf("replacement placed on %q, want b1, the other node with a free device", node)
	}
	claims, err := src.Informers.Resource().V1().ResourceClaims().Lister().List(labels.Everything())
	if err != nil || len(claims) != 1 {
		t.Errorf("the shared informer holds %d ResourceClaims (%v), want the running pod's only", len(claims), err)
	}
	tracked, err := src.dra.ResourceClaims().List()
	if err != nil || len(tracked) != 1 {
		t.Errorf("the shared DRA manager tracks %d ResourceClaims (%v), want the running pod's only", len(tracked), err)
	}
}

// A pod without ephemeral volumes or template claims is placed as it is.
func TestAsCreatedLeavesOtherPodsAlone(t *testing.T) {
	p, _ := placerOver(t, []*v1.Node{zoneNode("a1", "a")}, nil)
	pod := tu.MakePod(testNS, "plain").UID("uid-plain").Obj()
	if err := p.fw.AsCreated(context.Background(), pod, func(got *v1.Pod) error {
		if got != pod {
			t.Error("a pod without claims to model was copied")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

package simulate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// TestDifferentialClaimsAgainstInTree is TestDifferentialAgainstInTree's
// comparison on workloads with volumes: the generated StatefulSets get
// volumeClaimTemplates and the Deployments and Jobs generic ephemeral
// volumes, on WaitForFirstConsumer classes of a dynamic provisioner whose
// allowedTopologies name some zones (or none), on the cluster's default
// class (a template naming no class), or on an Immediate class; some
// StatefulSets' ordinal 0 holds its claim already, bound to a volume of one
// zone. Simulate builds the StatefulSet claims as the controller creates
// them and models the ephemeral ones in its placer; the in-tree loop is
// given the ephemeral claims as the ephemeral-volume controller creates
// them (after the DefaultStorageClass admission plugin), before the pods.
// Same nodes for every replica, 0 mismatches.
//
// Static volumes of a class are left out: neither loop runs Reserve, so
// neither holds a volume matched to one replica's claim for the next (see
// docs/simulate.md).
func TestDifferentialClaimsAgainstInTree(t *testing.T) {
	ctx, cases, seed, prof := diffRun(t)
	mismatches, placed, pending, onVolumes, fromTemplates, ephemerals := 0, 0, 0, 0, 0, 0
	for i := 0; i < cases; i++ {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(1_000_000+i)))
		c, objs := generate(r)
		withStorage(r, c, objs)
		res, replicas, ok := compareCase(ctx, t, fmt.Sprintf("case %d (seed %d)", i, seed), prof, c, objs, withEphemeralClaims)
		for _, rr := range res.Replicas {
			if strings.Contains(rr.Reason, "persistent volumes to bind") || strings.Contains(rr.Reason, "volume node affinity") ||
				strings.Contains(rr.Reason, "unbound immediate PersistentVolumeClaims") {
				onVolumes++
			}
		}
		for _, rep := range replicas {
			for _, v := range rep.Pod.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					fromTemplates++
				}
				if v.Ephemeral != nil {
					ephemerals++
				}
			}
		}
		placed += res.Placed
		pending += res.Pending
		if !ok {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d): %s", i, seed, res.mismatch)
			}
		}
	}
	t.Logf("%d cases, %d mismatches; %d replicas placed, %d pending (%d on their volumes); %d claims from volumeClaimTemplates, %d ephemeral volumes",
		cases, mismatches, placed, pending, onVolumes, fromTemplates, ephemerals)
	if placed == 0 || onVolumes == 0 || fromTemplates == 0 || ephemerals == 0 {
		t.Errorf("the generator produced %d placed, %d Pending on their volumes, %d claims from templates, %d ephemeral volumes: it must reach each",
			placed, onVolumes, fromTemplates, ephemerals)
	}
}

// withStorage adds storage classes to c, then volumes to objs' templates:
// a claim template for most StatefulSets (with, sometimes, ordinal 0's
// claim already bound to a volume of one zone) and an ephemeral volume for
// some Deployments and Jobs.
func withStorage(r *rand.Rand, c *explain.Cluster, objs []runtime.Object) {
	zones := []string{"z1", "z2", "z3"}
	wffc := func(name string, zones ...string) *storagev1.StorageClass {
		return tu.MakeProvisionedClass(name, "disk.example.com", zones...)
	}
	one, two := zones[r.IntN(3)], zones[r.IntN(3)]
	classes := []*storagev1.StorageClass{wffc("one-zone", one), wffc("two-zones", one, two), wffc("anywhere"),
		{ObjectMeta: metav1.ObjectMeta{Name: "immediate"}, Provisioner: "disk.example.com", VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}}
	if r.IntN(3) > 0 {
		def := wffc("default", zones[r.IntN(3)])
		def.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		classes = append(classes, def)
	}
	for _, sc := range classes {
		c.Others = append(c.Others, sc)
	}
	pickClass := func() *string {
		switch n := r.IntN(12); {
		case n == 0:
			return ptr.To("immediate")
		case n < 3:
			return nil // the default class, if any
		default:
			return ptr.To([]string{"one-zone", "one-zone", "two-zones", "anywhere"}[r.IntN(4)])
		}
	}
	claim := func(class *string) v1.PersistentVolumeClaimSpec {
		return v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: class,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resourceMust("1Gi")}},
		}
	}
	for _, o := range objs {
		switch t := o.(type) {
		case *appsv1.StatefulSet:
			if r.IntN(4) == 0 {
				continue
			}
			for k := 1 + r.IntN(2); k > 0; k-- {
				name := []string{"data", "logs"}[k-1]
				t.Spec.VolumeClaimTemplates = append(t.Spec.VolumeClaimTemplates, v1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: claim(pickClass())})
			}
			if r.IntN(2) == 0 {
				c.Others = append(c.Others, boundTo(t.Namespace, claimName(t.Spec.VolumeClaimTemplates[0].Name, t.Name, 0), "one-zone", zones[r.IntN(3)])...)
			}
		case *appsv1.Deployment:
			if r.IntN(3) == 0 {
				withEphemeral(&t.Spec.Template.Spec, claim(pickClass()))
			}
		case *batchv1.Job:
			if r.IntN(3) == 0 {
				withEphemeral(&t.Spec.Template.Spec, claim(pickClass()))
			}
		}
	}
}

func withEphemeral(spec *v1.PodSpec, claim v1.PersistentVolumeClaimSpec) {
	spec.Volumes = append(spec.Volumes, v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: claim}}}})
}

// boundTo is a claim of class bound, as the volume controller binds it, to
// a volume usable in zone only.
func boundTo(namespace, name, class, zone string) []runtime.Object {
	pv := tu.MakeLocalPV("pv-"+name, class, "1Gi", tu.Term(tu.Expr(v1.LabelTopologyZone, v1.NodeSelectorOpIn, zone)))
	pvc := tu.MakePVC(namespace, name, class, "1Gi")
	pvc.UID = types.UID("uid-" + name)
	tu.BindVolume(pvc, pv)
	return []runtime.Object{pv, pvc}
}

// withEphemeralClaims is c with the claim of every replica's generic
// ephemeral volume as the ephemeral-volume controller creates it (the
// template's labels, annotations and spec, owned by the pod, the default
// class for a template naming none), unbound.
func withEphemeralClaims(c *explain.Cluster, replicas []Replica) *explain.Cluster {
	var classes []*storagev1.StorageClass
	for _, o := range c.Others {
		if sc, ok := o.(*storagev1.StorageClass); ok {
			classes = append(classes, sc)
		}
	}
	var def *string
	for _, sc := range classes {
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
			def = ptr.To(sc.Name)
		}
	}
	out := *c
	out.Others = append([]runtime.Object(nil), c.Others...)
	for _, rep := range replicas {
		pod := rep.Pod
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			if vol.Ephemeral == nil {
				continue
			}
			tmpl := vol.Ephemeral.VolumeClaimTemplate
			pvc := &v1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name: ephemeral.VolumeClaimName(pod, vol), Namespace: pod.Namespace, UID: types.UID("eph-" + pod.Name),
					Labels: maps.Clone(tmpl.Labels), Annotations: maps.Clone(tmpl.Annotations),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}},
				},
				Spec:   *tmpl.Spec.DeepCopy(),
				Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
			}
			if pvc.Spec.StorageClassName == nil {
				pvc.Spec.StorageClassName = def
			}
			out.Others = append(out.Others, pvc)
		}
	}
	return &out
}

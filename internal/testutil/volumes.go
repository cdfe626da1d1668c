package testutil

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// BindVolume binds pvc to pv as the volume controller completes a binding:
// the volume's claimRef and the claim's volumeName, its bind-completed
// annotation, both Bound. pvc needs its UID.
func BindVolume(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) {
	pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
	pv.Status.Phase = v1.VolumeBound
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	pvc.Spec.VolumeName = pv.Name
	pvc.Status.Phase = v1.ClaimBound
}

// MakeProvisionedClass is a WaitForFirstConsumer class of a dynamic
// provisioner whose volumes can be made in zones only (anywhere when none
// is given).
func MakeProvisionedClass(name, provisioner string, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       provisioner,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
	if len(zones) > 0 {
		sc.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: v1.LabelTopologyZone, Values: zones},
		}}}
	}
	return sc
}

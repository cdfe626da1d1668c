package testutil

import (
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Builders for what pods use or reference beyond CPU and memory: persistent
// volumes (VolumeBinding), DRA devices (DynamicResources) and priority
// classes (DefaultPreemption), for tests that go through the apiserver.

// PriorityClassName sets spec.priorityClassName; the apiserver's Priority
// admission then fills in spec.priority (and rejects a pod that sets both).
func (p *PodWrapper) PriorityClassName(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// MakePriorityClass is a non-default PriorityClass of the given value.
func MakePriorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

// PVC mounts the PersistentVolumeClaim claimName as volume volumeName.
func (p *PodWrapper) PVC(volumeName, claimName string) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{
		Name:         volumeName,
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}},
	})
	return p
}

// ResourceClaim gives the pod the existing ResourceClaim claimName under
// name and lets its first container use it.
func (p *PodWrapper) ResourceClaim(name, claimName string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: name, ResourceClaimName: ptr.To(claimName)})
	c := &p.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, v1.ResourceClaim{Name: name})
	return p
}

// MakeWaitForFirstConsumerClass is a StorageClass for pre-created volumes
// that are bound only once a pod using the claim is scheduled.
func MakeWaitForFirstConsumerClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// MakeLocalPV is a ReadWriteOnce local volume of the given size, usable
// only on nodes matching term.
func MakeLocalPV(name, storageClass, size string, term v1.NodeSelectorTerm) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              storageClass,
			PersistentVolumeSource:        v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/mnt/" + name}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{term},
			}},
		},
	}
}

// MakePVC is a ReadWriteOnce claim of the given size in storageClass.
func MakePVC(namespace, name, storageClass, size string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(storageClass),
			Resources: v1.VolumeResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
}

// MakeDeviceClass selects every device of driver.
func MakeDeviceClass(name, driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`},
		}}},
	}
}

// MakeNodeResourceSlice publishes devices of driver on node, as a DRA
// driver's kubelet plugin would: the whole pool (named after the node) in one
// slice.
func MakeNodeResourceSlice(name, driver, node string, devices ...string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for _, d := range devices {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: d})
	}
	return s
}

// MakeResourceClaim asks for exactly one device of deviceClass, under the
// request name "device".
func MakeResourceClaim(namespace, name, deviceClass string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "device",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: deviceClass},
		}}}},
	}
}

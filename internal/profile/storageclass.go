package profile

import (
	storagev1 "k8s.io/api/storage/v1"
)

// The annotations that make a StorageClass the cluster's default, the GA
// one and its beta predecessor (the DefaultStorageClass admission plugin
// honours both).
const (
	defaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// DefaultClass is the StorageClass the DefaultStorageClass admission
// plugin gives a new PersistentVolumeClaim that names none: of the classes
// annotated as default, the newest, and of those created at the same time
// the first by name; nil when none is. A claim a controller creates (a
// StatefulSet's, an ephemeral volume's) gets it before the scheduler sees
// the claim, and VolumeBinding decides on that class. Upstream's own
// function (k8s.io/kubernetes/pkg/volume/util.GetDefaultClass) would bring
// the kubelet's mount and SELinux code into kubectl placement and the
// enforcer for these few lines.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var def *storagev1.StorageClass
	for _, c := range classes {
		if c.Annotations[defaultClassAnnotation] != "true" && c.Annotations[betaDefaultClassAnnotation] != "true" {
			continue
		}
		switch {
		case def == nil,
			c.CreationTimestamp.UnixNano() > def.CreationTimestamp.UnixNano(),
			c.CreationTimestamp.UnixNano() == def.CreationTimestamp.UnixNano() && c.Name < def.Name:
			def = c
		}
	}
	return def
}

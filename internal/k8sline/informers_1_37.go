//go:build !k8s1.35 && !k8s1.36

package k8sline

import (
	corev1informers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PVCInformer is what an informer factory's PersistentVolumeClaims()
// returns: in 1.37 the typed variant, which adds TypedInformer.
type PVCInformer = corev1informers.TypedPersistentVolumeClaimInformer

// NewPVCInformer is a PVCInformer serving informer and lister (one
// informer's reads seen through another store, for instance).
func NewPVCInformer(informer cache.SharedIndexInformer, lister corelisters.PersistentVolumeClaimLister) PVCInformer {
	return typedPVCInformer{pvcInformer{informer: informer, lister: lister}}
}

type typedPVCInformer struct{ pvcInformer }

func (i typedPVCInformer) TypedInformer() corev1informers.PersistentVolumeClaimIndexInformer {
	return corev1informers.ToPersistentVolumeClaimIndexInformer(i.informer)
}

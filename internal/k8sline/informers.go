package k8sline

import (
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// pvcInformer serves an informer and a lister of PersistentVolumeClaims
// (NewPVCInformer); what a minor's factory adds is in informers_*.go.
type pvcInformer struct {
	informer cache.SharedIndexInformer
	lister   corelisters.PersistentVolumeClaimLister
}

func (i pvcInformer) Informer() cache.SharedIndexInformer             { return i.informer }
func (i pvcInformer) Lister() corelisters.PersistentVolumeClaimLister { return i.lister }

package simulate

import (
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
)

// statefulStorage is what the StatefulSet controller does for a replica's
// volumeClaimTemplates before it creates the pod: each template becomes a
// volume of the pod, named after the template, on the claim
// <template>-<statefulset>-<ordinal>, and that claim is created unless it
// exists (an existing ordinal keeps its claim, bound or not, as it is).
// The claims it creates go into the cluster the placer is built over, so
// the scheduler's volume plugins judge them as they will judge the real
// ones: an unbound claim on its StorageClass's binding mode and
// allowedTopologies, a bound one on its volume's node affinity.
type statefulStorage struct {
	set       *appsv1.StatefulSet
	namespace string
	// have holds the namespace/name of every claim in the cluster.
	have map[string]bool
	// defaultClass is the class the DefaultStorageClass admission plugin
	// gives a claim that names none; nil when the cluster has no default.
	defaultClass *string
	created      int
	existing     int
}

func newStatefulStorage(set *appsv1.StatefulSet, namespace string, c *explain.Cluster) *statefulStorage {
	s := &statefulStorage{set: set, namespace: namespace, have: map[string]bool{}}
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return s
	}
	var classes []*storagev1.StorageClass
	for _, o := range c.Others {
		switch t := o.(type) {
		case *v1.PersistentVolumeClaim:
			s.have[t.Namespace+"/"+t.Name] = true
		case *storagev1.StorageClass:
			classes = append(classes, t)
		}
	}
	if def := profile.DefaultClass(classes); def != nil {
		s.defaultClass = &def.Name
	}
	return s
}

// ordinal is the ordinal of the set's i-th replica: spec.ordinals.start
// shifts them all.
func ordinal(set *appsv1.StatefulSet, i int) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start) + i
	}
	return i
}

// claimName is the controller's name for the claim of template tmpl of the
// set's replica ordinal.
func claimName(tmpl, set string, ordinal int) string {
	return tmpl + "-" + set + "-" + strconv.Itoa(ordinal)
}

// attach gives pod, the set's replica ordinal, its template volumes (in
// place of a volume of the same name in the pod template, as the
// controller replaces it) and returns the claims the controller would
// create for it.
func (s *statefulStorage) attach(pod *v1.Pod, ordinal int) []*v1.PersistentVolumeClaim {
	tmpls := s.set.Spec.VolumeClaimTemplates
	if len(tmpls) == 0 {
		return nil
	}
	vols := make([]v1.Volume, 0, len(tmpls)+len(pod.Spec.Volumes))
	byTemplate := make(map[string]bool, len(tmpls))
	var out []*v1.PersistentVolumeClaim
	for i := range tmpls {
		tmpl := &tmpls[i]
		name := claimName(tmpl.Name, s.set.Name, ordinal)
		byTemplate[tmpl.Name] = true
		vols = append(vols, v1.Volume{Name: tmpl.Name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}})
		key := s.namespace + "/" + name
		if s.have[key] {
			s.existing++
			continue
		}
		s.have[key] = true
		s.created++
		out = append(out, s.newClaim(tmpl, name))
	}
	for _, v := range pod.Spec.Volumes {
		if !byTemplate[v.Name] {
			vols = append(vols, v)
		}
	}
	pod.Spec.Volumes = vols
	return out
}

// newClaim is the claim as the apiserver holds it once the controller
// created it: the template's labels with the set's selector labels over
// them, its annotations and spec, the default class when it names none
// (admission), the API's defaults, unbound.
func (s *statefulStorage) newClaim(tmpl *v1.PersistentVolumeClaim, name string) *v1.PersistentVolumeClaim {
	pvc := tmpl.DeepCopy()
	pvc.Name, pvc.Namespace = name, s.namespace
	pvc.UID = types.UID("simulate-" + s.namespace + "-" + name)
	pvc.ResourceVersion, pvc.OwnerReferences = "", nil
	pvc.Labels = maps.Clone(pvc.Labels)
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	if s.set.Spec.Selector != nil {
		maps.Copy(pvc.Labels, s.set.Spec.Selector.MatchLabels)
	}
	if !storagehelpers.PersistentVolumeClaimHasClass(pvc) && s.defaultClass != nil {
		pvc.Spec.StorageClassName = s.defaultClass
	}
	pvc.Spec.VolumeName = ""
	pvc.Status = v1.PersistentVolumeClaimStatus{}
	corev1defaults.SetObjectDefaults_PersistentVolumeClaim(pvc)
	return pvc
}

// note says how many claims the set's replicas were placed with.
func (s *statefulStorage) note() string {
	if s.created+s.existing == 0 {
		return ""
	}
	return fmt.Sprintf("StatefulSet/%s: %d PVC(s) modelled from volumeClaimTemplates, %d existing", s.set.Name, s.created, s.existing)
}

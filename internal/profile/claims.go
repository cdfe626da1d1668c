package profile

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	resourceclient "k8s.io/client-go/kubernetes/typed/resource/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// A pod placed here that its controller has not created yet (an evicted
// pod's replacement, a workload's replica) has none of the claims its
// controllers create for a new pod: the ephemeral-volume controller's
// PersistentVolumeClaim for each generic ephemeral volume, named
// <pod>-<volume> and owned by the pod, and the resourceclaim controller's
// ResourceClaim for each claim from a ResourceClaimTemplate, named in the
// pod's status. Without them VolumeBinding rejects the pod ("waiting for
// ephemeral volume controller", or "was not created for pod" when the claim
// of the pod it replaces is found under the same name) and DynamicResources
// finds no claim. claimModels stands them in: for one placement at a time,
// the framework's plugins see those claims as the controllers would create
// them, unbound and unallocated, so VolumeBinding decides on the claim's
// StorageClass (binding mode, allowed topologies, capacity) and
// DynamicResources allocates devices for it, as they will for the real
// ones.
//
// The seam is where the plugins get their claims: the framework's informer
// factory (PersistentVolumeClaims: VolumeBinding's lister and its assume
// cache's indexer, NodeVolumeLimits', VolumeZone's and VolumeRestrictions'
// listers) and its DRA manager (ResourceClaims). Build gives each framework
// both wrapped in front of the Sources' own: reads see the models over the
// informers' objects (a model shadows a real object of the same key);
// everything else (event handlers, starting, syncing) is the real
// informers'. Nothing is written to the informers' stores or to the
// cluster, so the caches other readers share (the enforcer's judge, other
// profiles' frameworks) never see a model, and the models are gone when the
// placement ends.
type claimModels struct {
	// scope serializes placements on one framework: a model is visible
	// to the placement that made it only.
	scope sync.Mutex

	pvcs   modelSet[*v1.PersistentVolumeClaim]
	claims modelSet[*resourceapi.ResourceClaim]

	mu sync.RWMutex
	// realPVCs is the PVC informer's indexer, once a plugin asked for
	// it; nil when no plugin of the profile reads PVCs (then no PVC is
	// modelled: nothing would look it up).
	realPVCs cache.Indexer
}

// modelSet is the models of one kind, by namespace/name: set by a
// placement, read by its plugins.
type modelSet[T any] struct {
	mu    sync.RWMutex
	byKey map[string]T
}

func (s *modelSet[T]) set(byKey map[string]T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byKey = byKey
}

func (s *modelSet[T]) get(key string) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.byKey[key]
	return v, ok
}

func (s *modelSet[T]) list() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]T, 0, len(s.byKey))
	for _, v := range s.byKey {
		out = append(out, v)
	}
	return out
}

// AsCreated runs fn with pod as its controllers would have created it:
// each generic ephemeral volume's PersistentVolumeClaim and each
// ResourceClaim from a template that pod does not have yet (none of its
// own in the informers, no name in its status) is modelled, and fn gets a
// copy of pod whose status names the modelled ResourceClaims. The models
// are visible to the framework's plugins during fn only; placements on one
// framework take turns (fn must not call AsCreated again). A pod without
// such volumes or claims is passed to fn as it is.
func (f *Framework) AsCreated(ctx context.Context, pod *v1.Pod, fn func(*v1.Pod) error) error {
	m := f.models
	if m == nil || !needsModels(pod) {
		return fn(pod)
	}
	m.scope.Lock()
	defer m.scope.Unlock()
	created, pvcs, claims, err := m.model(ctx, f.ClientSet().ResourceV1(), f.defaultClass, pod)
	if err != nil {
		return err
	}
	m.pvcs.set(pvcs)
	m.claims.set(claims)
	defer func() {
		m.pvcs.set(nil)
		m.claims.set(nil)
	}()
	return fn(created)
}

func needsModels(pod *v1.Pod) bool {
	for _, vol := range pod.Spec.Volumes {
		if vol.Ephemeral != nil {
			return true
		}
	}
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil {
			return true
		}
	}
	return false
}

// podClaimAnnotation is what the resourceclaim controller sets on a claim
// it generates: the pod's name for the claim.
const podClaimAnnotation = "resource.kubernetes.io/pod-claim-name"

// model returns pod as created and the claims its controllers would create
// for it, keyed namespace/name. A template is read through client (the
// framework's clientset, which only reads): the one request a model makes,
// for a pod with such a claim only.
func (m *claimModels) model(ctx context.Context, client resourceclient.ResourceV1Interface, defaultClass func() (*string, error), pod *v1.Pod) (*v1.Pod, map[string]*v1.PersistentVolumeClaim, map[string]*resourceapi.ResourceClaim, error) {
	pvcs := map[string]*v1.PersistentVolumeClaim{}
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}
	if real := m.pvcIndexer(); real != nil {
		for i := range pod.Spec.Volumes {
			vol := &pod.Spec.Volumes[i]
			if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
				continue
			}
			name := ephemeral.VolumeClaimName(pod, vol)
			key := pod.Namespace + "/" + name
			if obj, ok, _ := real.GetByKey(key); ok {
				if pvc, isPVC := obj.(*v1.PersistentVolumeClaim); isPVC && ephemeral.VolumeIsForPod(pod, pvc) == nil {
					continue // the controller created it already
				}
			}
			tmpl := vol.Ephemeral.VolumeClaimTemplate
			pvcOwner := owner
			pvcOwner.BlockOwnerDeletion = ptr.To(true)
			pvc := &v1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name:            name,
					Namespace:       pod.Namespace,
					UID:             modelUID(pod, "volume", vol.Name),
					OwnerReferences: []metav1.OwnerReference{pvcOwner},
					Labels:          maps.Clone(tmpl.Labels),
					Annotations:     maps.Clone(tmpl.Annotations),
				},
				Spec:   *tmpl.Spec.DeepCopy(),
				Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
			}
			if !storagehelpers.PersistentVolumeClaimHasClass(pvc) {
				// Admission gives the claim the default class, if any.
				class, err := defaultClass()
				if err != nil {
					return nil, nil, nil, err
				}
				pvc.Spec.StorageClassName = class
			}
			pvcs[key] = pvc
		}
	}
	claims := map[string]*resourceapi.ResourceClaim{}
	created := pod
	for _, pc := range pod.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil || hasClaimStatus(pod, pc.Name) {
			continue
		}
		tmpl, err := client.ResourceClaimTemplates(pod.Namespace).Get(ctx, *pc.ResourceClaimTemplateName, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				// The controller cannot create the claim either: the
				// pod would wait for it, as it does without a model.
				continue
			}
			return nil, nil, nil, fmt.Errorf("reading ResourceClaimTemplate %s/%s for pod %s/%s's claim %q: %w",
				pod.Namespace, *pc.ResourceClaimTemplateName, pod.Namespace, pod.Name, pc.Name, err)
		}
		annotations := maps.Clone(tmpl.Spec.Annotations)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[podClaimAnnotation] = pc.Name
		uid := modelUID(pod, "claim", pc.Name)
		// The controller's name is generated (<pod>-<claim>-<random>);
		// the model's suffix is fixed by the pod's UID, so one pod's
		// model is the same at every placement.
		name := pod.Name + "-" + pc.Name + "-" + string(uid)[len(uid)-5:]
		claims[pod.Namespace+"/"+name] = &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Namespace:       pod.Namespace,
				UID:             uid,
				OwnerReferences: []metav1.OwnerReference{owner},
				Labels:          maps.Clone(tmpl.Spec.Labels),
				Annotations:     annotations,
			},
			Spec: *tmpl.Spec.Spec.DeepCopy(),
		}
		if created == pod {
			created = pod.DeepCopy()
		}
		created.Status.ResourceClaimStatuses = append(created.Status.ResourceClaimStatuses,
			v1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: ptr.To(name)})
	}
	return created, pvcs, claims, nil
}

// defaultClass is the name of the class the DefaultStorageClass admission
// plugin gives a new claim that names none (nil: the cluster has no
// default), from the StorageClasses the framework's informers hold (every
// profile with VolumeBinding reads them).
func (f *Framework) defaultClass() (*string, error) {
	classes, err := f.SharedInformerFactory().Storage().V1().StorageClasses().Lister().List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("listing StorageClasses: %w", err)
	}
	if def := DefaultClass(classes); def != nil {
		return &def.Name, nil
	}
	return nil, nil
}

func hasClaimStatus(pod *v1.Pod, name string) bool {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == name {
			return true
		}
	}
	return false
}

// modelUID is a model claim's UID: distinct per pod and claim, and hex at
// its end (the ResourceClaim's name takes its last five characters).
func modelUID(pod *v1.Pod, kind, name string) types.UID {
	h := fnv.New64a()
	_, _ = h.Write([]byte(string(pod.UID) + "/" + kind + "/" + name))
	return types.UID(fmt.Sprintf("model-%s-%016x", kind, h.Sum64()))
}

func (m *claimModels) pvcIndexer() cache.Indexer {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.realPVCs
}

// The informer factory a framework is built with: the Sources' own, but
// for the PersistentVolumeClaims informer, whose indexer and lister also
// serve the models. Each level embeds the real interface, so every other
// informer, and what a minor adds, is the real one.
type modelFactory struct {
	informers.SharedInformerFactory
	m *claimModels
}

func (f modelFactory) Core() coreinformers.Interface {
	return modelCore{Interface: f.SharedInformerFactory.Core(), m: f.m}
}

type modelCore struct {
	coreinformers.Interface
	m *claimModels
}

func (c modelCore) V1() corev1informers.Interface {
	return modelCoreV1{Interface: c.Interface.V1(), m: c.m}
}

type modelCoreV1 struct {
	corev1informers.Interface
	m *claimModels
}

// PersistentVolumeClaims is the real informer with reads through the
// models: its lister, and its indexer, which VolumeBinding's assume cache
// reads directly. Asking for it registers the real informer on the
// factory, as the real call does.
func (c modelCoreV1) PersistentVolumeClaims() k8sline.PVCInformer {
	real := c.Interface.PersistentVolumeClaims().Informer()
	c.m.mu.Lock()
	c.m.realPVCs = real.GetIndexer()
	c.m.mu.Unlock()
	idx := &modelIndexer{Indexer: real.GetIndexer(), m: c.m}
	return k8sline.NewPVCInformer(modelInformer{SharedIndexInformer: real, idx: idx}, corelisters.NewPersistentVolumeClaimLister(idx))
}

// modelInformer is the PVC informer with reads through the models.
type modelInformer struct {
	cache.SharedIndexInformer
	idx *modelIndexer
}

func (i modelInformer) GetIndexer() cache.Indexer { return i.idx }
func (i modelInformer) GetStore() cache.Store     { return i.idx }

// modelIndexer reads the models over the real indexer: a model shadows a
// real object of its key. Writes go to the real indexer (no plugin writes
// to an informer's store).
type modelIndexer struct {
	cache.Indexer
	m *claimModels
}

func (x *modelIndexer) GetByKey(key string) (any, bool, error) {
	if p, ok := x.m.pvcs.get(key); ok {
		return p, true, nil
	}
	return x.Indexer.GetByKey(key)
}

func (x *modelIndexer) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return x.GetByKey(key)
}

// merge replaces the real objects the models shadow and adds the models
// keep accepts.
func (x *modelIndexer) merge(real []any, keep func(*v1.PersistentVolumeClaim) (bool, error)) ([]any, error) {
	models := x.m.pvcs.list()
	if len(models) == 0 {
		return real, nil
	}
	out := make([]any, 0, len(real)+len(models))
	for _, obj := range real {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			if _, shadowed := x.m.pvcs.get(key); shadowed {
				continue
			}
		}
		out = append(out, obj)
	}
	for _, p := range models {
		ok, err := keep(p)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func (x *modelIndexer) List() []any {
	out, _ := x.merge(x.Indexer.List(), func(*v1.PersistentVolumeClaim) (bool, error) { return true, nil })
	return out
}

func (x *modelIndexer) ListKeys() []string {
	var keys []string
	for _, obj := range x.List() {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// indexed says whether obj has value under index indexName.
func (x *modelIndexer) indexed(indexName, value string) func(*v1.PersistentVolumeClaim) (bool, error) {
	return func(p *v1.PersistentVolumeClaim) (bool, error) {
		f := x.Indexer.GetIndexers()[indexName]
		if f == nil {
			return false, fmt.Errorf("index %q does not exist", indexName)
		}
		values, err := f(p)
		if err != nil {
			return false, err
		}
		for _, v := range values {
			if v == value {
				return true, nil
			}
		}
		return false, nil
	}
}

func (x *modelIndexer) ByIndex(indexName, value string) ([]any, error) {
	real, err := x.Indexer.ByIndex(indexName, value)
	if err != nil {
		return nil, err
	}
	return x.merge(real, x.indexed(indexName, value))
}

func (x *modelIndexer) Index(indexName string, obj any) ([]any, error) {
	f := x.Indexer.GetIndexers()[indexName]
	if f == nil {
		return nil, fmt.Errorf("index %q does not exist", indexName)
	}
	values, err := f(obj)
	if err != nil {
		return nil, err
	}
	var out []any
	seen := map[string]bool{}
	for _, v := range values {
		objs, err := x.ByIndex(indexName, v)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if key, err := cache.MetaNamespaceKeyFunc(o); err == nil && !seen[key] {
				seen[key] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

func (x *modelIndexer) IndexKeys(indexName, value string) ([]string, error) {
	objs, err := x.ByIndex(indexName, value)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if key, err := cache.MetaNamespaceKeyFunc(o); err == nil {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// modelDRA is the Sources' DRA manager with the models among its claims.
type modelDRA struct {
	fwk.SharedDRAManager
	claims modelClaims
}

func (d modelDRA) ResourceClaims() fwk.ResourceClaimTracker { return d.claims }

// modelClaims reads the model ResourceClaims over the tracker's; a model is
// unallocated, so the allocated devices the tracker reports are unchanged.
type modelClaims struct {
	fwk.ResourceClaimTracker
	m *claimModels
}

func (c modelClaims) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	if claim, ok := c.m.claims.get(namespace + "/" + name); ok {
		return claim, nil
	}
	return c.ResourceClaimTracker.Get(namespace, name)
}

func (c modelClaims) List() ([]*resourceapi.ResourceClaim, error) {
	real, err := c.ResourceClaimTracker.List()
	models := c.m.claims.list()
	if err != nil || len(models) == 0 {
		return real, err
	}
	out := make([]*resourceapi.ResourceClaim, 0, len(real)+len(models))
	for _, claim := range real {
		if _, shadowed := c.m.claims.get(claim.Namespace + "/" + claim.Name); !shadowed {
			out = append(out, claim)
		}
	}
	return append(out, models...), nil
}

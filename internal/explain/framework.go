package explain

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
)

// Cluster is the state a pod is explained against: what the scheduler's
// cache and informers would hold.
type Cluster struct {
	Nodes      []*v1.Node
	Pods       []*v1.Pod
	Namespaces []*v1.Namespace
	// Others are further objects plugins read through informers
	// (PersistentVolumeClaims, StorageClasses, CSINodes, Services,
	// ReplicaSets, ResourceClaims...). Unknown kinds are ignored.
	Others []runtime.Object
	// Unseen says what the reader was not allowed to read (e.g. pods of
	// other namespaces) and what the explanation therefore leaves out.
	Unseen []string
}

// profileFramework is a profile's framework built over a Cluster, and the
// fake clientset its plugins were given: the only one they can write to,
// so a test can check that nothing was written.
type profileFramework struct {
	*profile.Framework
	client *fake.Clientset
}

// newFramework builds the real framework runtime for profile over the
// cluster: a snapshot for the scheduler cache, and a fake clientset and an
// informer factory over c's other objects for what plugins list (as
// upstream's scheduler tests do). Its informers run until ctx ends.
//
// Pods and nodes go into the snapshot only. Filter, Score and the
// preemption dry run read them there; the pod and node informers some
// plugins register serve only what explain never runs (preemption's
// actuation, VolumeBinding's PreBind, DynamicResources' queueing hints),
// on every line. A copy of each in the fake clientset's tracker and
// another in the informers' stores would triple the memory of the largest
// kinds of a large cluster for nothing.
func newFramework(ctx context.Context, c *Cluster, self *v1.Pod, prof *config.KubeSchedulerProfile) (*profileFramework, error) {
	// The pod being explained is not part of the cluster it is placed in
	// (when it is bound, we answer "why there" as if it were not yet).
	// Terminal pods hold no resources: the scheduler's informer drops them.
	pods := make([]*v1.Pod, 0, len(c.Pods))
	nom := &nominator{byNode: map[string][]fwk.PodInfo{}}
	objs := make([]runtime.Object, 0, len(c.Namespaces)+len(c.Others))
	for _, p := range c.Pods {
		if p.UID == self.UID && p.Namespace == self.Namespace && p.Name == self.Name {
			continue
		}
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		if p.UID == "" {
			// A hand-written snapshot may omit what the apiserver always
			// sets; the scheduler's cache keys pods by UID (the preemption
			// dry run removes victims from a node by it). A shallow copy:
			// nothing here writes below the pod's top level.
			cp := *p
			cp.UID = types.UID("explain-" + p.Namespace + "/" + p.Name)
			p = &cp
		}
		if p.Spec.NodeName != "" {
			pods = append(pods, p)
		} else if n := p.Status.NominatedNodeName; n != "" {
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				continue // the scheduler's queue drops it too
			}
			nom.byNode[n] = append(nom.byNode[n], pi)
		}
	}
	for _, ns := range c.Namespaces {
		objs = append(objs, ns)
	}
	objs = append(objs, c.Others...)
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // NewClientset's field management costs seconds at 15k objects and buys nothing read-only
	src, err := profile.NewSources(ctx, client, informers.NewSharedInformerFactory(client, 0))
	if err != nil {
		return nil, err
	}
	fw, err := profile.Build(ctx, prof, src, k8sline.NewSnapshot(pods, c.Nodes), nom)
	if err != nil {
		return nil, err
	}
	// Plugins registered their informers while being built; fill them now.
	if err := src.Sync(ctx, ctx.Done()); err != nil {
		return nil, err
	}
	return &profileFramework{Framework: fw, client: client}, nil
}

// Placer is the profile's placer over a Cluster with explain's own
// answers on its snapshot (simulate asks both).
type Placer struct {
	*profile.Placer
	fw   *profileFramework
	prof *config.KubeSchedulerProfile
}

// NewPlacer builds profile's framework over c (as Explain does) and a
// Placer on it, in a mutation session that lasts as long as the Placer.
// Its informers run until ctx is cancelled: cancel it when the batch is
// done.
func NewPlacer(ctx context.Context, c *Cluster, prof *config.KubeSchedulerProfile) (*Placer, error) {
	// A snapshot cannot hold a pod whose node is gone (no Node object):
	// leave such pods out, as the scheduler's cache does.
	known := make(map[string]bool, len(c.Nodes))
	for _, n := range c.Nodes {
		known[n.Name] = true
	}
	onKnown := *c
	onKnown.Pods = make([]*v1.Pod, 0, len(c.Pods))
	for _, p := range c.Pods {
		if p.Spec.NodeName == "" || known[p.Spec.NodeName] {
			onKnown.Pods = append(onKnown.Pods, p)
		}
	}
	fw, err := newFramework(ctx, &onKnown, &v1.Pod{}, prof)
	if err != nil {
		return nil, err
	}
	if err := fw.Snapshot.StartMutations(); err != nil {
		return nil, err
	}
	return &Placer{Placer: profile.NewPlacer(fw.Framework), fw: fw, prof: prof}, nil
}

// Explain is Explain on the Placer's snapshot, its reservations counted:
// why pod (not in the snapshot) fits no node now, and what preemption
// would do about it, with the claims its controllers would create for it
// modelled, as Assign places it. Nothing is reserved.
func (p *Placer) Explain(ctx context.Context, pod *v1.Pod) (*explainv1alpha1.PlacementExplanation, error) {
	var res *explainv1alpha1.PlacementExplanation
	err := p.fw.AsCreated(ctx, pod, func(created *v1.Pod) error {
		var err error
		res, err = explainWith(ctx, p.fw, created, &Cluster{}, p.prof)
		return err
	})
	return res, err
}

// Preempt reserves pod on node with victims taken out of the snapshot.
func (p *Placer) Preempt(ctx context.Context, pod *v1.Pod, node string, victims []explainv1alpha1.Victim) error {
	names := make([]string, len(victims))
	for i, v := range victims {
		names[i] = v.Pod
	}
	return p.Placer.Preempt(ctx, pod, node, names)
}

// nominator serves the snapshot's nominated pods (status.nominatedNodeName
// set by an earlier preemption, not bound yet): the scheduler filters as if
// those of equal or higher priority already ran on their node.
type nominator struct{ byNode map[string][]fwk.PodInfo }

func (n *nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n *nominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n *nominator) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (n *nominator) NominatedPodsForNode(name string) []fwk.PodInfo                { return n.byNode[name] }

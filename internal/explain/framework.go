package explain

import (
	"context"
	"fmt"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
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

// profileFramework is a framework built from a profile, plus the plugin
// instances it was built with, so each plugin can be called on its own.
type profileFramework struct {
	framework.Framework
	snapshot *k8sline.Snapshot
	plugins  map[string]fwk.Plugin
	// client is the fake clientset the plugins were given: the only one
	// they can write to, so a test can check that nothing was written.
	client *fake.Clientset
}

// registry is upstream's in-tree registry merged with ours: what
// placement-scheduler's binary is built with.
func registry() (frameworkruntime.Registry, error) {
	reg := intree.NewInTreeRegistry()
	if err := reg.Merge(plugins.All()); err != nil {
		return nil, fmt.Errorf("merging pkg/plugins.All(): %w", err)
	}
	return reg, nil
}

// newFramework builds the real framework runtime for profile over the
// cluster: a snapshot for the scheduler cache, a fake clientset and an
// informer factory for everything plugins list (as upstream's scheduler
// tests do). Every factory is wrapped to remember the instance it returns.
func newFramework(ctx context.Context, c *Cluster, self *v1.Pod, profile *config.KubeSchedulerProfile) (*profileFramework, error) {
	return newFrameworkOn(ctx, c, self, profile, nil)
}

// newFrameworkOn is newFramework over snapshot when it is not nil: the
// bound pods and the nodes come from it, and c's pods only feed the
// clientset and the nominator.
func newFrameworkOn(ctx context.Context, c *Cluster, self *v1.Pod, profile *config.KubeSchedulerProfile, snapshot *k8sline.Snapshot) (*profileFramework, error) {
	reg, err := registry()
	if err != nil {
		return nil, err
	}
	instances := Record(reg)

	// The pod being explained is not part of the cluster it is placed in
	// (when it is bound, we answer "why there" as if it were not yet).
	// Terminal pods hold no resources: the scheduler's informer drops them.
	pods := make([]*v1.Pod, 0, len(c.Pods))
	nom := &nominator{byNode: map[string][]fwk.PodInfo{}}
	objs := make([]runtime.Object, 0, len(c.Pods)+len(c.Nodes)+len(c.Namespaces)+len(c.Others))
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
			// dry run removes victims from a node by it).
			p = p.DeepCopy()
			p.UID = types.UID("explain-" + p.Namespace + "/" + p.Name)
		}
		objs = append(objs, p)
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
	for _, n := range c.Nodes {
		objs = append(objs, n)
	}
	for _, ns := range c.Namespaces {
		objs = append(objs, ns)
	}
	objs = append(objs, c.Others...)
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // NewClientset's field management costs seconds at 15k objects and buys nothing read-only
	inf := informers.NewSharedInformerFactory(client, 0)

	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, inf.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
		SliceInformer: inf.Resource().V1().ResourceSlices(),
		KubeClient:    client,
	})
	if err != nil {
		return nil, fmt.Errorf("resource slice tracker: %w", err)
	}
	// The framework's instrumentation needs the scheduler's metrics
	// registered (idempotent; kube-scheduler does it at start-up).
	metrics.Register()
	if snapshot == nil {
		snapshot = k8sline.NewSnapshot(pods, c.Nodes)
	}
	opts := append(snapshot.FrameworkOptions(),
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(inf),
		frameworkruntime.WithPodNominator(nom),
		frameworkruntime.WithSharedDRAManager(dynamicresources.NewDRAManager(ctx, claims, slices, inf)),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(inf.Storage().V1().CSINodes().Lister())),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done())),
	)
	// The snapshot is the lister; on lines whose framework has a mutable
	// snapshot lister (the preemption dry run lists nodes and victims through
	// it, as in the scheduler) it is that too. explain never starts a
	// mutation session.
	fw, err := frameworkruntime.NewFramework(ctx, reg, profile, opts...)
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", profile.SchedulerName, err)
	}
	// Plugins registered their informers while being built; fill them now.
	inf.Start(ctx.Done())
	for typ, ok := range inf.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	return &profileFramework{Framework: fw, snapshot: snapshot, plugins: instances.all(), client: client}, nil
}

// nominator serves the snapshot's nominated pods (status.nominatedNodeName
// set by an earlier preemption, not bound yet): the scheduler filters as if
// those of equal or higher priority already ran on their node.
type nominator struct{ byNode map[string][]fwk.PodInfo }

func (n *nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n *nominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n *nominator) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (n *nominator) NominatedPodsForNode(name string) []fwk.PodInfo                { return n.byNode[name] }

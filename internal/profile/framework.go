// Package profile is a scheduler profile as kube-scheduler runs it, for the
// tools that run one outside the scheduler: the configuration loaded and
// validated as --config is (LoadConfig), the profile's real framework
// built over a snapshot and the informers of a caller's choosing (Build),
// each plugin instance kept so it can be asked on its own (Record), and a
// Placer that schedules replacements of running pods on that framework.
// kubectl placement explain builds it over objects it read; the enforcer
// over its own informers and snapshot. Nothing here writes to a cluster.
package profile

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
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

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Sources are what a framework's plugins read beside the snapshot: a
// clientset (never written to: a framework built here binds and preempts
// nothing), the informers the plugins list from, and the DRA and CSI
// managers over them. One Sources serves every framework built on it; its
// informers are the caller's to start (after Build, whose plugins
// register the ones they need) and to stop.
type Sources struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	dra       fwk.SharedDRAManager
	csi       fwk.CSIManager
}

// NewSources wraps client and factory, with the DRA manager's claim cache
// and slice tracker registered on factory until ctx ends.
func NewSources(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Sources, error) {
	logger := klog.FromContext(ctx)
	claims := assumecache.NewAssumeCache(logger, factory.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
		SliceInformer: factory.Resource().V1().ResourceSlices(),
		KubeClient:    client,
	})
	if err != nil {
		return nil, fmt.Errorf("resource slice tracker: %w", err)
	}
	return &Sources{
		Client:    client,
		Informers: factory,
		dra:       dynamicresources.NewDRAManager(ctx, claims, slices, factory),
		csi:       nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister()),
	}, nil
}

// Framework is a profile's framework, the snapshot it reads, and the plugin
// instances it was built with, so each plugin can be called on its own.
type Framework struct {
	framework.Framework
	Snapshot *k8sline.Snapshot
	Plugins  map[string]fwk.Plugin
	// models are the claims of the pod being placed that its
	// controllers have not created yet (claims.go, AsCreated).
	models *claimModels
}

// Registry is upstream's in-tree registry merged with ours: what
// placement-scheduler's binary is built with.
func Registry() (frameworkruntime.Registry, error) {
	reg := intree.NewInTreeRegistry()
	if err := reg.Merge(plugins.All()); err != nil {
		return nil, fmt.Errorf("merging pkg/plugins.All(): %w", err)
	}
	return reg, nil
}

// Build builds the real framework runtime for profile over snapshot and
// src, with nominator serving the pods nominated to each node (nil: none).
// Its plugins register the informers they list from on src.Informers:
// start them and wait for their caches before the first cycle.
func Build(ctx context.Context, profile *config.KubeSchedulerProfile, src *Sources, snapshot *k8sline.Snapshot, nominator fwk.PodNominator) (*Framework, error) {
	reg, err := Registry()
	if err != nil {
		return nil, err
	}
	instances := Record(reg)
	// The framework's instrumentation needs the scheduler's metrics
	// registered (idempotent; kube-scheduler does it at start-up).
	metrics.Register()
	// The snapshot is the framework's lister and, on a line whose framework
	// has one, its mutable lister: the preemption dry run lists nodes and
	// victims through it, as in the scheduler; nothing here starts a
	// mutation session of its own.
	// The plugins read PersistentVolumeClaims and ResourceClaims through
	// this framework's own overlay of src's informers and DRA manager,
	// which adds the claims of the pod being placed that do not exist yet
	// (AsCreated) and nothing else.
	models := &claimModels{}
	opts := append(snapshot.FrameworkOptions(),
		frameworkruntime.WithClientSet(src.Client),
		frameworkruntime.WithInformerFactory(modelFactory{SharedInformerFactory: src.Informers, m: models}),
		frameworkruntime.WithSharedDRAManager(modelDRA{SharedDRAManager: src.dra, claims: modelClaims{ResourceClaimTracker: src.dra.ResourceClaims(), m: models}}),
		frameworkruntime.WithSharedCSIManager(src.csi),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done())),
	)
	if nominator != nil {
		opts = append(opts, frameworkruntime.WithPodNominator(nominator))
	}
	fw, err := frameworkruntime.NewFramework(ctx, reg, profile, opts...)
	if err != nil {
		return nil, fmt.Errorf("profile %q: %w", profile.SchedulerName, err)
	}
	return &Framework{Framework: fw, Snapshot: snapshot, Plugins: instances.All(), models: models}, nil
}

// Sync starts src's informers (those Build's plugins registered since the
// last Sync included) until stop is closed, and waits until their caches
// are filled or ctx ends.
func (src *Sources) Sync(ctx context.Context, stop <-chan struct{}) error {
	src.Informers.Start(stop)
	for typ, ok := range src.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	return nil
}

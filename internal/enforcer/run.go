package enforcer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	utiluuid "k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
)

// Component is the enforcer's name in events, the Lease holder identity and
// the user agent.
const Component = "placement-enforcer"

// minPassInterval is the least time between two passes.
const minPassInterval = time.Second

// Run runs the enforcer until ctx ends: informers on nodes, pods, namespaces
// and PodDisruptionBudgets (a change to any queues a pass; their resync is
// the periodic backstop), the endpoints on serving (nil: none; build is
// /metrics' build_info), and the passes themselves, only while this
// replica holds the Lease. A leader whose health check fails (health.go)
// releases the Lease and Run returns why.
func Run(ctx context.Context, cfg *enforcerv1alpha1.EnforcerConfiguration, restConfig *rest.Config, serving *Serving, build buildinfo.Info) error {
	logger := klog.FromContext(ctx)
	sched, err := loadSchedulerConfig(cfg.SchedulerConfig)
	if err != nil {
		return err
	}
	logUnenforced(logger, sched)
	restConfig = rest.CopyConfig(restConfig)
	restConfig.UserAgent = Component
	restConfig.QPS, restConfig.Burst = cfg.ClientConnection.QPS, cfg.ClientConnection.Burst
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	recorder, stopEvents, err := newRecorder(ctx, restConfig, cfg)
	if err != nil {
		return err
	}
	defer stopEvents()
	e := New(cfg, sched, client, recorder, clock.RealClock{})
	e.metrics.registerBuild(build)

	factory := informers.NewSharedInformerFactoryWithOptions(client, cfg.Resync.Duration, informers.WithTransform(strip))
	nodes := factory.Core().V1().Nodes()
	pods := factory.Core().V1().Pods()
	namespaces := factory.Core().V1().Namespaces()
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	queue := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: Component})
	defer queue.ShutDown()
	const key = "pass" // one key: passes coalesce
	// Handlers record the change; the next pass applies it to the state
	// and judges the pods it can affect.
	ch := newChanges()
	var handlers []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{nodes.Informer(), pods.Informer(), namespaces.Informer(), pdbs.Informer()} {
		h := cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { ch.record(obj, false); queue.Add(key) },
			UpdateFunc: func(old, cur any) {
				ch.record(cur, false)
				if isResync(old, cur) {
					ch.resync()
				}
				if relevantUpdate(old, cur) {
					queue.Add(key)
				}
			},
			DeleteFunc: func(obj any) { ch.record(obj, true); queue.Add(key) },
		}
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return err
		}
		handlers = append(handlers, reg.HasSynced)
	}
	state := newClusterState(ctx)
	if cfg.EvictJobPods {
		// A Job's pod may be evicted only when its Job's podFailurePolicy
		// allows it; without the consent no Job is read.
		jobs := factory.Batch().V1().Jobs()
		jobs.Informer()
		state.jobs = jobs.Lister()
	}
	// The caches start with a leader's term (loop), not before: a standby
	// replica holds nothing of the cluster, and a new leader lists it
	// afresh before its first pass (a takeover waits for the Lease to
	// expire anyway; the list adds to it).
	defer factory.Shutdown()

	// The health checks of /healthz, /livez and /readyz: one list, here.
	// e.health fails a leader whose loop stalled (health.go).
	checks := []healthz.HealthChecker{healthz.PingHealthz, e.health}
	var watchdog *leaderelection.HealthzAdaptor
	if !cfg.LeaderElection.Disabled {
		// A leader that cannot renew its Lease fails health, as
		// kube-scheduler's does.
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
		checks = append(checks, watchdog)
	}
	if serving != nil {
		stop, err := serving.serve(ctx, e, checks)
		if err != nil {
			return err
		}
		defer stop()
	}

	// pending names the informers (or the handlers) that have not synced
	// yet: a leader whose list never ends (an informer the RBAC forbids)
	// says which.
	pending := func() []string {
		now := make(chan struct{})
		close(now) // the state as it is, without waiting
		var out []string
		for typ, ok := range factory.WaitForCacheSync(now) {
			if !ok {
				out = append(out, typ.String())
			}
		}
		if len(out) == 0 && !cache.WaitForCacheSync(now, handlers...) {
			out = append(out, "the event handlers")
		}
		slices.Sort(out)
		return out
	}
	loop := func(ctx context.Context) error {
		started := time.Now()
		factory.Start(ctx.Done())
		for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("informer %v did not sync", typ)
			}
		}
		// A synced cache is not a handler that has seen all of it: the
		// initial list reaches the handlers asynchronously. The first
		// pass must see the whole cluster, or a new leader judges a pod
		// whose node it has not heard of yet, forgets the grace clock it
		// has just restored, and starts it again a pass later.
		if !cache.WaitForCacheSync(ctx.Done(), handlers...) {
			return errors.New("event handlers did not sync")
		}
		e.health.synced()
		// A takeover's cost beyond the Lease's expiry: the list, then
		// the first (full) pass.
		listed := time.Since(started)
		logger.Info("Listed the cluster", "duration", listed)
		judge, err := newJudge(ctx, sched, factory, state)
		if err != nil {
			return fmt.Errorf("building the judge: %w", err)
		}
		// The placers' frameworks read the same informers, for this
		// leader's term.
		src, err := profile.NewSources(ctx, client, factory)
		if err != nil {
			return fmt.Errorf("building the placers' sources: %w", err)
		}
		placing := newPlacing(ctx, src)
		e.records.start(ctx)
		queue.Add(key)
		go func() { <-ctx.Done(); queue.ShutDown() }()
		var last time.Time
		for {
			k, shutdown := queue.Get()
			if shutdown {
				return nil
			}
			// Events coalesce into one key; a pass right after another
			// waits out minPassInterval instead, so a busy cluster's
			// stream of pod updates costs at most one pass a second.
			if wait := minPassInterval - time.Since(last); wait > 0 {
				queue.Done(k)
				queue.AddAfter(key, wait)
				continue
			}
			first := last.IsZero()
			last = time.Now()
			next, err := e.step(ctx, state, judge, placing, ch)
			if first {
				logger.Info("First pass done", "sinceLeading", time.Since(started), "list", listed, "pass", time.Since(last))
			}
			if err != nil {
				logger.Error(err, "Enforcement pass failed; retrying")
				ch.resync()
				next = time.Second
			} else {
				e.health.pass()
				e.metrics.lastPass.SetToCurrentTime()
			}
			queue.Done(k)
			// A pass at least once a resync, events or not: the
			// health check's bound on the time without one holds
			// for an idle leader too.
			if next <= 0 || next > cfg.Resync.Duration {
				next = cfg.Resync.Duration
			}
			queue.AddAfter(key, next)
		}
	}
	// A term ends early when the leader's health check fails: the loop is
	// stopped, then runCtx is cancelled, which releases the Lease
	// (ReleaseOnCancel) so that the standby takes over at once, and Run
	// returns the cause: the process exits rather than hold the Lease
	// without enforcing.
	runCtx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	lead := e.metrics.leading(func(ctx context.Context) {
		if err := e.health.term(ctx, pending, loop); err != nil {
			fail(err)
		}
	})
	if cfg.LeaderElection.Disabled {
		lead(runCtx)
		if err := context.Cause(runCtx); errors.Is(err, errUnhealthy) {
			return err
		}
		return ctx.Err()
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	id += "_" + string(utiluuid.NewUUID())
	le := cfg.LeaderElection
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.LeaseNamespace, le.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		return err
	}
	// The lock remembers the predecessor's term, which says which records
	// the new leader continues (leadership.go).
	terms := newTermLock(lock, le)
	leaderelection.RunOrDie(runCtx, leaderelection.LeaderElectionConfig{
		Lock:            terms,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            Component,
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) { e.lead(ctx, terms.current()); lead(ctx) },
			OnStoppedLeading: func() { logger.Info("Stopped leading") },
		},
	})
	if err := context.Cause(runCtx); errors.Is(err, errUnhealthy) {
		return fmt.Errorf("released the leader lease: %w", err)
	}
	if ctx.Err() != nil {
		return nil
	}
	// Never keep acting without the Lease: the process exits, and its
	// restart campaigns again.
	return errors.New("lost the leader lease")
}

// strip is the informers' transform: it drops from every object what no
// judgement, placement or protection reads, before the caches hold it:
// managedFields and the last-applied configuration. Pods keep their whole
// spec and status (the scheduler's cache reads container statuses for the
// resources of a resized pod), nodes their status (images for
// ImageLocality, allocatable, conditions).
func strip(obj any) (any, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone: its object was stripped when cached
	}
	m.SetManagedFields(nil)
	if a := m.GetAnnotations(); a[v1.LastAppliedConfigAnnotation] != "" {
		a = maps.Clone(a)
		delete(a, v1.LastAppliedConfigAnnotation)
		m.SetAnnotations(a)
	}
	return obj, nil
}

package enforcer

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
)

// evict asks the Eviction API to evict pod (dryRun=All in dry-run mode) and
// returns the state and detail to report; refusals and errors back off. A
// live eviction f is saved with the evictions in flight first (inflight.go),
// so that a new leader holds the room promised to its replacement and
// counts it toward the caps; when it cannot be saved, the pod is not
// evicted.
func (p *pass) evict(ctx context.Context, pod *v1.Pod, rule enforcerv1alpha1.Rule, t *tracked, f evictions.InFlight) (string, string) {
	id := string(pod.UID)
	retry := func() {
		p.backoff.Next(id, p.now)
		t.retryAfter = p.now.Add(p.backoff.Get(id))
		p.after(p.backoff.Get(id))
	}
	if !p.cfg.DryRun {
		data, err := entries(p.book, p.loops, &f)
		if err == nil {
			err = p.flights.save(ctx, data)
		}
		if err != nil {
			p.metrics.evictions.WithLabelValues(string(rule), violationsv1alpha1.StateError).Inc()
			retry()
			return violationsv1alpha1.StateError, "saving the eviction in flight before asking for it: " + err.Error()
		}
	}
	res, err := evictions.Request(ctx, p.client, pod, p.cfg.DryRun)
	switch res {
	case evictions.DryRun:
		p.metrics.evictions.WithLabelValues(string(rule), violationsv1alpha1.StateDryRun).Inc()
		return violationsv1alpha1.StateDryRun, "" // booked in flight: reported again while it is
	case evictions.Accepted:
		if err != nil {
			p.logger.Info("Eviction request failed, yet the pod is leaving: counted as evicted", "pod", klog.KObj(pod), "err", err)
		}
		p.metrics.evictions.WithLabelValues(string(rule), resultEvicted).Inc()
		p.metrics.latency.WithLabelValues(string(rule)).Observe(p.now.Sub(t.since[rule]).Seconds())
		return violationsv1alpha1.StateEvicting, ""
	case evictions.Refused:
		p.metrics.evictions.WithLabelValues(string(rule), violationsv1alpha1.StatePDBBlocked).Inc()
		retry()
		return violationsv1alpha1.StatePDBBlocked, err.Error()
	case evictions.Gone:
		p.metrics.evictions.WithLabelValues(string(rule), resultGone).Inc()
		return violationsv1alpha1.StateError, "the pod is gone or was replaced: " + err.Error()
	}
	p.metrics.evictions.WithLabelValues(string(rule), violationsv1alpha1.StateError).Inc()
	retry()
	return violationsv1alpha1.StateError, err.Error()
}

// place asks the pod's profile's framework where its replacement would go,
// reserving the answer for the rest of the pass.
func (p *pass) place(ctx context.Context, pod *v1.Pod) (string, error) {
	// The placers work on the state's own snapshot, in one mutation
	// session per pass (every profile sees every reservation), ended by
	// the pass.
	if !p.mutating {
		if err := p.s.snapshot.StartMutations(); err != nil {
			return "", err
		}
		p.mutating = true
		p.holdInflight(ctx)
	}
	pl, err := p.placing.placer(p.sched, p.s, schedulerName(pod))
	if err != nil {
		return "", err
	}
	// The judge's snapshot leaves terminating pods out, but the
	// scheduler's cache keeps them until they are deleted: the
	// replacement must not be promised the room, ports or domains they
	// still hold. They are in the snapshot for this placement only, so
	// the judgements that follow in the pass never see them.
	held, err := p.s.addTerminating()
	defer p.s.removeAll(p.logger, held)
	if err != nil {
		return "", err
	}
	p.metrics.placements.Inc()
	return pl.Place(ctx, pod)
}

// holdInflight holds, for the pass's placements, the room promised to the
// replacements of earlier passes' evictions that are not bound yet (the
// book's reservations), oldest first, each where it still fits
// (Placer.Keep). Terminating pods are in the snapshot meanwhile: the
// scheduler counts them, so a replacement's room is not where they are.
func (p *pass) holdInflight(ctx context.Context) {
	terminating, err := p.s.addTerminating()
	defer p.s.removeAll(p.logger, terminating)
	if err != nil {
		p.logger.Error(err, "Holding room for replacements")
	}
	for _, f := range p.book.Reservations(p.s) {
		pod := f.Pod
		if len(pod.Spec.Containers) == 0 {
			// A predecessor's eviction whose pod is gone: its
			// replacement, once created, says what the room is.
			if pod = p.s.pendingReplacement(f); pod == nil {
				continue
			}
		}
		pl, err := p.placing.placer(p.sched, p.s, schedulerName(pod))
		if err != nil {
			p.logger.Error(err, "Holding room for a replacement", "pod", klog.KObj(f.Pod), "node", f.Target)
			if err := profile.Hold(p.s.snapshot, pod, f.Target); err != nil {
				p.logger.Error(err, "Holding room for a replacement", "pod", klog.KObj(f.Pod), "node", f.Target)
			}
			continue
		}
		at, err := pl.Keep(ctx, pod, f.Target)
		if err != nil {
			p.logger.Error(err, "Holding room for a replacement", "pod", klog.KObj(f.Pod), "node", f.Target)
		}
		if at != "" && at != f.Target {
			p.logger.V(2).Info("Room for a replacement held on another node: its own was taken", "pod", klog.KObj(f.Pod), "promised", f.Target, "node", at)
		}
	}
}

// unplace undoes the placement of pod on target for a pod that stays: its
// slot is not free and target does not hold its replacement.
func (p *pass) unplace(ctx context.Context, pod *v1.Pod, target string) {
	if target == "" {
		return
	}
	if err := p.placing.placers[schedulerName(pod)].Unplace(ctx, pod, target); err != nil {
		p.logger.Error(err, "Undoing a placement", "pod", klog.KObj(pod), "node", target)
	}
}

// placing places replacements on a state's snapshot: the sources the
// profiles' frameworks read, and one Placer per profile, built on first
// use and kept as long as the sources (Run: a leader's term). Its
// frameworks read the enforcer's own informers (Run's), so what the
// scheduler's plugins list (volumes, claims, services...) is the
// cluster's.
type placing struct {
	// ctx bounds the frameworks and the informers their plugins start.
	ctx     context.Context
	src     *profile.Sources
	placers map[string]*profile.Placer
	// synced: every informer the placers' plugins registered has filled
	// its cache.
	synced bool
}

// syncTimeout bounds the wait for the informers a new placer's plugins
// registered (a type the enforcer may not read never syncs).
const syncTimeout = 30 * time.Second

func newPlacing(ctx context.Context, src *profile.Sources) *placing {
	return &placing{ctx: ctx, src: src, placers: map[string]*profile.Placer{}}
}

// placer is profile name's Placer over s's snapshot, built on first use.
func (pl *placing) placer(sched *config.KubeSchedulerConfiguration, s *clusterState, name string) (*profile.Placer, error) {
	placer, ok := pl.placers[name]
	if !ok {
		var prof *config.KubeSchedulerProfile
		for i := range sched.Profiles {
			if sched.Profiles[i].SchedulerName == name {
				prof = &sched.Profiles[i]
			}
		}
		if prof == nil {
			return nil, ErrUnknownProfile
		}
		fw, err := profile.Build(pl.ctx, prof, pl.src, s.snapshot, nominator{s})
		if err != nil {
			return nil, err
		}
		placer = profile.NewPlacer(fw)
		pl.placers[name] = placer
		pl.synced = false
	}
	if !pl.synced {
		ctx, cancel := context.WithTimeout(pl.ctx, syncTimeout)
		defer cancel()
		if err := pl.src.Sync(ctx, pl.ctx.Done()); err != nil {
			return nil, fmt.Errorf("the informers profile %s's plugins read: %w", name, err)
		}
		pl.synced = true
	}
	return placer, nil
}

// nominator serves the placers' frameworks the pods not bound yet that an
// earlier preemption nominated to a node: the scheduler filters as if
// those of equal or higher priority already ran there.
type nominator struct{ s *clusterState }

func (nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (nominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (nominator) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}

func (n nominator) NominatedPodsForNode(name string) []fwk.PodInfo {
	var out []fwk.PodInfo
	for uid := range n.s.nominated[name] {
		pi, err := framework.NewPodInfo(n.s.pods[uid])
		if err != nil {
			continue // the scheduler's queue drops it too
		}
		out = append(out, pi)
	}
	return out
}

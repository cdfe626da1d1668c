package enforcer

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// evict asks the Eviction API to evict pod (dryRun=All in dry-run mode) and
// returns the state and detail to report; refusals and errors back off.
func (p *pass) evict(ctx context.Context, pod *v1.Pod, rule Rule, t *tracked) (string, string) {
	res, err := evictions.Request(ctx, p.client, pod, p.cfg.DryRun)
	id := string(pod.UID)
	switch res {
	case evictions.DryRun:
		p.metrics.evictions.WithLabelValues(string(rule), StateDryRun).Inc()
		p.backoff.Next(id, p.now) // report again later, not every pass
		return StateDryRun, ""
	case evictions.Accepted:
		p.metrics.evictions.WithLabelValues(string(rule), "evicted").Inc()
		p.metrics.latency.WithLabelValues(string(rule)).Observe(p.now.Sub(t.since[rule]).Seconds())
		return StateEvicting, ""
	case evictions.Refused:
		p.metrics.evictions.WithLabelValues(string(rule), StatePDBBlocked).Inc()
		p.backoff.Next(id, p.now)
		p.after(p.backoff.Get(id))
		return StatePDBBlocked, err.Error()
	case evictions.Gone:
		p.metrics.evictions.WithLabelValues(string(rule), "gone").Inc()
		return StateError, "the pod is gone or was replaced: " + err.Error()
	}
	p.metrics.evictions.WithLabelValues(string(rule), StateError).Inc()
	p.backoff.Next(id, p.now)
	p.after(p.backoff.Get(id))
	return StateError, err.Error()
}

// place asks the pod's profile's framework where its replacement would go,
// reserving the answer for the rest of the pass.
func (p *pass) place(ctx context.Context, pod *v1.Pod) (string, error) {
	name := schedulerName(pod)
	pl, ok := p.placers[name]
	if !ok {
		var prof *config.KubeSchedulerProfile
		for i := range p.sched.Profiles {
			if p.sched.Profiles[i].SchedulerName == name {
				prof = &p.sched.Profiles[i]
			}
		}
		if prof == nil {
			return "", ErrUnknownProfile
		}
		var err error
		// The placers work on the state's own snapshot, in one mutation
		// session per pass (every profile sees every reservation),
		// ended by the pass.
		if !p.mutating {
			if err := p.s.snapshot.StartMutations(); err != nil {
				return "", err
			}
			p.mutating = true
			p.holdInflight()
		}
		pl, err = explain.NewPlacerOn(p.placeCtx, p.s.snapshot, p.s.placerInputs(), prof)
		if err != nil {
			return "", err
		}
		p.placers[name] = pl
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
	return pl.Place(ctx, pod)
}

// holdInflight holds, for the pass's placements, the room promised to the
// replacements of earlier passes' evictions that are not bound yet (the
// book's reservations).
func (p *pass) holdInflight() {
	for _, f := range p.book.Reservations(p.s) {
		if err := explain.Hold(p.s.snapshot, f.Pod, f.Target); err != nil {
			p.logger.Error(err, "Holding room for a replacement", "pod", klog.KObj(f.Pod), "node", f.Target)
		}
	}
}

// unplace undoes the placement of pod on target for a pod that stays: its
// slot is not free and target does not hold its replacement.
func (p *pass) unplace(ctx context.Context, pod *v1.Pod, target string) {
	if target == "" {
		return
	}
	if err := p.placers[schedulerName(pod)].Unplace(ctx, pod, target); err != nil {
		p.logger.Error(err, "Undoing a placement", "pod", klog.KObj(pod), "node", target)
	}
}

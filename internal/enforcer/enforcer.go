// Package enforcer holds running pods to their own placement rules
// (RequiredDuringSchedulingRequiredDuringExecution): a pod that opted in and
// whose node no longer satisfies its node affinity, or whose domain no
// longer satisfies its required pod (anti-)affinity, is evicted through the
// Eviction API once the violation has lasted its grace period, and only when
// the scheduler's own filters say its replacement fits on another node.
//
// The package is split by role: this file is the loop (a pass: judge what
// changed, then decide youngest first); judge.go judges one pod with our
// plugins; evict.go places a replacement and asks for the eviction, with
// the book of evictions in flight, caps and reservations in the evictions
// sub-package; report.go holds the states, reports and events; state.go
// the cluster state kept from the informers and updates.go the filter of
// their updates; run.go the process (informers, leader election,
// endpoints). docs/enforcement.md is the operator's guide;
// docs/behavior.md §12 says what counts as a violation.
package enforcer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/clock"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
)

// Enforcer decides and acts, one pass at a time. It keeps, across passes,
// when each violation was first seen (grace periods), refusals (backoff)
// and its evictions in flight (caps, reservations), and records them on
// the pods (records.go) and beside the Lease (inflight.go), so a new
// leader continues where the last one stopped; everything else is read
// from the cluster.
type Enforcer struct {
	cfg      *enforcerv1alpha1.EnforcerConfiguration
	sched    *config.KubeSchedulerConfiguration
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.Clock
	// limiter paces evictions. A pass asks it for a token before placing
	// (TokensAt) and takes one only for a pod it then evicts, so a pod
	// paced by it costs no placement.
	limiter *rate.Limiter
	backoff *flowcontrol.Backoff
	metrics *enforcerMetrics
	// health is the leader's loop's, served on /healthz; a failure ends
	// the term (Run).
	health *loopHealth

	mu     sync.Mutex
	judged map[types.UID]*judgement
	// gone are the judged pods that count as gone for older ones.
	gone    sets.Set[types.UID]
	tracked map[types.UID]*tracked
	// book holds this leader's evictions in flight, its predecessor's
	// included (restore).
	book *evictions.Book
	// loops is the history of this leader's evictions, its predecessor's
	// included, per owner and rule: what says an owner is looping.
	loops *loops
	// reports are the last pass's, published when it ends: /violations
	// reads them without waiting for the pass under way.
	reports atomic.Pointer[[]violationsv1alpha1.Report]
	// records keeps the leader's record on each violating pod (grace
	// clocks, backoffs) and flights the book, from which a successor
	// restores them; restored: this Enforcer has.
	records  *records
	flights  *inflightStore
	restored bool
	// term is this leader's term on the Lease (lead; nil: leader election
	// off): it stamps the records and says which it continues.
	term *term
}

// New returns an Enforcer. sched is placement-scheduler's configuration;
// clk is the clock grace periods, backoff and the rate limit read.
func New(cfg *enforcerv1alpha1.EnforcerConfiguration, sched *config.KubeSchedulerConfiguration, client kubernetes.Interface, recorder record.EventRecorder, clk clock.Clock) *Enforcer {
	b := flowcontrol.NewBackOff(cfg.Backoff.Initial.Duration, cfg.Backoff.Max.Duration)
	b.Clock = clk
	return &Enforcer{
		cfg: cfg, sched: sched, client: client, recorder: recorder, clock: clk,
		limiter: rate.NewLimiter(rate.Limit(cfg.EvictionsPerSecond), cfg.Burst),
		backoff: b,
		metrics: newMetrics(),
		health:  newLoopHealth(clk, cfg.CacheSyncTimeout.Duration, cfg.Resync.Duration),
		tracked: map[types.UID]*tracked{},
		judged:  map[types.UID]*judgement{},
		gone:    sets.New[types.UID](),
		book:    evictions.NewBook(cfg.Limits),
		loops:   newLoops(cfg.Loops),
		records: newRecords(client, cfg.LeaderElection, cfg.DryRun),
		flights: newInflightStore(client, cfg.LeaderElection, cfg.DryRun),
	}
}

// Reports returns the last pass's reports, sorted by pod. It never waits
// for a pass under way. Never nil: no report is [] in JSON, not null.
func (e *Enforcer) Reports() []violationsv1alpha1.Report {
	last := e.reports.Load()
	if last == nil || len(*last) == 0 {
		return []violationsv1alpha1.Report{}
	}
	return slices.Clone(*last)
}

// pass is one pass's working state.
type pass struct {
	*Enforcer
	s        *clusterState
	now      time.Time
	placing  *placing
	mutating bool // the placers' mutation session on the snapshot is open
	next     time.Duration
	reports  []violationsv1alpha1.Report
	seen     map[types.UID]bool
	logger   klog.Logger
}

// judgement is the last verdict on an opted-in pod that violates a rule or
// cannot be judged; pods that break nothing have none.
type judgement struct {
	verdicts []Verdict
	err      error
	// leaving: as last decided, the pod is on its way out (evicting, or
	// dry-run); see asIfGone.
	leaving bool
}

// step applies the changes recorded since the last step to s and runs a
// pass over the pods they can affect (every pod after a resync).
func (e *Enforcer) step(ctx context.Context, s *clusterState, j *Judge, pl *placing, ch *changes) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	affected, full := ch.drain(klog.FromContext(ctx), s)
	return e.pass(ctx, s, j, pl, affected, full)
}

// pass re-judges the pods in affected (every pod when full), pods whose
// verdict a change of theirs can alter in turn included, then decides
// for every pod with a violation on record, youngest first. Pods outside
// affected keep their last verdict: nothing they depend on changed.
func (e *Enforcer) pass(ctx context.Context, s *clusterState, j *Judge, pl *placing, affected sets.Set[types.UID], full bool) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	if err := s.sync(logger); err != nil {
		return 0, fmt.Errorf("updating the snapshot: %w", err)
	}
	p := &pass{Enforcer: e, s: s, now: e.clock.Now(), placing: pl, seen: map[types.UID]bool{}, logger: logger}
	if !e.restored && !e.cfg.DryRun {
		// Before anything is decided: a new leader continues its
		// predecessor's evictions in flight, grace periods and backoffs.
		if err := e.flights.load(ctx, logger, s, e.book, e.loops); err != nil {
			return 0, err
		}
		e.restore(logger, s, p.now)
	}
	e.restored = true
	e.loops.expire(p.now)
	if p.book.Settle(s, p.now) {
		s.fitGeneration++ // the room held for their replacements is free
	}
	defer func() {
		if p.mutating {
			if err := s.snapshot.EndMutations(); err != nil {
				logger.Error(err, "Ending the placers' mutation session")
			}
		}
	}()

	if full {
		// The backstop also forgets every no-fit answer: what the
		// placers' plugins read beside nodes and pods (volumes, claims)
		// starts no re-placement on its own.
		for _, t := range e.tracked {
			t.noFit = nil
		}
		e.judged = map[types.UID]*judgement{}
		e.gone = sets.New[types.UID]()
		affected = sets.New[types.UID]()
		for uid := range s.pods {
			affected.Insert(uid)
		}
	}
	p.judgeAll(ctx, j, affected)
	// A dry run's eviction settles once its pod no longer violates: the
	// caps and the owner it held are free for this pass's decisions.
	for uid := range e.tracked {
		if e.judged[uid] == nil && e.book.Forget(uid) {
			s.fitGeneration++
		}
	}

	// Decide youngest first, as judged: of pods whose anti-affinity
	// rejects each other, the one that came last goes first, and once it
	// is on its way out the older pods it made violate are judged again
	// before they are decided.
	first := make([]*v1.Pod, 0, len(e.judged))
	for uid := range e.judged {
		first = append(first, s.pods[uid])
	}
	order := newAgenda(first)
	for i := 0; i < len(order.pods); i++ {
		pod := order.pods[i]
		jd := e.judged[pod.UID]
		if jd == nil {
			continue // judged again below: it breaks nothing now
		}
		if jd.err != nil {
			p.report(pod, violationsv1alpha1.Report{State: violationsv1alpha1.StateUnjudged, Detail: jd.err.Error()}, nil)
			continue
		}
		p.decide(ctx, pod, jd.verdicts)
		wasGone := jd.asIfGone()
		jd.leaving = e.leaving(pod.UID)
		p.setJudged(pod.UID, jd)
		if jd.asIfGone() == wasGone {
			continue
		}
		var violating []*v1.Pod
		for _, other := range p.olderInReach(pod) {
			p.setJudged(other.UID, nil)
			p.setJudged(other.UID, p.judgeOne(ctx, j, other))
			if p.judged[other.UID] != nil {
				violating = append(violating, other)
			}
		}
		order.addAfter(i, violating)
	}

	// Violations that cleared (or pods that left) are forgotten: a label
	// removed and restored inside the grace period evicts nothing.
	for uid, t := range e.tracked {
		if p.seen[uid] {
			continue
		}
		delete(e.tracked, uid)
		e.backoff.Reset(string(uid))
		if t.state == violationsv1alpha1.StateGrace && s.pods[uid] != nil {
			logger.V(2).Info("Violation cleared", "uid", uid)
		}
	}
	e.keepRecords(ctx, s, p.now)
	sort.Slice(p.reports, func(i, j int) bool { return p.reports[i].Pod < p.reports[j].Pod })
	e.reports.Store(&p.reports)
	e.metrics.violations.Reset()
	looping := map[enforcerv1alpha1.Rule]sets.Set[types.UID]{}
	for _, r := range enforcerv1alpha1.Rules() {
		looping[r] = sets.New[types.UID]()
	}
	for _, r := range p.reports {
		e.metrics.violations.WithLabelValues(string(r.Rule), r.State).Inc()
		if pod := s.pods[r.UID]; r.State == violationsv1alpha1.StateLooping && pod != nil {
			if o := metav1.GetControllerOf(pod); o != nil {
				looping[r.Rule].Insert(o.UID)
			}
		}
	}
	for r, owners := range looping {
		e.metrics.looping.WithLabelValues(string(r)).Set(float64(owners.Len()))
	}
	return p.next, nil
}

// judgeAll re-judges the pods in work, youngest first. When whether a pod
// counts as gone for older ones (asIfGone) changes, the older pods that
// can see it are judged again too.
func (p *pass) judgeAll(ctx context.Context, j *Judge, work sets.Set[types.UID]) {
	first := make([]*v1.Pod, 0, work.Len())
	for uid := range work {
		if pod := p.s.pods[uid]; pod != nil {
			first = append(first, pod)
		} else {
			p.setJudged(uid, nil)
		}
	}
	queue := newAgenda(first)
	for i := 0; i < len(queue.pods); i++ {
		pod := queue.pods[i]
		wasGone := p.judged[pod.UID].asIfGone()
		p.setJudged(pod.UID, nil)
		p.setJudged(pod.UID, p.judgeOne(ctx, j, pod))
		if wasGone == p.judged[pod.UID].asIfGone() {
			continue
		}
		queue.addAfter(i, p.olderInReach(pod))
	}
}

// agenda is a list of pods walked youngest first that grows while it is
// walked: the pods a step adds join the rest of the walk in order, once.
type agenda struct {
	pods   []*v1.Pod
	queued sets.Set[types.UID]
}

// newAgenda is pods (distinct), youngest first.
func newAgenda(pods []*v1.Pod) *agenda {
	a := &agenda{pods: pods, queued: sets.New[types.UID]()}
	for _, pod := range pods {
		a.queued.Insert(pod.UID)
	}
	sort.Slice(pods, func(i, j int) bool { return younger(pods[i], pods[j]) })
	return a
}

// addAfter adds pods to the part of the walk after position i (pods
// older than the i-th one land there; the walk never goes back).
func (a *agenda) addAfter(i int, pods []*v1.Pod) {
	for _, pod := range pods {
		if a.queued.Has(pod.UID) {
			continue
		}
		a.queued.Insert(pod.UID)
		rest := a.pods[i+1:]
		k := i + 1 + sort.Search(len(rest), func(k int) bool { return younger(pod, rest[k]) })
		a.pods = slices.Insert(a.pods, k, pod)
	}
}

// judgeOne judges one pod, as the youngest-first order left things: the
// younger pods that count as gone (judgement.asIfGone) are left out of its
// anti-affinity's view. It returns nil when the pod is not judged or
// breaks nothing.
func (p *pass) judgeOne(ctx context.Context, j *Judge, pod *v1.Pod) *judgement {
	if !inCache(pod) {
		return nil
	}
	rules, err := OptIn(pod, namespaceRules(p.cfg, p.s.nsLabels(pod.Namespace)))
	if err != nil {
		return &judgement{err: err}
	}
	if rules.Empty() {
		return nil
	}
	var leaving []*v1.Pod
	for uid := range p.gone {
		if other := p.s.pods[uid]; other != nil && younger(other, pod) {
			leaving = append(leaving, other)
		}
	}
	sort.Slice(leaving, func(i, j int) bool { return younger(leaving[i], leaving[j]) })
	verdicts, err := j.Judge(ctx, pod, rules, leaving)
	if err != nil {
		if !errors.Is(err, ErrUnknownProfile) {
			p.logger.Error(err, "Judging pod", "pod", klog.KObj(pod))
		}
		return &judgement{err: err}
	}
	if len(verdicts) == 0 {
		return nil
	}
	return &judgement{verdicts: verdicts, leaving: p.leaving(pod.UID)}
}

// setJudged records jd (nil: none) as pod uid's judgement.
func (p *pass) setJudged(uid types.UID, jd *judgement) {
	if jd == nil {
		delete(p.judged, uid)
	} else {
		p.judged[uid] = jd
	}
	if jd.asIfGone() {
		p.gone.Insert(uid)
	} else {
		p.gone.Delete(uid)
	}
}

// olderInReach are the pods older than pod whose verdict its presence can
// change.
func (p *pass) olderInReach(pod *v1.Pod) []*v1.Pod {
	reach := sets.New[types.UID]()
	p.s.reach(pod, reach)
	var out []*v1.Pod
	for uid := range reach {
		if other := p.s.pods[uid]; other != nil && younger(pod, other) {
			out = append(out, other)
		}
	}
	return out
}

// asIfGone is the one place that says which pods a judgement leaves out of
// the cluster (docs/behavior.md §12). Every rule of a pod is judged against
// the cluster as it is, with only these pods out:
//   - the pod itself (Judge takes it out);
//   - terminating pods (the scheduler's cache, and so the snapshot, never
//     holds them);
//   - for the anti-affinity of an older pod only, a younger pod that
//     violates its own anti-affinity and is actually leaving: its
//     eviction was accepted (evicting) or, in a dry run, would be
//     (dry-run). Of two pods that violate each other only the younger
//     goes; the older one is not blamed for a pod on its way out.
//
// Any other state (grace, protected, no-fit, pdb-blocked, paced,
// waiting-owner, error) leaves the pod where it is, for every rule: a pod
// whose required pod affinity is met by a pod that cannot leave is met,
// and an older pod whose anti-affinity a pod that cannot leave breaks is
// in violation itself.
func (jd *judgement) asIfGone() bool {
	if jd == nil || !jd.leaving {
		return false
	}
	for _, v := range jd.verdicts {
		if v.Rule == enforcerv1alpha1.PodAntiAffinity {
			return true
		}
	}
	return false
}

// leaving: the pod's eviction was accepted (it stays evicting until it is
// seen terminating) or, in a dry run, would be.
func (e *Enforcer) leaving(uid types.UID) bool {
	t := e.tracked[uid]
	return t != nil && (t.state == violationsv1alpha1.StateEvicting || t.state == violationsv1alpha1.StateDryRun)
}

// younger orders pods youngest first (then by namespace and name).
func younger(a, b *v1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// decide takes one violating pod as far as it may go in this pass.
func (p *pass) decide(ctx context.Context, pod *v1.Pod, verdicts []Verdict) {
	t := p.tracked[pod.UID]
	if t == nil {
		t = &tracked{since: map[enforcerv1alpha1.Rule]time.Time{}}
		p.tracked[pod.UID] = t
	}
	violated := map[enforcerv1alpha1.Rule]bool{}
	for _, v := range verdicts {
		violated[v.Rule] = true
		if _, ok := t.since[v.Rule]; !ok {
			t.since[v.Rule] = p.now
		}
	}
	for r := range t.since {
		if !violated[r] { // that rule's violation cleared: its grace restarts
			delete(t.since, r)
		}
	}
	// The verdict whose grace ends first decides.
	v := verdicts[0]
	due := t.since[v.Rule].Add(grace(p.cfg, v.Rule))
	for _, w := range verdicts[1:] {
		if d := t.since[w.Rule].Add(grace(p.cfg, w.Rule)); d.Before(due) {
			v, due = w, d
		}
	}
	base := violationsv1alpha1.Report{Rule: v.Rule, Reason: v.Reason, Terms: v.Terms, Since: metav1.NewTime(t.since[v.Rule])}
	if p.book.Has(pod.UID) && t.last != nil {
		// Its eviction was accepted: it stays evicting until it is seen
		// terminating (a dry run's stays dry-run while it is booked).
		base.State, base.Target = t.last.State, t.last.Target
		p.report(pod, base, t)
		return
	}
	if wait := due.Sub(p.now); wait > 0 {
		p.after(wait)
		base.State = violationsv1alpha1.StateGrace
		p.report(pod, base, t)
		return
	}
	if why := protection(pod, p.s.nodes[pod.Spec.NodeName], p.cfg, p.s.job(pod)); why != "" {
		base.State, base.Detail = violationsv1alpha1.StateProtected, why
		p.report(pod, base, t)
		return
	}
	if t.last != nil && p.now.Before(t.retryAfter) {
		p.after(t.retryAfter.Sub(p.now))
		base.State, base.Detail, base.Target = t.last.State, t.last.Detail, t.last.Target
		p.report(pod, base, t)
		return
	}
	// What may hold the pod back is asked before its replacement is
	// placed: a placement costs a Filter over every node, and a pod held
	// back would only undo it.
	owner := metav1.GetControllerOf(pod)
	if why, until := p.loops.looping(owner.UID, v.Rule, pod, p.now); why != "" {
		// Another rule it is due to go for may still move it.
		w := p.notLooping(pod, owner.UID, verdicts, t, v.Rule)
		if w == nil {
			base.State, base.Detail = violationsv1alpha1.StateLooping, why
			p.after(until.Sub(p.now))
			p.report(pod, base, t)
			return
		}
		v = *w
		base = violationsv1alpha1.Report{Rule: v.Rule, Reason: v.Reason, Terms: v.Terms, Since: metav1.NewTime(t.since[v.Rule])}
	}
	if busy := p.book.OwnerBusy(p.s, pod, owner.UID); busy != "" {
		base.State, base.Detail, base.Wait = violationsv1alpha1.StateWaitingOwner, fmt.Sprintf("%s %s %s", owner.Kind, owner.Name, busy), string(evictions.HoldOwner)
		p.report(pod, base, t)
		return
	}
	if hold, why, aging := p.book.CapReached(p.s, pod, p.now); hold != "" {
		// The evictions that hold the cap settle on their pods' events,
		// which start a pass; only their timeout, and another actor's
		// eviction leaving the count, need a timer.
		base.State, base.Detail, base.Wait = violationsv1alpha1.StatePaced, why, string(hold)
		p.after(p.book.NextTimeout(p.now))
		p.after(aging)
		p.report(pod, base, t)
		return
	}
	if tokens := p.limiter.TokensAt(p.now); tokens < 1 {
		base.State, base.Detail, base.Wait = violationsv1alpha1.StatePaced, "rate limit", violationsv1alpha1.WaitRateLimit
		p.after(time.Duration((1 - tokens) / float64(p.limiter.Limit()) * float64(time.Second)))
		p.report(pod, base, t)
		return
	}
	if t.noFit != nil && *t.noFit == p.s.fitGeneration {
		// Nothing that could give its replacement a node changed since
		// the last placement found none.
		base.State = violationsv1alpha1.StateNoFit
		p.report(pod, base, t)
		return
	}
	t.noFit = nil
	target, err := p.place(ctx, pod)
	if err != nil {
		base.State, base.Detail = violationsv1alpha1.StateError, "finding a node for its replacement: "+err.Error()
		p.report(pod, base, t)
		return
	}
	base.Target = target
	if target == "" && !p.cfg.EvictWithoutFit {
		base.State = violationsv1alpha1.StateNoFit
		gen := p.s.fitGeneration
		t.noFit = &gen
		p.report(pod, base, t)
		return
	}
	// The token was there before the placement and nothing else took one
	// since (a pass is the limiter's only user).
	p.limiter.AllowN(p.now, 1)
	f := evictions.NewInFlight(p.s, pod, target, p.now)
	// In the history before it is asked for, and saved with it (evict).
	undo := p.loops.add(owner.UID, v.Rule, pod, f.Before.Newest, target, p.now)
	base.State, base.Detail = p.evict(ctx, pod, v.Rule, t, f)
	leaving := base.State == violationsv1alpha1.StateEvicting || base.State == violationsv1alpha1.StateDryRun
	if !leaving {
		undo()
		p.unplace(ctx, pod, target)
	}
	last := base
	t.last = &last
	if leaving {
		// A dry run books its evictions as the live run does, so the
		// caps, the owner's one-in-flight and the room held for
		// replacements apply to it alike (evictions.Book.Add).
		f.Simulated = base.State == violationsv1alpha1.StateDryRun
		p.book.Add(f)
	}
	p.report(pod, base, t)
}

// notLooping is a verdict of pod other than rule's whose grace is over and
// for which its owner is not looping (nil: none).
func (p *pass) notLooping(pod *v1.Pod, owner types.UID, verdicts []Verdict, t *tracked, rule enforcerv1alpha1.Rule) *Verdict {
	for i, w := range verdicts {
		if w.Rule == rule || t.since[w.Rule].Add(grace(p.cfg, w.Rule)).After(p.now) {
			continue
		}
		if why, until := p.loops.looping(owner, w.Rule, pod, p.now); why != "" {
			p.after(until.Sub(p.now))
			continue
		}
		return &verdicts[i]
	}
	return nil
}

// after asks for the next pass within d.
func (p *pass) after(d time.Duration) {
	if d > 0 && (p.next == 0 || d < p.next) {
		p.next = d
	}
}

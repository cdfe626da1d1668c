// Package enforcer holds running pods to their own placement rules
// (RequiredDuringSchedulingRequiredDuringExecution): a pod that opted in and
// whose node no longer satisfies its node affinity, or whose domain no
// longer satisfies its required pod (anti-)affinity, is evicted through the
// Eviction API once the violation has lasted its grace period, and only when
// the scheduler's own filters say its replacement fits on another node.
// Judging uses our scheduler plugins (judge.go), fitting the profile's real
// framework (internal/explain.Placer). docs/enforcement.md is the operator's
// guide; docs/behavior.md §12 says what counts as a violation.
package enforcer

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/utils/clock"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// The states a violating pod is reported in.
const (
	StateGrace        = "grace"         // violating, grace period not over
	StateProtected    = "protected"     // never evicted; Detail says why
	StateWaitingOwner = "waiting-owner" // its owner has a pod not Ready or terminating
	StatePaced        = "paced"         // a cap or the rate limit holds it back
	StateNoFit        = "no-fit"        // no other node would take its replacement
	StatePDBBlocked   = "pdb-blocked"   // the Eviction API answered 429
	StateEvicting     = "evicting"      // eviction accepted
	StateDryRun       = "dry-run"       // the server accepted a dryRun eviction
	StateError        = "error"         // the eviction failed otherwise; Detail has the error
	StateUnjudged     = "unjudged"      // opted in, but cannot be judged; Detail says why
)

// Report is one opted-in pod that violates a rule, after a pass. Its JSON
// form is what /violations serves.
type Report struct {
	Pod    string    `json:"pod"` // namespace/name
	UID    types.UID `json:"uid"`
	Node   string    `json:"node"`
	Rule   Rule      `json:"rule"`
	Reason string    `json:"reason"`
	Terms  []string  `json:"terms,omitempty"`
	State  string    `json:"state"`
	// Detail is the protection reason, the refusal or the error.
	Detail string `json:"detail,omitempty"`
	// Target is where the replacement would be scheduled.
	Target string      `json:"target,omitempty"`
	Since  metav1.Time `json:"since"`
}

// Cluster is one read of what the enforcer judges (from its informers).
type Cluster struct {
	Nodes      []*v1.Node
	Pods       []*v1.Pod
	Namespaces []*v1.Namespace
}

// Enforcer decides and acts, one pass at a time. It keeps, across passes,
// when each violation was first seen (grace periods), refusals (backoff)
// and its own evictions in flight (caps); everything else is read from the
// cluster each pass, so a new leader continues where the last one stopped.
type Enforcer struct {
	cfg      *Config
	sched    *config.KubeSchedulerConfiguration
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.Clock
	limiter  flowcontrol.PassiveRateLimiter
	backoff  *flowcontrol.Backoff
	metrics  *enforcerMetrics
	// informers, when set, serve the Namespace lister InterPodAffinity
	// reads (Run's informers, already synced); otherwise each pass serves
	// the Cluster's namespaces from an in-memory clientset.
	informers informers.SharedInformerFactory

	mu     sync.Mutex
	judged map[types.UID]*judgement
	// rejudge are pods the last pass's decisions can have changed the
	// verdict of (a younger pod kept or leaving again).
	rejudge sets.Set[types.UID]
	// gone are the judged pods that count as gone for older ones.
	gone     sets.Set[types.UID]
	tracked  map[types.UID]*tracked
	inflight map[types.UID]inflight
	reports  []Report
}

// tracked is a violating pod's memory between passes.
type tracked struct {
	since map[Rule]time.Time
	state string // last reported, so events fire on changes only
	// last is the outcome of the last eviction request, reported again
	// while its backoff lasts (a 429 stays pdb-blocked until the retry).
	last *Report
}

// inflight is an eviction this enforcer made whose pod or owner has not
// settled yet.
type inflight struct {
	node, namespace string
	owner           types.UID
	// ready is how many of the owner's pods were Ready (the evicted one
	// included) when it was evicted: the eviction settles once as many
	// are Ready again, so a replacement its controller has not created
	// yet still counts as in flight.
	ready int
	// pod is the evicted pod and target the node its replacement was
	// promised; before holds the owner's pods at the eviction (pod
	// included). Until a pod of the owner not among them is bound, the
	// replacement takes no room the scheduler counts, so every pass holds
	// target's room for it (holdInflight).
	pod    *v1.Pod
	target string
	before sets.Set[types.UID]
	at     time.Time
}

// inflightTimeout forgets an eviction whose owner never recovers its Ready
// count (scaled down, or its replacement cannot start), so that one stuck
// owner cannot hold a cap forever.
const inflightTimeout = 10 * time.Minute

// New returns an Enforcer. sched is placement-scheduler's configuration;
// clk is the clock grace periods, backoff and the rate limit read.
func New(cfg *Config, sched *config.KubeSchedulerConfiguration, client kubernetes.Interface, recorder record.EventRecorder, clk clock.Clock) *Enforcer {
	b := flowcontrol.NewBackOff(cfg.Backoff.Initial.Duration, cfg.Backoff.Max.Duration)
	b.Clock = clk
	return &Enforcer{
		cfg: cfg, sched: sched, client: client, recorder: recorder, clock: clk,
		limiter:  flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(float32(cfg.EvictionsPerSecond), cfg.Burst, clk),
		backoff:  b,
		metrics:  newMetrics(),
		tracked:  map[types.UID]*tracked{},
		judged:   map[types.UID]*judgement{},
		rejudge:  sets.New[types.UID](),
		gone:     sets.New[types.UID](),
		inflight: map[types.UID]inflight{},
	}
}

// Reports returns the last pass's reports, sorted by pod.
func (e *Enforcer) Reports() []Report {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append(make([]Report, 0, len(e.reports)), e.reports...)
}

// pass is one pass's working state.
type pass struct {
	*Enforcer
	s        *clusterState
	now      time.Time
	placers  map[string]*explain.Placer
	mutating bool // the placers' mutation session on the snapshot is open
	next     time.Duration
	reports  []Report
	seen     map[types.UID]bool
	placeCtx context.Context
	logger   klog.Logger
}

// judgement is the last verdict on an opted-in pod that violates a rule or
// cannot be judged; pods that break nothing have none.
type judgement struct {
	verdicts []Verdict
	err      error
	// leaving: as last decided, the pod is on its way out (not kept as
	// protected or no-fit). A pod violating its anti-affinity counts as
	// gone for older pods only while it is leaving; otherwise they see it
	// and report their own violation.
	leaving bool
}

// Pass judges every opted-in pod of c and acts on those due. It returns how
// soon the next pass is needed for a grace period or backoff to be re-read
// (0: no timer pending; events and the resync will call again). It builds
// its state from c; Run keeps one state from its informers instead and
// judges only what each change can affect.
func (e *Enforcer) Pass(ctx context.Context, c *Cluster) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the judge's and placers' informers
	logger := klog.FromContext(ctx)
	s := newClusterState(ctx)
	nsObjs := make([]runtime.Object, 0, len(c.Namespaces))
	for _, ns := range c.Namespaces {
		s.setNamespace(ns, ns.Name)
		nsObjs = append(nsObjs, ns)
	}
	for _, n := range c.Nodes {
		s.setNode(logger, n, n.Name)
	}
	for _, pod := range c.Pods {
		s.setPod(logger, pod, pod.UID)
	}
	factory := e.informers
	if factory == nil {
		factory = informers.NewSharedInformerFactory(fake.NewClientset(nsObjs...), 0)
	}
	if err := s.sync(logger); err != nil {
		return 0, err
	}
	j, err := newJudge(ctx, e.sched, factory, s)
	if err != nil {
		return 0, fmt.Errorf("building the judge: %w", err)
	}
	return e.pass(ctx, s, j, nil, true)
}

// step applies the changes recorded since the last step to s and runs a
// pass over the pods they can affect (every pod after a resync).
func (e *Enforcer) step(ctx context.Context, s *clusterState, j *Judge, ch *changes) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	affected, full := ch.drain(klog.FromContext(ctx), s)
	return e.pass(ctx, s, j, affected, full)
}

// pass re-judges the pods in affected (every pod when full), pods whose
// verdict a change of theirs can alter in turn included, then decides
// for every pod with a violation on record, youngest first. Pods outside
// affected keep their last verdict: nothing they depend on changed.
func (e *Enforcer) pass(ctx context.Context, s *clusterState, j *Judge, affected sets.Set[types.UID], full bool) (time.Duration, error) {
	logger := klog.FromContext(ctx)
	placeCtx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the placers' informers
	if err := s.sync(logger); err != nil {
		return 0, fmt.Errorf("updating the snapshot: %w", err)
	}
	p := &pass{Enforcer: e, s: s, now: e.clock.Now(), placers: map[string]*explain.Placer{}, seen: map[types.UID]bool{}, placeCtx: placeCtx, logger: logger}
	p.settleInflight()
	defer func() {
		if p.mutating {
			if err := s.snapshot.EndMutations(); err != nil {
				logger.Error(err, "Ending the placers' mutation session")
			}
		}
	}()

	if full {
		e.judged = map[types.UID]*judgement{}
		e.gone = sets.New[types.UID]()
		affected = sets.New[types.UID]()
		for uid := range s.pods {
			affected.Insert(uid)
		}
	}
	for uid := range e.rejudge {
		affected.Insert(uid)
	}
	e.rejudge = sets.New[types.UID]()
	p.judgeAll(ctx, j, affected)

	// Decide youngest first, as judged: of pods whose anti-affinity
	// rejects each other, the one that came last goes first.
	order := make([]*v1.Pod, 0, len(e.judged))
	for uid := range e.judged {
		order = append(order, s.pods[uid])
	}
	sort.Slice(order, func(i, j int) bool { return younger(order[i], order[j]) })
	for _, pod := range order {
		jd := e.judged[pod.UID]
		if jd.err != nil {
			p.report(pod, Report{State: StateUnjudged, Detail: jd.err.Error()}, nil)
			continue
		}
		p.decide(ctx, pod, jd.verdicts)
		// A pod kept (protected, no-fit) is no longer gone for the older
		// pods that see it, and one that leaves again is: they are judged
		// again on the next pass, which comes at once.
		wasGone := jd.gone()
		jd.leaving = e.leaving(pod.UID)
		p.setJudged(pod.UID, jd)
		if jd.gone() != wasGone {
			for _, other := range p.olderInReach(pod) {
				e.rejudge.Insert(other.UID)
			}
			p.after(time.Millisecond)
		}
	}

	// Violations that cleared (or pods that left) are forgotten: a label
	// removed and restored inside the grace period evicts nothing.
	for uid, t := range e.tracked {
		if p.seen[uid] {
			continue
		}
		delete(e.tracked, uid)
		e.backoff.Reset(string(uid))
		if t.state == StateGrace && s.pods[uid] != nil {
			logger.V(2).Info("Violation cleared", "uid", uid)
		}
	}
	sort.Slice(p.reports, func(i, j int) bool { return p.reports[i].Pod < p.reports[j].Pod })
	e.reports = p.reports
	e.metrics.violations.Reset()
	for _, r := range p.reports {
		e.metrics.violations.WithLabelValues(string(r.Rule), r.State).Inc()
	}
	return p.next, nil
}

// judgeAll re-judges the pods in work, youngest first. A pod judged to
// violate its anti-affinity counts as gone for every older pod; when that
// changes, the older pods that can see it are judged again too.
func (p *pass) judgeAll(ctx context.Context, j *Judge, work sets.Set[types.UID]) {
	queue := make([]*v1.Pod, 0, work.Len())
	queued := sets.New[types.UID]()
	for uid := range work {
		if pod := p.s.pods[uid]; pod != nil {
			queue = append(queue, pod)
			queued.Insert(uid)
		} else {
			p.setJudged(uid, nil)
		}
	}
	sort.Slice(queue, func(i, j int) bool { return younger(queue[i], queue[j]) })
	for i := 0; i < len(queue); i++ {
		pod := queue[i]
		wasGone := p.judged[pod.UID].gone()
		p.setJudged(pod.UID, nil)
		p.setJudged(pod.UID, p.judgeOne(ctx, j, pod))
		if wasGone == p.judged[pod.UID].gone() {
			continue
		}
		added := false
		for _, other := range p.olderInReach(pod) {
			if !queued.Has(other.UID) {
				queue = append(queue, other)
				queued.Insert(other.UID)
				added = true
			}
		}
		if added {
			rest := queue[i+1:]
			sort.Slice(rest, func(a, b int) bool { return younger(rest[a], rest[b]) })
		}
	}
}

// judgeOne judges one pod, as the youngest-first order left things: every
// younger pod that violates its anti-affinity counts as gone. It returns
// nil when the pod is not judged or breaks nothing.
func (p *pass) judgeOne(ctx context.Context, j *Judge, pod *v1.Pod) *judgement {
	if !inCache(pod) {
		return nil
	}
	rules, err := OptIn(pod, p.cfg.namespaceRules(p.s.nsLabels(pod.Namespace)))
	if err != nil {
		return &judgement{err: err}
	}
	if rules.Empty() {
		return nil
	}
	var gone []*v1.Pod
	for uid := range p.gone {
		if other := p.s.pods[uid]; other != nil && younger(other, pod) {
			gone = append(gone, other)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return younger(gone[i], gone[j]) })
	verdicts, err := j.Judge(ctx, pod, rules, gone)
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
	if jd.gone() {
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

// gone: the pod violates its own anti-affinity and is leaving, so older
// pods are judged without it (of two pods that violate each other only
// the youngest goes, unless it cannot).
func (jd *judgement) gone() bool {
	if jd == nil || !jd.leaving {
		return false
	}
	for _, v := range jd.verdicts {
		if v.Rule == PodAntiAffinity {
			return true
		}
	}
	return false
}

// leaving: the last decision did not keep the pod (protected or no-fit);
// a pod not decided yet is taken to be leaving.
func (e *Enforcer) leaving(uid types.UID) bool {
	t := e.tracked[uid]
	return t == nil || (t.state != StateProtected && t.state != StateNoFit)
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
		t = &tracked{since: map[Rule]time.Time{}}
		p.tracked[pod.UID] = t
	}
	violated := map[Rule]bool{}
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
	due := t.since[v.Rule].Add(p.cfg.grace(v.Rule))
	for _, w := range verdicts[1:] {
		if d := t.since[w.Rule].Add(p.cfg.grace(w.Rule)); d.Before(due) {
			v, due = w, d
		}
	}
	base := Report{Rule: v.Rule, Reason: v.Reason, Terms: v.Terms, Since: metav1.NewTime(t.since[v.Rule])}
	if wait := due.Sub(p.now); wait > 0 {
		p.after(wait)
		base.State = StateGrace
		p.report(pod, base, t)
		return
	}
	if why := protection(pod, p.s.nodes[pod.Spec.NodeName], p.cfg.EvictLocalStoragePods); why != "" {
		base.State, base.Detail = StateProtected, why
		p.report(pod, base, t)
		return
	}
	id := string(pod.UID)
	if p.backoff.IsInBackOffSinceUpdate(id, p.now) && t.last != nil {
		p.after(p.backoff.Get(id))
		base.State, base.Detail, base.Target = t.last.State, t.last.Detail, t.last.Target
		p.report(pod, base, t)
		return
	}
	owner := metav1.GetControllerOf(pod)
	if p.ownerBusy(pod, owner.UID) {
		base.State, base.Detail = StateWaitingOwner, fmt.Sprintf("%s %s has a pod not Ready or terminating", owner.Kind, owner.Name)
		p.report(pod, base, t)
		return
	}
	if cap := p.capReached(pod); cap != "" {
		base.State, base.Detail = StatePaced, cap
		p.after(time.Second)
		p.report(pod, base, t)
		return
	}
	target, err := p.place(ctx, pod)
	if err != nil {
		base.State, base.Detail = StateError, "finding a node for its replacement: "+err.Error()
		p.report(pod, base, t)
		return
	}
	base.Target = target
	if target == "" && !p.cfg.EvictWithoutFit {
		base.State = StateNoFit
		p.report(pod, base, t)
		return
	}
	if !p.limiter.TryAccept() {
		base.State, base.Detail = StatePaced, "rate limit"
		p.after(time.Duration(float64(time.Second) / p.cfg.EvictionsPerSecond))
		p.unplace(ctx, pod, target)
		p.report(pod, base, t)
		return
	}
	base.State, base.Detail = p.evict(ctx, pod, v.Rule, t)
	if base.State != StateEvicting && base.State != StateDryRun {
		p.unplace(ctx, pod, target)
	}
	last := base
	t.last = &last
	if base.State == StateEvicting {
		p.inflight[pod.UID] = inflight{node: pod.Spec.NodeName, namespace: pod.Namespace, owner: owner.UID,
			ready: p.readyOf(owner.UID), pod: pod, target: target, before: p.s.owners[owner.UID].Clone(), at: p.now}
	}
	p.report(pod, base, t)
}

// evict asks the Eviction API to evict pod, with its UID as a precondition
// (a pod re-created under the same name is another pod), and dryRun=All in
// dry-run mode. It returns the state and detail to report.
func (p *pass) evict(ctx context.Context, pod *v1.Pod, rule Rule, t *tracked) (string, string) {
	uid := pod.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if p.cfg.DryRun {
		ev.DeleteOptions.DryRun = []string{metav1.DryRunAll}
	}
	err := p.client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	id := string(uid)
	switch {
	case err == nil && p.cfg.DryRun:
		p.metrics.evictions.WithLabelValues(string(rule), StateDryRun).Inc()
		p.backoff.Next(id, p.now) // report again later, not every pass
		return StateDryRun, ""
	case err == nil:
		p.metrics.evictions.WithLabelValues(string(rule), "evicted").Inc()
		p.metrics.latency.WithLabelValues(string(rule)).Observe(p.now.Sub(t.since[rule]).Seconds())
		return StateEvicting, ""
	case apierrors.IsTooManyRequests(err):
		p.metrics.evictions.WithLabelValues(string(rule), StatePDBBlocked).Inc()
		p.backoff.Next(id, p.now)
		p.after(p.backoff.Get(id))
		return StatePDBBlocked, err.Error()
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		p.metrics.evictions.WithLabelValues(string(rule), "gone").Inc()
		return StateError, "the pod is gone or was replaced: " + err.Error()
	default:
		p.metrics.evictions.WithLabelValues(string(rule), StateError).Inc()
		p.backoff.Next(id, p.now)
		p.after(p.backoff.Get(id))
		return StateError, err.Error()
	}
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
// replacements of earlier passes' evictions that are not bound yet: the
// evicted pod may be gone and its replacement Pending or not created, and
// neither takes room in the snapshot, yet the room is spoken for. Without
// it, a pass would promise the last free slots again and evict pods whose
// replacements then stay Pending.
func (p *pass) holdInflight() {
	for _, f := range p.inflight {
		if f.target == "" || p.s.nodes[f.target] == nil || p.replaced(f) {
			continue
		}
		if err := explain.Hold(p.s.snapshot, f.pod, f.target); err != nil {
			p.logger.Error(err, "Holding room for a replacement", "pod", klog.KObj(f.pod), "node", f.target)
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

// ownerBusy: another pod of the owner is not Ready or is terminating, or an
// eviction of ours for this owner is still in flight. One pod per owner in
// flight: the next goes once the last one's replacement is Ready.
func (p *pass) ownerBusy(pod *v1.Pod, owner types.UID) bool {
	for _, f := range p.inflight {
		if f.owner == owner {
			return true
		}
	}
	for uid := range p.s.owners[owner] {
		other := p.s.pods[uid]
		if other.UID != pod.UID && (other.DeletionTimestamp != nil || !podReady(other)) {
			return true
		}
	}
	return false
}

// capReached names the cap that holds pod back, or "". Evictions in flight
// are ours plus any pod terminating after an eviction (so a new leader
// counts its predecessor's).
func (p *pass) capReached(pod *v1.Pod) string {
	node, ns, total := 0, 0, 0
	count := func(n, namespace string) {
		total++
		if n == pod.Spec.NodeName {
			node++
		}
		if namespace == pod.Namespace {
			ns++
		}
	}
	for _, f := range p.inflight {
		count(f.node, f.namespace)
	}
	for uid := range p.s.terminating {
		other := p.s.pods[uid]
		if _, ours := p.inflight[other.UID]; !ours && other.DeletionTimestamp != nil && evicted(other) {
			count(other.Spec.NodeName, other.Namespace)
		}
	}
	switch {
	case total >= p.cfg.Limits.Total:
		return fmt.Sprintf("limits.total (%d evictions in flight)", total)
	case node >= p.cfg.Limits.PerNode:
		return fmt.Sprintf("limits.perNode (%d evictions in flight on %s)", node, pod.Spec.NodeName)
	case ns >= p.cfg.Limits.PerNamespace:
		return fmt.Sprintf("limits.perNamespace (%d evictions in flight in %s)", ns, pod.Namespace)
	}
	return ""
}

// settleInflight forgets evictions whose pod is gone and whose owner has
// every pod Ready again.
func (p *pass) settleInflight() {
	for uid, f := range p.inflight {
		if p.s.pods[uid] != nil {
			continue
		}
		busy := false
		for puid := range p.s.owners[f.owner] {
			pod := p.s.pods[puid]
			if pod.DeletionTimestamp != nil || !podReady(pod) {
				busy = true
			}
		}
		if !busy && p.readyOf(f.owner) >= f.ready && p.replaced(f) || p.now.Sub(f.at) > inflightTimeout {
			delete(p.inflight, uid)
		}
	}
}

// replaced: a pod of f's owner that was not there at the eviction is in
// the scheduler's cache (inCache), so the scheduler counts the
// replacement itself. (A pod the owner adds for another reason, a scale-up,
// ends the hold as early; a scale-down that never replaces keeps it until
// inflightTimeout: cautious, never a second promise.)
func (p *pass) replaced(f inflight) bool {
	for uid := range p.s.owners[f.owner] {
		if f.before.Has(uid) {
			continue
		}
		if inCache(p.s.pods[uid]) {
			return true
		}
	}
	return false
}

// readyOf counts the owner's pods that are Ready and not terminating.
func (p *pass) readyOf(owner types.UID) int {
	n := 0
	for uid := range p.s.owners[owner] {
		if pod := p.s.pods[uid]; pod.DeletionTimestamp == nil && podReady(pod) {
			n++
		}
	}
	return n
}

// after asks for the next pass within d.
func (p *pass) after(d time.Duration) {
	if d > 0 && (p.next == 0 || d < p.next) {
		p.next = d
	}
}

// report records r for pod and, when the state changed since the last
// pass, an event on the pod (and on its owner for evictions and no-fit).
func (p *pass) report(pod *v1.Pod, r Report, t *tracked) {
	r.Pod, r.UID, r.Node = pod.Namespace+"/"+pod.Name, pod.UID, pod.Spec.NodeName
	p.reports = append(p.reports, r)
	if t == nil {
		t = p.tracked[pod.UID]
		if t == nil {
			t = &tracked{since: map[Rule]time.Time{}}
			p.tracked[pod.UID] = t
		}
	}
	p.seen[pod.UID] = true
	if t.state == r.State {
		return
	}
	t.state = r.State
	p.logger.V(2).Info("Placement enforcement", "pod", klog.KObj(pod), "rule", r.Rule, "state", r.State, "detail", r.Detail, "target", r.Target)
	typ, reason, msg := v1.EventTypeWarning, "", ""
	rule := fmt.Sprintf("%s (%s)", r.Rule, r.Reason)
	switch r.State {
	case StateGrace:
		reason, msg = "PlacementViolation", fmt.Sprintf("violates %s; evicted after the grace period unless it clears", rule)
	case StateProtected:
		reason, msg = "PlacementProtected", fmt.Sprintf("violates %s but is never evicted: %s", rule, r.Detail)
	case StateNoFit:
		reason, msg = "PlacementNoFit", fmt.Sprintf("violates %s; kept: no other node would take its replacement", rule)
	case StatePDBBlocked:
		reason, msg = "PlacementEvictionBlocked", fmt.Sprintf("violates %s; eviction refused, retried after backoff: %s", rule, r.Detail)
	case StateEvicting:
		typ, reason, msg = v1.EventTypeNormal, "PlacementEvicted", fmt.Sprintf("evicted for %s; its replacement fits on %s", rule, orNone(r.Target))
	case StateDryRun:
		typ, reason, msg = v1.EventTypeNormal, "PlacementDryRun", fmt.Sprintf("would be evicted for %s (dry run; the Eviction API agreed); its replacement fits on %s", rule, orNone(r.Target))
	case StateError:
		reason, msg = "PlacementEvictionFailed", fmt.Sprintf("violates %s; eviction failed: %s", rule, r.Detail)
	case StateUnjudged:
		reason, msg = "PlacementUnjudged", "opted in to enforcement but cannot be judged: "+r.Detail
	default: // paced, waiting-owner, backoff: transient, logged only
		return
	}
	p.recorder.Event(pod, typ, reason, msg)
	if o := metav1.GetControllerOf(pod); o != nil && (r.State == StateEvicting || r.State == StateNoFit) {
		ref := &v1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: pod.Namespace}
		p.recorder.Event(ref, typ, reason, fmt.Sprintf("pod %s %s", pod.Name, msg))
	}
}

func orNone(s string) string {
	if s == "" {
		return "no node (evictWithoutFit)"
	}
	return s
}

// podReady: the pod's Ready condition is True.
func podReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// evicted: the pod carries the DisruptionTarget condition the Eviction API
// sets.
func evicted(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
			return strings.Contains(c.Reason, "Eviction")
		}
	}
	return false
}

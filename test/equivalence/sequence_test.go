package equivalence

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// Sequence mode: ONE long-lived instance of each plugin per side (upstream's
// and ours), each side with its own backend cache, snapshot, informers and
// framework handle, driven through a generated Sequence of cluster events
// and scheduling cycles exactly as kube-scheduler drives them. It exists to
// catch state kept ACROSS cycles (caches keyed by node, label indexes,
// copy-on-write cycle state) going stale, which the one-cycle mode (fresh
// plugins, fresh snapshot) cannot see.
//
// Knobs (environment):
//
//	EQUIVALENCE_SEQ_SEED=S         base seed (default defaultSeed)
//	EQUIVALENCE_SEQUENCES=N        sequences in TestSequence (default defaultSequences, 6 with -short)
//	EQUIVALENCE_SEQ_STEPS=K        steps per sequence after the initial cluster (default 120)
//	EQUIVALENCE_SEQ_INDEX=I        run only sequence I of the seed (replaying a report)
//	EQUIVALENCE_SEQUENCE_REPLAY=f  TestSequenceReplay runs the YAML reproducer in f
//	EQUIVALENCE_SEQUENCE_MUTANT=m  ... against the named sequence mutant instead of ours
const (
	defaultSequences = 200
	defaultSeqSteps  = 120
)

// seqConfig says what a sequence run compares.
type seqConfig struct {
	// candidate is compared against each kind's upstream plugin (nil
	// factory: the kind is not compared).
	candidate func(*kind) factory
	// profile also compares the whole profiles through the framework runtime.
	profile bool
}

func defaultSeqConfig() seqConfig {
	return seqConfig{candidate: func(k *kind) factory { return k.Ours }, profile: true}
}

// seqSide is one side of the comparison, built like kube-scheduler builds
// its own: cache, snapshot refreshed by UpdateSnapshot, informers, handle.
type seqSide struct {
	cache     cache.Cache
	snap      *cache.Snapshot
	nsStore   toolscache.Indexer
	podStore  toolscache.Indexer
	nominator *nominator
	handle    fwk.Handle
	opts      []frameworkruntime.Option
	plugins   map[string]fwk.Plugin // by upstream name
	profile   profileSide           // fw nil when not built
}

func newSeqSide(ctx context.Context) (*seqSide, error) {
	s := &seqSide{
		// Pod-group state follows the process-wide GenericWorkload gate, as
		// in kube-scheduler (TestSequenceGenericWorkload turns it on).
		cache:     k8sline.NewCache(ctx, utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload)),
		snap:      cache.NewEmptySnapshot(),
		nominator: &nominator{},
		plugins:   map[string]fwk.Plugin{},
	}
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	// The informers are never started: the stores are filled directly.
	s.nsStore = inf.Core().V1().Namespaces().Informer().GetIndexer()
	s.podStore = inf.Core().V1().Pods().Informer().GetIndexer()
	rec := metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done())
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), inf.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	// The snapshot and the cache are wired as kube-scheduler of the line
	// wires its own (lister, mutable lister, pod-group manager).
	s.opts = append(k8sline.SchedulerFrameworkOptions(s.cache, s.snap),
		frameworkruntime.WithInformerFactory(inf),
		frameworkruntime.WithPodNominator(s.nominator),
		frameworkruntime.WithMetricsRecorder(rec),
		frameworkruntime.WithSharedDRAManager(dynamicresources.NewDRAManager(ctx, claims, nil, inf)),
	)
	h, err := frameworkruntime.NewFramework(ctx, nil, nil, s.opts...)
	if err != nil {
		return nil, err
	}
	s.handle = h
	return s, nil
}

// seqRun replays one Sequence. Its model of the cluster is authoritative:
// steps naming objects it does not hold are no-ops.
type seqRun struct {
	ctx    context.Context
	logger klog.Logger
	seq    *Sequence
	base   Scenario // gates and args, for factories and comparators
	cfg    seqConfig
	a, b   *seqSide
	// upstreamProfile decides feasibility (where to assume) from upstream
	// alone, so a sequence's history does not depend on what is compared.
	upstreamProfile framework.Framework

	nodes     map[string]*v1.Node
	bound     map[string]*v1.Pod // in the cache as added pods
	assumed   map[string]*v1.Pod // in the cache as assumed pods
	ns        map[string]*v1.Namespace
	events    []Event // since the last cycle, for the queueing hints
	cycles    int
	construct []mismatch
	// effective counts the steps that changed something, by op (and the
	// cache/snapshot calls they made), for the batch log.
	effective map[string]int
}

// seqResult is what replaying a sequence found.
type seqResult struct {
	steps, cycles int
	step          int // index of the step with the first (matching) mismatch, -1 if none
	mms           []mismatch
	effective     map[string]int
}

func (s *Sequence) scenario() Scenario {
	return Scenario{Setup: s.Setup}
}

func newSeqRun(ctx context.Context, seq *Sequence, cfg seqConfig) (*seqRun, error) {
	ctx = quietContext(ctx)
	r := &seqRun{ctx: ctx, logger: klog.FromContext(ctx), seq: seq, base: seq.scenario(), cfg: cfg,
		nodes: map[string]*v1.Node{}, bound: map[string]*v1.Pod{}, assumed: map[string]*v1.Pod{},
		ns: map[string]*v1.Namespace{}, effective: map[string]int{}}
	var err error
	if r.a, err = newSeqSide(ctx); err != nil {
		return nil, err
	}
	if r.b, err = newSeqSide(ctx); err != nil {
		return nil, err
	}
	sc := &r.base
	for _, k := range kinds {
		cand := cfg.candidate(k)
		if cand == nil {
			continue
		}
		rec := &recorder{plugin: k.Name}
		pa, pb, ok := newPluginPair(rec, ctx, sc, r.a.handle, r.b.handle, k.Upstream, cand)
		r.construct = append(r.construct, rec.out...)
		if ok {
			r.a.plugins[k.Name], r.b.plugins[k.Name] = pa, pb
		}
	}
	if cfg.profile {
		rec := &recorder{plugin: "Profile"}
		pa, pb, ok := newProfilePair(rec, ctx, sc, r.a.opts, r.b.opts)
		r.construct = append(r.construct, rec.out...)
		if ok {
			pa.snap, pb.snap = r.a.snap, r.b.snap
			r.a.profile, r.b.profile = pa, pb
			r.upstreamProfile = pa.fw
		}
	}
	if r.upstreamProfile == nil {
		// Not compared (or both refuse the args): a profile of upstream
		// alone, with default args if the scenario's are refused. Distinct
		// profile names: DynamicResources registers an informer indexer
		// named after the profile, also when a later plugin fails.
		for i, fsc := range []*Scenario{sc, {Setup: Setup{Gates: sc.Gates}}} {
			prof, err := buildProfile(fsc, upstreamRegistry(fsc), true)
			if err != nil {
				continue
			}
			prof.SchedulerName = fmt.Sprintf("equivalence-feasibility-%d", i)
			if r.upstreamProfile, err = frameworkruntime.NewFramework(ctx, upstreamRegistry(fsc).registry, prof, r.a.opts...); err == nil {
				break
			}
		}
		if r.upstreamProfile == nil {
			return nil, fmt.Errorf("no upstream profile to decide feasibility with")
		}
	}
	return r, nil
}

// runSequence replays seq; it stops at the first step with a mismatch (with
// key, if key is set).
func runSequence(ctx context.Context, seq *Sequence, cfg seqConfig, key string) (seqResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the caches' metric goroutines
	r, err := newSeqRun(ctx, seq, cfg)
	if err != nil {
		return seqResult{}, err
	}
	res := seqResult{step: -1}
	match := func(mms []mismatch) bool {
		for _, m := range mms {
			if key == "" || m.key() == key {
				return true
			}
		}
		return false
	}
	if match(r.construct) {
		res.mms, res.step = r.construct, 0
		return res, nil
	}
	for i, st := range seq.Steps {
		mms := r.apply(st)
		res.steps++
		if match(mms) {
			res.mms, res.step = mms, i
			break
		}
	}
	res.cycles = r.cycles
	res.effective = r.effective
	return res, nil
}

func (r *seqRun) both(f func(s *seqSide)) {
	f(r.a)
	f(r.b)
}

func (r *seqRun) event(ev Event) {
	r.events = append(r.events, ev)
	if len(r.events) > 6 {
		r.events = r.events[len(r.events)-6:]
	}
}

// apply runs one step on both sides and returns the mismatches it found.
func (r *seqRun) apply(st SeqStep) []mismatch {
	log := r.logger
	switch st.Op {
	case OpAddNode:
		if st.Node == nil || r.nodes[st.Node.Name] != nil {
			return nil
		}
		r.nodes[st.Node.Name] = st.Node
		r.effective["AddNode"]++
		r.both(func(s *seqSide) { s.cache.AddNode(log, st.Node.DeepCopy()) })
		r.event(Event{Kind: NodeAdd, NewNode: st.Node})
	case OpUpdateNode:
		old := r.nodes[st.Node.Name]
		if old == nil {
			return nil
		}
		r.nodes[st.Node.Name] = st.Node
		r.effective["UpdateNode"]++
		r.both(func(s *seqSide) { s.cache.UpdateNode(log, old.DeepCopy(), st.Node.DeepCopy()) })
		r.event(Event{Kind: NodeUpdate, OldNode: old, NewNode: st.Node})
	case OpRemoveNode:
		old := r.nodes[st.Name]
		if old == nil {
			return nil
		}
		delete(r.nodes, st.Name)
		return r.cacheErr("RemoveNode", func(s *seqSide) error { return s.cache.RemoveNode(log, old.DeepCopy()) })
	case OpAddPod:
		if st.Pod == nil || r.known(PodKey(st.Pod)) {
			return nil
		}
		return r.addBound(st.Pod)
	case OpRelabelPod:
		old := r.bound[st.Name]
		if old == nil {
			return nil
		}
		p := old.DeepCopy()
		p.Labels = cloneLabels(st.Labels)
		r.bound[st.Name] = p
		r.event(Event{Kind: AssignedPodUpdate, OldPod: old, NewPod: p})
		return r.cacheErr("UpdatePod", func(s *seqSide) error {
			s.podStore.Update(p)
			return s.cache.UpdatePod(log, old.DeepCopy(), p.DeepCopy())
		})
	case OpDeletePod:
		return r.deletePod(st.Name)
	case OpMovePod:
		if st.Pod == nil || !r.known(st.Name) {
			return nil
		}
		out := r.deletePod(st.Name)
		return append(out, r.addBound(st.Pod)...)
	case OpConfirm:
		p := r.assumed[st.Name]
		if p == nil {
			return nil
		}
		delete(r.assumed, st.Name)
		r.bound[st.Name] = p
		r.event(Event{Kind: AssignedPodAdd, NewPod: p})
		return r.cacheErr("AddPod(confirm)", func(s *seqSide) error {
			s.podStore.Update(p)
			return s.cache.AddPod(log, p.DeepCopy())
		})
	case OpForget:
		p := r.assumed[st.Name]
		if p == nil {
			return nil
		}
		delete(r.assumed, st.Name)
		return r.cacheErr("ForgetPod", func(s *seqSide) error { return s.cache.ForgetPod(log, p.DeepCopy()) })
	case OpSetNS:
		if st.Namespace == nil {
			return nil
		}
		r.ns[st.Namespace.Name] = st.Namespace
		r.effective["SetNamespace"]++
		// A label change bumps no NodeInfo generation: plugins must read the
		// lister live.
		r.both(func(s *seqSide) {
			if err := s.nsStore.Update(st.Namespace.DeepCopy()); err != nil {
				panic(err)
			}
		})
	case OpDeleteNS:
		old := r.ns[st.Name]
		if old == nil {
			return nil
		}
		delete(r.ns, st.Name)
		r.effective["DeleteNamespace"]++
		r.both(func(s *seqSide) {
			if err := s.nsStore.Delete(old); err != nil {
				panic(err)
			}
		})
	case OpCycle:
		if st.Cycle == nil || st.Cycle.Pod == nil {
			return nil
		}
		return r.cycle(st.Cycle)
	}
	return nil
}

func (r *seqRun) known(key string) bool {
	return r.bound[key] != nil || r.assumed[key] != nil
}

// cacheErr runs f on both sides; the cache must accept what the scheduler's
// event handlers would feed it, identically on both sides.
func (r *seqRun) cacheErr(op string, f func(s *seqSide) error) []mismatch {
	r.effective[op]++
	ea, eb := errString(f(r.a)), errString(f(r.b))
	if ea == "<nil>" && eb == "<nil>" {
		return nil
	}
	return []mismatch{{Plugin: "Harness", Check: op, Where: "the generated step is not valid for the cache", Upstream: ea, Ours: eb}}
}

func (r *seqRun) addBound(p *v1.Pod) []mismatch {
	r.bound[PodKey(p)] = p
	r.event(Event{Kind: AssignedPodAdd, NewPod: p})
	return r.cacheErr("AddPod", func(s *seqSide) error {
		s.podStore.Update(p)
		return s.cache.AddPod(r.logger, p.DeepCopy())
	})
}

func (r *seqRun) deletePod(key string) []mismatch {
	if p := r.bound[key]; p != nil {
		delete(r.bound, key)
		r.event(Event{Kind: AssignedPodDelete, OldPod: p})
		return r.cacheErr("RemovePod", func(s *seqSide) error {
			s.podStore.Delete(p)
			return s.cache.RemovePod(r.logger, p.DeepCopy())
		})
	}
	if p := r.assumed[key]; p != nil {
		// Deleted while assumed (the caches here never expire an assumed
		// pod: this and ForgetPod are the ways an assumption ends without a
		// bind). What the scheduler does to its cache then depends on the
		// line (1.37 has RemoveAssumedPod, older lines forget the pod).
		delete(r.assumed, key)
		return r.cacheErr("RemoveAssumedPod", func(s *seqSide) error {
			s.podStore.Delete(p)
			return k8sline.RemoveAssumedPod(r.logger, s.cache, p.DeepCopy())
		})
	}
	return nil
}

// cycle runs a scheduling cycle (or a pod-group cycle) for c.
func (r *seqRun) cycle(c *SeqCycle) []mismatch {
	key := PodKey(c.Pod)
	if r.known(key) {
		return nil // already placed: the queue would not pop it
	}
	var out []mismatch
	for _, s := range []*seqSide{r.a, r.b} {
		if err := s.cache.UpdateSnapshot(r.logger, s.snap); err != nil {
			out = append(out, mismatch{Plugin: "Harness", Check: "UpdateSnapshot", Upstream: "<nil>", Ours: errString(err)})
		}
	}
	if len(out) > 0 {
		return out
	}
	r.both(func(s *seqSide) {
		s.nominator.byNode = map[string][]fwk.PodInfo{}
		for _, p := range c.Nominated {
			pi, _ := framework.NewPodInfo(p)
			s.nominator.byNode[p.Status.NominatedNodeName] = append(s.nominator.byNode[p.Status.NominatedNodeName], pi)
		}
	})
	events := r.events
	r.events = nil
	// The pod exists (unbound) in the API while it is being scheduled.
	r.both(func(s *seqSide) { s.podStore.Update(c.Pod) })

	if len(c.Group) == 0 {
		return r.podCycle(c, events)
	}
	// On a line without pod-group cycles (1.35) this is its pod's cycle.
	return r.groupCycle(c, events)
}

// podCycle runs c.Pod's scheduling cycle and assumes it in the cache on
// the node c.Assume picks.
func (r *seqRun) podCycle(c *SeqCycle, events []Event) []mismatch {
	out := r.compareCycle(c, c.Pod, events)
	if c.Assume > 0 {
		if node := r.pickFeasible(c, c.Pod); node != "" {
			p := c.Pod.DeepCopy()
			p.Spec.NodeName = node
			r.assumed[PodKey(p)] = p
			out = append(out, r.cacheErr("AssumePod", func(s *seqSide) error { return s.cache.AssumePod(r.logger, p.DeepCopy()) })...)
		}
	}
	return out
}

// compareCycle compares one cycle for pod, plugin by plugin and for the
// whole profile.
func (r *seqRun) compareCycle(c *SeqCycle, pod *v1.Pod, events []Event) []mismatch {
	r.cycles++
	r.effective["cycle"]++
	if len(c.Group) > 0 {
		r.effective["cycle(pod group)"]++
	}
	if len(r.nodes) >= 150 {
		r.effective["cycle(>=150 nodes)"]++
	}
	sc := r.base
	sc.Pod = pod
	sc.Nominated = c.Nominated
	sc.Preemption = c.Preemption
	sc.NoStateChecks = c.NoStateChecks
	sc.PodGroupCycle = len(c.Group) > 0
	sc.Events = events
	for n := range r.nodes {
		sc.ScoreNodes = append(sc.ScoreNodes, n)
	}
	var out []mismatch
	for _, k := range kinds {
		pa, ok := r.a.plugins[k.Name]
		if !ok {
			continue
		}
		rec := &recorder{plugin: k.Name}
		comparePluginCycle(rec, r.ctx, &sc, side{pa, r.a.snap}, side{r.b.plugins[k.Name], r.b.snap})
		out = append(out, rec.out...)
	}
	if r.a.profile.fw != nil {
		rec := &recorder{plugin: "Profile"}
		compareProfileCycle(rec, r.ctx, &sc, r.a.profile, r.b.profile)
		out = append(out, rec.out...)
	}
	return out
}

// pickFeasible returns the node upstream's whole profile would accept for
// pod, chosen by c.Assume among the feasible ones, or "".
func (r *seqRun) pickFeasible(c *SeqCycle, pod *v1.Pod) string {
	if c.Assume <= 0 {
		return ""
	}
	ctx := r.ctx
	st := newCycleState(&Scenario{PodGroupCycle: len(c.Group) > 0})
	res, s, _ := r.upstreamProfile.RunPreFilterPlugins(ctx, st, pod)
	if !s.IsSuccess() {
		return ""
	}
	nodes, err := r.a.snap.NodeInfos().List()
	if err != nil {
		panic(err)
	}
	var feasible []string
	for _, ni := range nodes {
		if !res.AllNodes() && !res.NodeNames.Has(ni.Node().Name) {
			continue
		}
		if r.upstreamProfile.RunFilterPluginsWithNominatedPods(ctx, st, pod, ni).IsSuccess() {
			feasible = append(feasible, ni.Node().Name)
		}
	}
	if len(feasible) == 0 {
		return ""
	}
	sort.Strings(feasible)
	return feasible[(c.Assume-1)%len(feasible)]
}

// ---------------------------------------------------------------------------
// Batches, reports, replay.

type seqFinding struct {
	seq *Sequence
	res seqResult
}

type seqBatch struct {
	effective                map[string]int
	sequences, steps, cycles uint64
	findings                 []seqFinding
	elapsed                  time.Duration
}

// runSequences replays sequences [0, n) of seed (or only *only) on
// GOMAXPROCS workers, stopping once maxFindings sequences mismatched.
func runSequences(t testing.TB, seed, n uint64, only *uint64, opts SequenceOptions, cfg seqConfig, maxFindings int) seqBatch {
	start := time.Now()
	var seqs, steps, cycles atomic.Uint64
	var mu sync.Mutex
	out := seqBatch{effective: map[string]int{}}
	err := parallelIndexes(n, only, func() (func(i uint64) bool, error) {
		return func(i uint64) bool {
			seq := GenerateSequence(seed, i, opts)
			res, err := runSequence(context.Background(), seq, cfg, "")
			if err != nil {
				panic(fmt.Sprintf("sequence %d: %v", i, err))
			}
			seqs.Add(1)
			steps.Add(uint64(res.steps))
			cycles.Add(uint64(res.cycles))
			mu.Lock()
			defer mu.Unlock()
			for k, v := range res.effective {
				out.effective[k] += v
			}
			if len(res.mms) == 0 {
				return false
			}
			out.findings = append(out.findings, seqFinding{seq: seq, res: res})
			return len(out.findings) >= maxFindings
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out.findings, func(i, j int) bool { return out.findings[i].seq.Index < out.findings[j].seq.Index })
	out.sequences, out.steps, out.cycles = seqs.Load(), steps.Load(), cycles.Load()
	out.elapsed = time.Since(start)
	return out
}

// formatSeqFinding shrinks f for its first mismatch and renders the report:
// what differed, the history leading to it, and a YAML reproducer.
func formatSeqFinding(t testing.TB, f seqFinding, cfg seqConfig, mutantName string) (string, *Sequence) {
	m := f.res.mms[0]
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== SEQUENCE MISMATCH %s  (seed=%d sequence=%d step=%d)\n", m.key(), f.seq.Seed, f.seq.Index, f.res.step)
	if mutantName == "" {
		fmt.Fprintf(&b, "  rerun: EQUIVALENCE_SEQ_SEED=%d EQUIVALENCE_SEQ_INDEX=%d go test ./test/equivalence -run 'TestSequence$' -v\n", f.seq.Seed, f.seq.Index)
	}
	steps, cycles := f.seq.Stats()
	fmt.Fprintf(&b, "  original: %d steps (%d cycles), first mismatch at step %d\n  %s\n", steps, cycles, f.res.step, indent(m.String(), "  "))
	small, attempts := shrinkSequence(t, f.seq, m.key(), cfg)
	res, err := runSequence(context.Background(), small, cfg, m.key())
	if err != nil {
		t.Fatal(err)
	}
	steps, cycles = small.Stats()
	fmt.Fprintf(&b, "  shrunk (%d replays): %d steps (%d cycles), mismatch at step %d\n", attempts, steps, cycles, res.step)
	for _, mm := range res.mms {
		if mm.key() == m.key() {
			fmt.Fprintf(&b, "  %s\n", indent(mm.String(), "  "))
			break
		}
	}
	b.WriteString("  history:\n")
	for i, st := range small.Steps {
		fmt.Fprintf(&b, "    %3d %s\n", i, stepSummary(st))
	}
	y, err := EncodeSequence(small)
	if err != nil {
		t.Fatal(err)
	}
	env := "EQUIVALENCE_SEQUENCE_REPLAY=seq.yaml"
	if mutantName != "" {
		env += " EQUIVALENCE_SEQUENCE_MUTANT='" + mutantName + "'"
	}
	fmt.Fprintf(&b, "  reproducer (save as seq.yaml; %s go test ./test/equivalence -run TestSequenceReplay -v):\n---\n%s---\n",
		env, trimYAMLNoise(string(y)))
	return b.String(), small
}

// stepSummary is a one-line reading aid for a step.
func stepSummary(st SeqStep) string {
	switch st.Op {
	case OpAddNode, OpUpdateNode:
		return fmt.Sprintf("%-12s %s labels=%v taints=%d", st.Op, st.Node.Name, st.Node.Labels, len(st.Node.Spec.Taints))
	case OpAddPod:
		return fmt.Sprintf("%-12s %s on %s labels=%v%s", st.Op, PodKey(st.Pod), st.Pod.Spec.NodeName, st.Pod.Labels, affinitySummary(st.Pod))
	case OpMovePod:
		return fmt.Sprintf("%-12s %s to %s", st.Op, st.Name, st.Pod.Spec.NodeName)
	case OpRelabelPod:
		return fmt.Sprintf("%-12s %s labels=%v", st.Op, st.Name, st.Labels)
	case OpSetNS:
		return fmt.Sprintf("%-12s %s labels=%v", st.Op, st.Namespace.Name, st.Namespace.Labels)
	case OpCycle:
		c := st.Cycle
		s := fmt.Sprintf("%-12s %s labels=%v%s", st.Op, PodKey(c.Pod), c.Pod.Labels, affinitySummary(c.Pod))
		if c.Assume > 0 {
			s += fmt.Sprintf(" assume=#%d", c.Assume)
		}
		if len(c.Group) > 0 {
			s += fmt.Sprintf(" group+%d bind=%t", len(c.Group), c.BindGroup)
		}
		if len(c.Preemption) > 0 {
			s += fmt.Sprintf(" preemption-ops=%d", len(c.Preemption))
		}
		if len(c.Nominated) > 0 {
			s += fmt.Sprintf(" nominated=%d", len(c.Nominated))
		}
		return s
	}
	return fmt.Sprintf("%-12s %s", st.Op, st.Name)
}

func affinitySummary(p *v1.Pod) string {
	a := p.Spec.Affinity
	if a == nil {
		return ""
	}
	var parts []string
	if a.PodAffinity != nil {
		parts = append(parts, fmt.Sprintf("affinity(req=%d,pref=%d)", len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution), len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)))
	}
	if a.PodAntiAffinity != nil {
		parts = append(parts, fmt.Sprintf("anti(req=%d,pref=%d)", len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution), len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)))
	}
	if a.NodeAffinity != nil {
		parts = append(parts, "nodeAffinity")
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

// shrinkSequence drops steps (and cycle details) while the mismatch with key
// persists: first everything after the failing step, then chunks of halving
// size, then single steps, then preemption ops, nominated pods and group
// members of the remaining cycles.
func shrinkSequence(t testing.TB, seq *Sequence, key string, cfg seqConfig) (*Sequence, int) {
	const budget = 1500
	attempts := 0
	still := func(c *Sequence) (seqResult, bool) {
		attempts++
		res, err := runSequence(context.Background(), c, cfg, key)
		if err != nil {
			t.Fatal(err)
		}
		return res, res.step >= 0
	}
	cur := *seq
	res, ok := still(&cur)
	if !ok {
		return seq, attempts
	}
	cur.Steps = cur.Steps[:res.step+1]
	for chunk := len(cur.Steps) / 2; chunk >= 1 && attempts < budget; chunk /= 2 {
		for i := 0; i+chunk <= len(cur.Steps) && attempts < budget; {
			cand := cur
			cand.Steps = append(append([]SeqStep(nil), cur.Steps[:i]...), cur.Steps[i+chunk:]...)
			if res, ok := still(&cand); ok {
				cand.Steps = cand.Steps[:res.step+1]
				cur = cand
				continue
			}
			i += chunk
		}
	}
	// Cycle details.
	for i := 0; i < len(cur.Steps) && attempts < budget; i++ {
		c := cur.Steps[i].Cycle
		if c == nil {
			continue
		}
		try := func(mod func(*SeqCycle) bool) {
			cc := *c
			if !mod(&cc) {
				return
			}
			cand := cur
			cand.Steps = append([]SeqStep(nil), cur.Steps...)
			cand.Steps[i].Cycle = &cc
			if _, ok := still(&cand); ok {
				cur = cand
				*c = cc
			}
		}
		try(func(cc *SeqCycle) bool { r := cc.Preemption != nil; cc.Preemption = nil; return r })
		try(func(cc *SeqCycle) bool { r := cc.Nominated != nil; cc.Nominated = nil; return r })
		try(func(cc *SeqCycle) bool { r := cc.Group != nil; cc.Group, cc.BindGroup = nil, false; return r })
		try(func(cc *SeqCycle) bool { r := cc.NoStateChecks; cc.NoStateChecks = false; return r })
		c = cur.Steps[i].Cycle
	}
	// Objects' details: labels, terms, taints, tolerations.
	out := reduceGreedily(&cur, &attempts, budget, sequenceReductions, CloneSequence, func(c *Sequence) bool {
		_, ok := still(c)
		return ok
	})
	return out, attempts
}

// sequenceReductions lists one-step simplifications of the objects in seq's
// steps, reusing the one-cycle shrinker's pod and node reductions.
func sequenceReductions(seq *Sequence) []func(*Sequence) bool {
	var rs []func(*Sequence) bool
	add := func(r func(*Sequence) bool) { rs = append(rs, r) }
	for i, st := range seq.Steps {
		step := func(c *Sequence) *SeqStep { return &c.Steps[i] }
		if st.Node != nil {
			nodeReductions(add, func(c *Sequence) *v1.Node { return step(c).Node }, st.Node)
		}
		if st.Namespace != nil {
			for k := range st.Namespace.Labels {
				add(func(c *Sequence) bool { return dropKey(step(c).Namespace.Labels, k) })
			}
		}
		for k := range st.Labels {
			add(func(c *Sequence) bool { return dropKey(step(c).Labels, k) })
		}
		if st.Pod != nil {
			podReductions(add, func(c *Sequence) *v1.Pod { return step(c).Pod }, st.Pod)
		}
		cy := st.Cycle
		if cy == nil {
			continue
		}
		for j := range cy.Preemption {
			add(func(c *Sequence) bool { return dropAt(&step(c).Cycle.Preemption, j) })
			for k := range cy.Preemption[j].Steps {
				add(func(c *Sequence) bool { return dropAt(&step(c).Cycle.Preemption[j].Steps, k) })
			}
		}
		for j := range cy.Nominated {
			add(func(c *Sequence) bool { return dropAt(&step(c).Cycle.Nominated, j) })
		}
		for j := range cy.Group {
			add(func(c *Sequence) bool { return dropAt(&step(c).Cycle.Group, j) })
		}
		podReductions(add, func(c *Sequence) *v1.Pod { return step(c).Cycle.Pod }, cy.Pod)
		for j, m := range cy.Group {
			podReductions(add, func(c *Sequence) *v1.Pod {
				if g := step(c).Cycle.Group; j < len(g) {
					return g[j]
				}
				return nil
			}, m)
		}
	}
	return rs
}

// TestSequence is the CI batch of the sequence mode.
func TestSequence(t *testing.T) {
	seed := envUint("EQUIVALENCE_SEQ_SEED", defaultSeed)
	def := uint64(defaultSequences)
	if testing.Short() {
		def = 10
	}
	n := envUint("EQUIVALENCE_SEQUENCES", def)
	opts := SequenceOptions{Steps: int(envUint("EQUIVALENCE_SEQ_STEPS", defaultSeqSteps))}
	var only *uint64
	if os.Getenv("EQUIVALENCE_SEQ_INDEX") != "" {
		i := envUint("EQUIVALENCE_SEQ_INDEX", 0)
		only = &i
	}
	cfg := defaultSeqConfig()
	res := runSequences(t, seed, n, only, opts, cfg, 5)
	t.Logf("seed=%d sequences=%d steps=%d cycles=%d workers=%d wall=%v (%.0f steps/s)",
		seed, res.sequences, res.steps, res.cycles, runtime.GOMAXPROCS(0), res.elapsed.Round(time.Millisecond),
		float64(res.steps)/res.elapsed.Seconds())
	t.Logf("effective steps and cache/snapshot calls: %v", res.effective)
	if len(res.findings) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d of %d sequences mismatched (a run stops after 5)\n", len(res.findings), res.sequences)
		seen := map[string]bool{}
		for _, f := range res.findings {
			if k := f.res.mms[0].key(); !seen[k] {
				seen[k] = true
				rep, _ := formatSeqFinding(t, f, cfg, "")
				b.WriteString(rep)
			}
		}
		t.Errorf("sequence-mode mismatches:\n%s", b.String())
	}
}

// TestSequenceReplay replays a YAML reproducer printed by a failing
// sequence run (against ours, or the mutant named by
// EQUIVALENCE_SEQUENCE_MUTANT).
func TestSequenceReplay(t *testing.T) {
	path := os.Getenv("EQUIVALENCE_SEQUENCE_REPLAY")
	if path == "" {
		t.Skip("set EQUIVALENCE_SEQUENCE_REPLAY=<reproducer.yaml>")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := DecodeSequence(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg := defaultSeqConfig()
	if name := os.Getenv("EQUIVALENCE_SEQUENCE_MUTANT"); name != "" {
		sm := seqMutantByName(name)
		if sm == nil {
			t.Fatalf("EQUIVALENCE_SEQUENCE_MUTANT=%q: no such mutant (see seqMutants in sequence_mutants_test.go)", name)
		}
		cfg = sm.config()
	}
	res, err := runSequence(context.Background(), seq, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replayed %d steps, %d cycles", res.steps, res.cycles)
	for _, m := range res.mms {
		t.Errorf("step %d: %s", res.step, m)
	}
}

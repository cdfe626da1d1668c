package equivalence

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// Sequence mutants: our real InterPodAffinity behind test-only wrappers that
// keep state ACROSS cycles the way the coming speed work will (per-node
// caches, namespace indexes, copy-on-write cycle state), each with one
// planted staleness bug. The one-cycle mode must miss every one of them (a
// fresh plugin per scenario never carries state over) and the sequence mode
// must catch every one with a shrunk, replayable reproducer.

// viewHandle hands the wrapped plugin another snapshot lister and/or
// informer factory than the framework's.
type viewHandle struct {
	fwk.Handle
	lister fwk.SharedLister
	inf    informers.SharedInformerFactory
}

func (h *viewHandle) SnapshotSharedLister() fwk.SharedLister {
	if h.lister != nil {
		return h.lister
	}
	return h.Handle.SnapshotSharedLister()
}

func (h *viewHandle) SharedInformerFactory() informers.SharedInformerFactory {
	if h.inf != nil {
		return h.inf
	}
	return h.Handle.SharedInformerFactory()
}

// viewLister serves the real snapshot's node list passed through view, a
// plugin-side cache. The HavePods... lists are derived from the viewed
// NodeInfos, as a cache that replaced them would derive them.
type viewLister struct {
	fwk.SharedLister
	mu   sync.Mutex
	view func(real []fwk.NodeInfo) []fwk.NodeInfo // nil or inactive: pass through
}

func (l *viewLister) NodeInfos() fwk.NodeInfoLister { return (*viewNodeInfos)(l) }

type viewNodeInfos viewLister

func (v *viewNodeInfos) all() ([]fwk.NodeInfo, error) {
	real, err := v.SharedLister.NodeInfos().List()
	if err != nil || v.view == nil {
		return real, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.view(real), nil
}

func (v *viewNodeInfos) filtered(keep func(fwk.NodeInfo) bool) ([]fwk.NodeInfo, error) {
	all, err := v.all()
	if err != nil {
		return nil, err
	}
	var out []fwk.NodeInfo
	for _, ni := range all {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out, nil
}

func (v *viewNodeInfos) List() ([]fwk.NodeInfo, error) { return v.all() }
func (v *viewNodeInfos) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	return v.filtered(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithAffinity()) > 0 })
}
func (v *viewNodeInfos) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return v.filtered(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithRequiredAntiAffinity()) > 0 })
}
func (v *viewNodeInfos) Get(name string) (fwk.NodeInfo, error) {
	all, err := v.all()
	if err != nil {
		return nil, err
	}
	for _, ni := range all {
		if ni.Node().Name == name {
			return ni, nil
		}
	}
	return v.SharedLister.NodeInfos().Get(name)
}

// podUIDs identifies the pods on ni.
func podUIDs(ni fwk.NodeInfo) string {
	var b strings.Builder
	for _, pi := range ni.GetPods() {
		b.WriteString(string(pi.GetPod().UID))
		b.WriteByte(',')
	}
	return b.String()
}

// nodeCache is a per-node NodeInfo cache as the speed work would keep one.
// keyByGeneration refreshes an entry when the node's generation moved; else
// an entry, once filled, is served forever (keyed by node name only).
func nodeCache(keyByGeneration bool) func(real []fwk.NodeInfo) []fwk.NodeInfo {
	memo := map[string]fwk.NodeInfo{}
	return func(real []fwk.NodeInfo) []fwk.NodeInfo {
		out := make([]fwk.NodeInfo, len(real))
		for i, ni := range real {
			name := ni.Node().Name
			m, ok := memo[name]
			if !ok || keyByGeneration && m.GetGeneration() != ni.GetGeneration() {
				m = ni.Snapshot()
				memo[name] = m
			}
			out[i] = m
		}
		return out
	}
}

// ghostCache keeps per node the pods it has seen, and drops one only once
// the pod is gone from the pod informer (deleted). A ForgetPod deletes
// nothing in the API, so a forgotten assumed pod stays in the cache: "forgets
// a ForgetPod".
func ghostCache(pods corev1listers.PodLister) func(real []fwk.NodeInfo) []fwk.NodeInfo {
	seen := map[string]map[types.UID]*v1.Pod{}
	return func(real []fwk.NodeInfo) []fwk.NodeInfo {
		out := make([]fwk.NodeInfo, len(real))
		for i, ni := range real {
			name := ni.Node().Name
			cur := map[types.UID]*v1.Pod{}
			for _, pi := range ni.GetPods() {
				cur[pi.GetPod().UID] = pi.GetPod()
			}
			var ghosts []*v1.Pod
			for uid, p := range seen[name] {
				if _, ok := cur[uid]; ok {
					continue
				}
				if live, err := pods.Pods(p.Namespace).Get(p.Name); err == nil && live.UID == uid {
					ghosts = append(ghosts, p)
				}
			}
			out[i] = ni
			if len(ghosts) > 0 {
				slices.SortFunc(ghosts, func(a, b *v1.Pod) int { return strings.Compare(string(a.UID), string(b.UID)) })
				c := ni.Snapshot()
				for _, g := range ghosts {
					pi, _ := framework.NewPodInfo(g)
					c.AddPodInfo(pi)
					cur[g.UID] = g
				}
				out[i] = c
			}
			seen[name] = cur
		}
		return out
	}
}

// nsMemo* make a namespace lister that memoizes what it returned, per
// selector and per name, forever: "misses namespace label changes".
type nsMemoFactory struct {
	informers.SharedInformerFactory
	l *nsMemoLister
}

func (f nsMemoFactory) Core() coreinformers.Interface {
	return nsMemoCore{f.SharedInformerFactory.Core(), f.l}
}

type nsMemoCore struct {
	coreinformers.Interface
	l *nsMemoLister
}

func (c nsMemoCore) V1() corev1informers.Interface { return nsMemoV1{c.Interface.V1(), c.l} }

type nsMemoV1 struct {
	corev1informers.Interface
	l *nsMemoLister
}

func (v nsMemoV1) Namespaces() namespaceInformer {
	return nsMemoInformer{v.Interface.Namespaces(), v.l}
}

type nsMemoInformer struct {
	namespaceInformer
	l *nsMemoLister
}

func (i nsMemoInformer) Lister() corev1listers.NamespaceLister { return i.l }

type nsMemoLister struct {
	real  corev1listers.NamespaceLister
	mu    sync.Mutex
	lists map[string][]*v1.Namespace
	gets  map[string]nsGet
}

type nsGet struct {
	ns  *v1.Namespace
	err error
}

func (l *nsMemoLister) List(sel labels.Selector) ([]*v1.Namespace, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.lists[sel.String()]; ok {
		return got, nil
	}
	got, err := l.real.List(sel)
	if err == nil {
		l.lists[sel.String()] = got
	}
	return got, err
}

func (l *nsMemoLister) Get(name string) (*v1.Namespace, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.gets[name]; ok {
		return g.ns, g.err
	}
	ns, err := l.real.Get(name)
	l.gets[name] = nsGet{ns, err}
	return ns, err
}

// cowMutant keeps a per-node cache across cycles (sound: refreshed when the
// generation or the node's pod set changed) and hands each cycle a
// copy-on-write view of it in the CycleState; the preemption extensions
// record their what-if edits in that view. With shareOnClone, Clone shares
// the map instead of copying it, so a dry run's edits leak into the cache
// and poison the next cycle's PreFilter.
type cowMutant struct {
	inner        fwk.Plugin
	lister       *viewLister
	memo         map[string]*cowEntry
	shareOnClone bool
	inPreFilter  bool
}

type cowEntry struct {
	gen  int64
	uids string
	ni   fwk.NodeInfo
}

const cowStateKey fwk.StateKey = "equivalence/cow-mutant"

type cowState struct {
	nodes map[string]*cowEntry
	share bool
}

func (s *cowState) Clone() fwk.StateData {
	if s.share {
		return s // the planted bug
	}
	return &cowState{nodes: maps.Clone(s.nodes)}
}

func (m *cowMutant) view(real []fwk.NodeInfo) []fwk.NodeInfo {
	if !m.inPreFilter {
		return real
	}
	out := make([]fwk.NodeInfo, len(real))
	for i, ni := range real {
		name := ni.Node().Name
		e := m.memo[name]
		if e == nil || e.gen != ni.GetGeneration() || e.uids != podUIDs(ni) {
			e = &cowEntry{gen: ni.GetGeneration(), uids: podUIDs(ni), ni: ni.Snapshot()}
			m.memo[name] = e
		}
		out[i] = e.ni
	}
	return out
}

func (m *cowMutant) Name() string       { return m.inner.Name() }
func (m *cowMutant) Unwrap() fwk.Plugin { return m.inner }

func (m *cowMutant) PreFilter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	m.inPreFilter = true
	// The cycle's nodes go through the cache too, as the lister's lists
	// do: a plugin reads either.
	m.lister.mu.Lock()
	nodes = m.view(nodes)
	m.lister.mu.Unlock()
	r, s := m.inner.(fwk.PreFilterPlugin).PreFilter(ctx, st, pod, nodes)
	m.inPreFilter = false
	st.Write(cowStateKey, &cowState{nodes: m.memo, share: m.shareOnClone})
	return r, s
}

func (m *cowMutant) PreFilterExtensions() fwk.PreFilterExtensions {
	if m.inner.(fwk.PreFilterPlugin).PreFilterExtensions() == nil {
		return nil
	}
	return m
}

// edit records a what-if change of ni in the cycle's view of the cache.
func (m *cowMutant) edit(st fwk.CycleState, ni fwk.NodeInfo, change func(fwk.NodeInfo)) {
	d, err := st.Read(cowStateKey)
	if err != nil {
		return
	}
	cs := d.(*cowState)
	e := cs.nodes[ni.Node().Name]
	if e == nil {
		return
	}
	ne := *e
	ne.ni = e.ni.Snapshot()
	change(ne.ni)
	cs.nodes[ni.Node().Name] = &ne
}

func (m *cowMutant) AddPod(ctx context.Context, st fwk.CycleState, pod *v1.Pod, add fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
	m.edit(st, ni, func(c fwk.NodeInfo) { c.AddPodInfo(add) })
	return m.inner.(fwk.PreFilterPlugin).PreFilterExtensions().AddPod(ctx, st, pod, add, ni)
}

func (m *cowMutant) RemovePod(ctx context.Context, st fwk.CycleState, pod *v1.Pod, rm fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
	m.edit(st, ni, func(c fwk.NodeInfo) { _ = c.RemovePod(klog.Logger(logr.Discard()), rm.GetPod()) })
	return m.inner.(fwk.PreFilterPlugin).PreFilterExtensions().RemovePod(ctx, st, pod, rm, ni)
}

func (m *cowMutant) Filter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	return m.inner.(fwk.FilterPlugin).Filter(ctx, st, pod, ni)
}

func (m *cowMutant) PreScore(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return m.inner.(fwk.PreScorePlugin).PreScore(ctx, st, pod, nodes)
}

func (m *cowMutant) Score(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return m.inner.(fwk.ScorePlugin).Score(ctx, st, pod, ni)
}

func (m *cowMutant) ScoreExtensions() fwk.ScoreExtensions {
	return m.inner.(fwk.ScorePlugin).ScoreExtensions()
}

func (m *cowMutant) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return m.inner.(fwk.EnqueueExtensions).EventsToRegister(ctx)
}

func (m *cowMutant) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return m.inner.(fwk.SignPlugin).SignPod(ctx, pod)
}

// seqMutant is one planted cross-cycle bug around our InterPodAffinity.
type seqMutant struct {
	name string
	// wrap builds our plugin on a handle whose lister/informers carry the bug.
	wrap func(k *kind) factory
	// groupsOnly: only pod-group cycles (snapshot AssumePod keeping the
	// generation) can expose it.
	groupsOnly bool
}

func (sm *seqMutant) config() seqConfig {
	k := kindByName("InterPodAffinity")
	f := sm.wrap(k)
	return seqConfig{candidate: func(kk *kind) factory {
		if kk == k {
			return f
		}
		return nil
	}}
}

// onView builds our plugin on a handle serving a viewLister with the view
// built by mk.
func onView(mk func(h fwk.Handle) func([]fwk.NodeInfo) []fwk.NodeInfo) func(k *kind) factory {
	return func(k *kind) factory {
		return func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
			l := &viewLister{SharedLister: h.SnapshotSharedLister(), view: mk(h)}
			return k.Ours(ctx, sc, &viewHandle{Handle: h, lister: l}, fts)
		}
	}
}

var seqMutants = []*seqMutant{
	{
		name: "node cache keyed by name ignoring generation",
		wrap: onView(func(fwk.Handle) func([]fwk.NodeInfo) []fwk.NodeInfo { return nodeCache(false) }),
	},
	{
		// Sound for single-pod cycles, stale in pod-group cycles: the
		// snapshot assumes members without moving the generation.
		name: "node cache keyed by name and generation", groupsOnly: true,
		wrap: onView(func(fwk.Handle) func([]fwk.NodeInfo) []fwk.NodeInfo { return nodeCache(true) }),
	},
	{
		name: "namespace labels memoized",
		wrap: func(k *kind) factory {
			return func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
				real := h.SharedInformerFactory()
				l := &nsMemoLister{real: real.Core().V1().Namespaces().Lister(),
					lists: map[string][]*v1.Namespace{}, gets: map[string]nsGet{}}
				return k.Ours(ctx, sc, &viewHandle{Handle: h, inf: nsMemoFactory{real, l}}, fts)
			}
		},
	},
	{
		name: "ForgetPod missed by the node cache",
		wrap: onView(func(h fwk.Handle) func([]fwk.NodeInfo) []fwk.NodeInfo {
			return ghostCache(h.SharedInformerFactory().Core().V1().Pods().Lister())
		}),
	},
	{
		name: "Clone shares the per-node map",
		wrap: func(k *kind) factory {
			return func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
				m := &cowMutant{memo: map[string]*cowEntry{}, shareOnClone: true}
				m.lister = &viewLister{SharedLister: h.SnapshotSharedLister(), view: m.view}
				inner, err := k.Ours(ctx, sc, &viewHandle{Handle: h, lister: m.lister}, fts)
				if err != nil {
					return nil, err
				}
				m.inner = inner
				return m, nil
			}
		},
	},
}

func seqMutantByName(name string) *seqMutant {
	for _, sm := range seqMutants {
		if sm.name == name {
			return sm
		}
	}
	return nil
}

// TestSequenceMutantsAreCaught: each cross-cycle mutant passes the one-cycle
// mode and is caught by the sequence mode with a replayable reproducer.
func TestSequenceMutantsAreCaught(t *testing.T) {
	seed := envUint("EQUIVALENCE_SEQ_SEED", defaultSeed)
	oneCycle := envUint("EQUIVALENCE_MUTANT_SCENARIOS", 1500)
	if testing.Short() {
		oneCycle = 300
	}
	for _, sm := range seqMutants {
		t.Run(strings.ReplaceAll(sm.name, " ", "_"), func(t *testing.T) {
			if why := lineLacksSeqMutant(sm); why != "" {
				t.Skip(why)
			}
			cfg := sm.config()
			// The one-cycle mode builds a fresh plugin per scenario: blind.
			res := runBatch(t, seed, oneCycle, nil, pluginComparator(cfg.candidate), 1)
			if len(res.findings) > 0 {
				t.Fatalf("the one-cycle mode caught %q (it should be blind to cross-cycle state): %v", sm.name, res.findings[0].mms[0])
			}
			batch := runSequences(t, seed, 40, nil, SequenceOptions{Steps: defaultSeqSteps}, cfg, 1)
			if len(batch.findings) == 0 {
				t.Fatalf("planted cross-cycle bug %q not caught by %d sequences (%d steps)", sm.name, batch.sequences, batch.steps)
			}
			f := batch.findings[0]
			rep, small := formatSeqFinding(t, f, cfg, sm.name)
			// The printed reproducer must replay the mismatch on its own.
			y := rep[strings.Index(rep, "\n---\n")+5:]
			y = y[:strings.LastIndex(y, "---")]
			seq, err := DecodeSequence([]byte(y))
			if err != nil {
				t.Fatalf("reproducer does not parse: %v\n%s", err, rep)
			}
			key := f.res.mms[0].key()
			replayed, err := runSequence(context.Background(), seq, cfg, key)
			if err != nil {
				t.Fatal(err)
			}
			if replayed.step < 0 {
				t.Errorf("reproducer does not replay %s:\n%s", key, rep)
			}
			if sm.groupsOnly {
				// Without pod-group cycles the same sequence passes.
				noGroups := CloneSequence(small)
				for i := range noGroups.Steps {
					if c := noGroups.Steps[i].Cycle; c != nil {
						c.Group, c.BindGroup = nil, false
					}
				}
				if res, err := runSequence(context.Background(), noGroups, cfg, ""); err != nil || res.step >= 0 {
					t.Errorf("%q should only be visible through pod-group cycles; without them: %v %v", sm.name, err, res.mms)
				}
			}
			steps, _ := small.Stats()
			t.Logf("caught in %d sequences (%d steps) at sequence %d; one-cycle mode blind over %d scenarios; shrunk to %d steps\n%s",
				batch.sequences, batch.steps, f.seq.Index, res.ran, steps, rep)
		})
	}
}

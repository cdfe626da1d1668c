package interpodaffinity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/test/equivalence"
)

// TestCachedMatchesScanned replays the equivalence suite's cross-cycle
// histories (equivalence.GenerateSequence, including the ones that
// interleave more pod shapes than any cache holds) against two instances
// of the plugin on ONE cache and snapshot: one as built by New, one with
// every cache off. Every cycle's PreFilter, Filter on each node (also with
// nominated pods added to a clone of the state), PreScore, Score and
// NormalizeScore must agree. The caches may change how long a cycle takes,
// never what it decides.
func TestCachedMatchesScanned(t *testing.T) { replaySequences(t, false) }

// TestCachedMatchesScannedHostnameFastPath is TestCachedMatchesScanned with
// gate InterPodAffinityHostnameFastPath on, process-wide (the snapshot's
// list of nodes with non-hostname-scoped anti-affinity follows it) and in
// both plugins: the caches' answers then leave hostname-scoped terms to
// Filter and count the nodes holding them, across cycles as the holders
// come and go.
func TestCachedMatchesScannedHostnameFastPath(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, true)
	replaySequences(t, true)
}

// replaySequences replays the sequences of TestCachedMatchesScanned, with
// the hostname fast path in both plugins if fastPath.
func replaySequences(t *testing.T, fastPath bool) {
	schedmetrics.Register() // Parallelizer.Until reports a metric
	n := uint64(40)
	if testing.Short() {
		n = 8
	}
	var cycles, entries, skipped, computed int
	for _, interleaved := range []bool{false, true} {
		for i := range n {
			seq := equivalence.GenerateSequence(1, i, equivalence.SequenceOptions{Steps: 150, Interleaved: interleaved})
			r := newReplay(t, seq, fastPath)
			if r == nil {
				continue
			}
			for j, st := range seq.Steps {
				if err := r.apply(st); err != nil {
					t.Fatalf("sequence %d (interleaved=%v), step %d (%s): %v", i, interleaved, j, st.Op, err)
				}
			}
			cycles += r.cycles
			entries += interpodaffinity.IndexEntries(r.cached)
			skipped += r.skipped
			computed += r.computed
		}
	}
	if cycles == 0 || entries == 0 {
		t.Fatalf("%d cycles compared, %d index entries left: the histories never reached the caches", cycles, entries)
	}
	if skipped == 0 || computed == 0 {
		t.Fatalf("the pod summaries let PreFilter skip %d nodes and compute %d: the histories do not exercise them both ways", skipped, computed)
	}
	t.Logf("%d cycles compared; %d index entries held at the sequences' ends; PreFilter's summaries skip %d nodes, %d computed", cycles, entries, skipped, computed)
}

// replay drives one Sequence: its model of the cluster is authoritative,
// and steps naming objects it does not hold are no-ops.
type replay struct {
	t               testing.TB
	ctx             context.Context
	logger          klog.Logger
	cache           cache.Cache
	snap            *cache.Snapshot
	nsStore         toolscache.Indexer
	cached, scanned fwk.Plugin
	nodes           map[string]*v1.Node
	bound, assumed  map[string]*v1.Pod
	cycles          int
	// skipped and computed count the nodes the pod summaries let
	// PreFilter's scans skip, and the others (SummarySkips).
	skipped, computed int
}

func newReplay(t *testing.T, seq *equivalence.Sequence, fastPath bool) *replay {
	t.Helper()
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	t.Cleanup(cancel)
	r := &replay{t: t, ctx: ctx, logger: klog.FromContext(ctx),
		cache: k8sline.NewCache(ctx, false), snap: cache.NewEmptySnapshot(),
		nodes: map[string]*v1.Node{}, bound: map[string]*v1.Pod{}, assumed: map[string]*v1.Pod{}}
	inf := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	// Never started: the store is filled directly.
	r.nsStore = inf.Core().V1().Namespaces().Informer().GetIndexer()
	h, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(r.snap), frameworkruntime.WithInformerFactory(inf))
	if err != nil {
		t.Fatal(err)
	}
	var args runtime.Object
	if seq.InterPodAffinityArgs != nil {
		raw, err := json.Marshal(seq.InterPodAffinityArgs)
		if err != nil {
			t.Fatal(err)
		}
		args = &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
	}
	fts := feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: seq.Gates.InPlacePodVerticalScalingSchedulerPreemption,
		EnableInterPodAffinityHostnameFastPath: fastPath}
	cached, errCached := interpodaffinity.New(ctx, args, h, fts)
	scanned, errScanned := interpodaffinity.NewScanning(ctx, args, h, fts)
	if fmt.Sprint(errCached) != fmt.Sprint(errScanned) {
		t.Fatalf("factories disagree: %v vs %v", errCached, errScanned)
	}
	if errCached != nil {
		return nil // args the factory refuses: nothing to replay
	}
	r.cached, r.scanned = cached, scanned
	return r
}

func (r *replay) known(key string) bool { return r.bound[key] != nil || r.assumed[key] != nil }

// apply runs one step, as kube-scheduler's event handlers and scheduling
// loop would.
func (r *replay) apply(st equivalence.SeqStep) error {
	log := r.logger
	switch st.Op {
	case equivalence.OpAddNode:
		if st.Node == nil || r.nodes[st.Node.Name] != nil {
			return nil
		}
		r.nodes[st.Node.Name] = st.Node
		r.cache.AddNode(log, st.Node.DeepCopy())
	case equivalence.OpUpdateNode:
		old := r.nodes[st.Node.Name]
		if old == nil {
			return nil
		}
		r.nodes[st.Node.Name] = st.Node
		r.cache.UpdateNode(log, old.DeepCopy(), st.Node.DeepCopy())
	case equivalence.OpRemoveNode:
		old := r.nodes[st.Name]
		if old == nil {
			return nil
		}
		delete(r.nodes, st.Name)
		return r.cache.RemoveNode(log, old.DeepCopy())
	case equivalence.OpAddPod:
		if st.Pod == nil || r.known(equivalence.PodKey(st.Pod)) {
			return nil
		}
		r.bound[equivalence.PodKey(st.Pod)] = st.Pod
		return r.cache.AddPod(log, st.Pod.DeepCopy())
	case equivalence.OpRelabelPod:
		old := r.bound[st.Name]
		if old == nil {
			return nil
		}
		p := old.DeepCopy()
		p.Labels = maps.Clone(st.Labels)
		r.bound[st.Name] = p
		return r.cache.UpdatePod(log, old.DeepCopy(), p.DeepCopy())
	case equivalence.OpDeletePod:
		return r.deletePod(st.Name)
	case equivalence.OpMovePod:
		if st.Pod == nil || !r.known(st.Name) {
			return nil
		}
		if err := r.deletePod(st.Name); err != nil {
			return err
		}
		r.bound[equivalence.PodKey(st.Pod)] = st.Pod
		return r.cache.AddPod(log, st.Pod.DeepCopy())
	case equivalence.OpConfirm:
		p := r.assumed[st.Name]
		if p == nil {
			return nil
		}
		delete(r.assumed, st.Name)
		r.bound[st.Name] = p
		return r.cache.AddPod(log, p.DeepCopy())
	case equivalence.OpForget:
		p := r.assumed[st.Name]
		if p == nil {
			return nil
		}
		delete(r.assumed, st.Name)
		return r.cache.ForgetPod(log, p.DeepCopy())
	case equivalence.OpSetNS:
		if st.Namespace != nil {
			return r.nsStore.Update(st.Namespace.DeepCopy())
		}
	case equivalence.OpDeleteNS:
		if obj, ok, _ := r.nsStore.GetByKey(st.Name); ok {
			return r.nsStore.Delete(obj)
		}
	case equivalence.OpCycle:
		if st.Cycle != nil && st.Cycle.Pod != nil {
			return r.cycle(st.Cycle)
		}
	}
	return nil
}

func (r *replay) deletePod(key string) error {
	if p := r.bound[key]; p != nil {
		delete(r.bound, key)
		return r.cache.RemovePod(r.logger, p.DeepCopy())
	}
	if p := r.assumed[key]; p != nil {
		delete(r.assumed, key)
		return r.cache.RemoveAssumedPod(r.logger, p.DeepCopy())
	}
	return nil
}

// cycle schedules c's pod (or pod group) and assumes it where c says.
func (r *replay) cycle(c *equivalence.SeqCycle) error {
	if r.known(equivalence.PodKey(c.Pod)) {
		return nil // already placed: the queue would not pop it
	}
	if err := r.cache.UpdateSnapshot(r.logger, r.snap); err != nil {
		return err
	}
	if len(c.Group) == 0 {
		feasible, err := r.compare(c, c.Pod, false)
		if err != nil || c.Assume <= 0 || len(feasible) == 0 {
			return err
		}
		p := c.Pod.DeepCopy()
		p.Spec.NodeName = feasible[(c.Assume-1)%len(feasible)]
		r.assumed[equivalence.PodKey(p)] = p
		return r.cache.AssumePod(r.logger, p.DeepCopy())
	}
	// A pod-group cycle: members placed one after another on the
	// snapshot (the node keeps its generation), then forgotten again.
	var placed []*v1.Pod
	for _, m := range append([]*v1.Pod{c.Pod}, c.Group...) {
		if r.known(equivalence.PodKey(m)) {
			continue
		}
		feasible, err := r.compare(c, m, true)
		if err != nil {
			return err
		}
		if c.Assume <= 0 || len(feasible) == 0 {
			continue
		}
		p := m.DeepCopy()
		p.Spec.NodeName = feasible[(c.Assume-1)%len(feasible)]
		// A pod whose terms do not parse is still placed (its PreScore
		// reports the error, not its PreFilter); the pod info holds what
		// did parse.
		pi, _ := framework.NewPodInfo(p)
		if err := r.snap.AssumePod(pi); err != nil {
			return err
		}
		placed = append(placed, p)
	}
	for i := len(placed) - 1; i >= 0; i-- {
		if err := r.snap.ForgetPod(r.logger, placed[i]); err != nil {
			return err
		}
	}
	if c.BindGroup {
		for _, p := range placed {
			r.assumed[equivalence.PodKey(p)] = p
			if err := r.cache.AssumePod(r.logger, p.DeepCopy()); err != nil {
				return err
			}
		}
	}
	return nil
}

// compare runs one cycle for pod on both plugins and returns the names of
// the nodes that passed Filter, sorted. A disagreement is an error.
func (r *replay) compare(c *equivalence.SeqCycle, pod *v1.Pod, group bool) ([]string, error) {
	r.cycles++
	ctx := r.ctx
	nodes, err := r.snap.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	newState := func() fwk.CycleState {
		cs := framework.NewCycleState()
		if group {
			cs.SetPodGroupSchedulingCycle(framework.NewCycleState())
		}
		return cs
	}
	csC, csS := newState(), newState()
	resC, stC := r.cached.(fwk.PreFilterPlugin).PreFilter(ctx, csC, pod, nodes)
	resS, stS := r.scanned.(fwk.PreFilterPlugin).PreFilter(ctx, csS, pod, nodes)
	if got, want := fmt.Sprint(tu.StatusString(stC), resC), fmt.Sprint(tu.StatusString(stS), resS); got != want {
		return nil, fmt.Errorf("PreFilter: cached %s, scanned %s", got, want)
	}
	skipped, computed := interpodaffinity.SummarySkips(csC, nodes)
	r.skipped += skipped
	r.computed += computed
	var feasible []string
	var feasibleInfos []fwk.NodeInfo
	if !stS.IsSuccess() && !stS.IsSkip() {
		return nil, nil // no node passes
	}
	for _, ni := range nodes {
		pass := true
		if stS.IsSuccess() {
			fC := r.cached.(fwk.FilterPlugin).Filter(ctx, csC, pod, ni)
			fS := r.scanned.(fwk.FilterPlugin).Filter(ctx, csS, pod, ni)
			if got, want := tu.StatusString(fC), tu.StatusString(fS); got != want {
				return nil, fmt.Errorf("Filter(%s): cached %q, scanned %q", ni.Node().Name, got, want)
			}
			pass = fS.IsSuccess()
		}
		if pass {
			feasible = append(feasible, ni.Node().Name)
			feasibleInfos = append(feasibleInfos, ni)
		}
	}
	if stS.IsSuccess() {
		// Nominated pods, as the framework adds them to a clone of the
		// state for the node they are nominated to.
		for _, p := range c.Nominated {
			ni, err := r.snap.NodeInfos().Get(p.Status.NominatedNodeName)
			if err != nil {
				continue
			}
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				continue
			}
			copyC, copyS := ni.Snapshot(), ni.Snapshot()
			cloneC, cloneS := csC.Clone(), csS.Clone()
			aC := r.cached.(fwk.PreFilterPlugin).PreFilterExtensions().AddPod(ctx, cloneC, pod, pi, copyC)
			aS := r.scanned.(fwk.PreFilterPlugin).PreFilterExtensions().AddPod(ctx, cloneS, pod, pi, copyS)
			fC := r.cached.(fwk.FilterPlugin).Filter(ctx, cloneC, pod, copyC)
			fS := r.scanned.(fwk.FilterPlugin).Filter(ctx, cloneS, pod, copyS)
			if got, want := tu.StatusString(aC)+" "+tu.StatusString(fC), tu.StatusString(aS)+" "+tu.StatusString(fS); got != want {
				return nil, fmt.Errorf("AddPod(%s) and Filter: cached %q, scanned %q", p.Name, got, want)
			}
		}
	}
	if len(feasibleInfos) > 0 {
		if err := r.compareScores(csC, csS, pod, feasibleInfos); err != nil {
			return nil, err
		}
	}
	slices.Sort(feasible)
	return feasible, nil
}

// compareScores runs PreScore, Score and NormalizeScore on both plugins.
func (r *replay) compareScores(csC, csS fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) error {
	ctx := r.ctx
	pC := r.cached.(fwk.PreScorePlugin).PreScore(ctx, csC, pod, nodes)
	pS := r.scanned.(fwk.PreScorePlugin).PreScore(ctx, csS, pod, nodes)
	if got, want := tu.StatusString(pC), tu.StatusString(pS); got != want {
		return fmt.Errorf("PreScore: cached %q, scanned %q", got, want)
	}
	if !pS.IsSuccess() {
		return nil
	}
	var listC, listS fwk.NodeScoreList
	for _, ni := range nodes {
		sC, stC := r.cached.(fwk.ScorePlugin).Score(ctx, csC, pod, ni)
		sS, stS := r.scanned.(fwk.ScorePlugin).Score(ctx, csS, pod, ni)
		if sC != sS || tu.StatusString(stC) != tu.StatusString(stS) {
			return fmt.Errorf("Score(%s): cached %d %q, scanned %d %q", ni.Node().Name, sC, tu.StatusString(stC), sS, tu.StatusString(stS))
		}
		listC = append(listC, fwk.NodeScore{Name: ni.Node().Name, Score: sC})
		listS = append(listS, fwk.NodeScore{Name: ni.Node().Name, Score: sS})
	}
	nC := r.cached.(fwk.ScorePlugin).ScoreExtensions().NormalizeScore(ctx, csC, pod, listC)
	nS := r.scanned.(fwk.ScorePlugin).ScoreExtensions().NormalizeScore(ctx, csS, pod, listS)
	if got, want := fmt.Sprint(tu.StatusString(nC), listC), fmt.Sprint(tu.StatusString(nS), listS); got != want {
		return fmt.Errorf("NormalizeScore: cached %s, scanned %s", got, want)
	}
	return nil
}

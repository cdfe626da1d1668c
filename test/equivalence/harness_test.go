package equivalence

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// factory builds one side of a comparison for a scenario.
type factory func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error)

type newFunc func(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error)

// kind is one of the plugins under test: the in-tree plugin and ours.
type kind struct {
	Name     string // upstream (in-tree) name
	Weight   int32  // weight in the default profile (0: not a score plugin)
	Upstream factory
	// OursName and OursNew are our replacement, from pkg/plugins.Set().
	OursName string
	OursNew  newFunc
	row      plugins.Plugin
}

// kinds is pkg/plugins.Set() in profile order (docs/behavior.md §2.1): each
// row's in-tree plugin (InTree, handed the scenario's args converted as the
// config loader would) against ours.
var kinds = func() []*kind {
	var out []*kind
	for _, p := range plugins.Set() {
		upstream := func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
			return p.NewInTree(ctx, sc.rowArgs(p), h, fts)
		}
		out = append(out, &kind{Name: p.Replaces, Weight: p.Weight, Upstream: upstream, OursName: p.Name, OursNew: p.New, row: p})
	}
	return out
}()

func kindByName(name string) *kind {
	for _, k := range kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Ours is the factory for our implementation of k, handed the scenario's
// args the way kube-scheduler hands args to out-of-tree plugins.
func (k *kind) Ours(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	return k.OursNew(ctx, oursArgs(k.Name, sc), h, fts)
}

// ---------------------------------------------------------------------------
// Args: the same generated versioned values, converted to the internal types
// for upstream (defaults applied, as the config loader would) and handed raw
// to ours (as kube-scheduler hands args to out-of-tree plugins).

// versionedArgs returns the scenario's args for the in-tree plugin called
// name, or nil (no pluginConfig entry: the plugin's defaults) when the
// generator made none. It reads the Setup field of the row's Args type
// (argsField), so a row of pkg/plugins.Set() that takes args needs no case
// here, only a field in Setup (TestSetupCarriesEveryRowsArgs checks both
// that and that the generators fill it).
func (sc *Scenario) versionedArgs(name string) runtime.Object {
	k := kindByName(name)
	if k == nil {
		return nil
	}
	return sc.rowArgs(k.row)
}

// rowArgs is versionedArgs for a row.
func (sc *Scenario) rowArgs(p plugins.Plugin) runtime.Object {
	if p.Args == nil {
		return nil
	}
	return sc.Setup.args(reflect.TypeOf(p.Args))
}

// args returns the Setup field of type t, or nil when it is unset or
// Setup has no field of that type.
func (s *Setup) args(t reflect.Type) runtime.Object {
	f := argsField(s, t)
	if !f.IsValid() || f.IsNil() {
		return nil
	}
	return f.Interface().(runtime.Object)
}

// argsField is Setup's field of type t (the zero Value if none), settable.
func argsField(s *Setup, t reflect.Type) reflect.Value {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if v.Field(i).Type() == t {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// argsFields are Setup's args fields: those whose type is a runtime.Object.
func argsFields(s *Setup) []reflect.Value {
	var out []reflect.Value
	v := reflect.ValueOf(s).Elem()
	obj := reflect.TypeFor[runtime.Object]()
	for i := range v.NumField() {
		if v.Field(i).Type().Implements(obj) {
			out = append(out, v.Field(i))
		}
	}
	return out
}

// oursArgs returns the *runtime.Unknown our factory receives, or nil when
// the profile would have no pluginConfig entry.
func oursArgs(name string, sc *Scenario) runtime.Object {
	v := sc.versionedArgs(name)
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if sc.ArgsAsYAML {
		// YAML cannot carry every string JSON can (control characters such
		// as DEL): such args only ever reach a plugin from a JSON config.
		if y, err := sigsyaml.JSONToYAML(raw); err == nil {
			return &runtime.Unknown{Raw: y, ContentType: runtime.ContentTypeYAML}
		}
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

func featuresFor(sc *Scenario) feature.Features {
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	fts.EnableTaintTolerationComparisonOperators = sc.Gates.TaintTolerationComparisonOperators
	setLineGates(&fts, sc.Gates)
	return fts
}

// ---------------------------------------------------------------------------
// Environment: one per worker goroutine. The framework handle, informer
// factory and namespace store are reused across scenarios; only the snapshot
// and the store's content are swapped, which keeps a scenario cheap.

// swapLister lets a long-lived handle serve the current scenario's snapshot.
type swapLister struct{ fwk.SharedLister }

// nominator serves the scenario's nominated pods to the framework.
type nominator struct{ byNode map[string][]fwk.PodInfo }

func (n *nominator) AddNominatedPod(klog.Logger, fwk.PodInfo, *fwk.NominatingInfo) {}
func (n *nominator) DeleteNominatedPodIfExists(*v1.Pod)                            {}
func (n *nominator) UpdateNominatedPod(klog.Logger, *v1.Pod, fwk.PodInfo)          {}
func (n *nominator) NominatedPodsForNode(name string) []fwk.PodInfo                { return n.byNode[name] }

type env struct {
	ctx       context.Context
	lister    *swapLister
	snapshot  *cache.Snapshot
	informers informers.SharedInformerFactory
	nsStore   toolscache.Indexer
	nominator *nominator
	handle    fwk.Handle
	recorder  *metrics.MetricAsyncRecorder
	// draManager serves DynamicResources in whole-profile runs (no claims,
	// no device classes: it only has to exist).
	draManager fwk.SharedDRAManager
}

// quietContext returns ctx with a discarding logger: TaintToleration logs
// unparsable Gt/Lt values at error level, which would flood the test output.
func quietContext(ctx context.Context) context.Context {
	return klog.NewContext(ctx, logr.Discard())
}

func newEnv(ctx context.Context) (*env, error) {
	ctx = quietContext(ctx)
	e := &env{
		ctx:       ctx,
		lister:    &swapLister{SharedLister: cache.NewEmptySnapshot()},
		informers: informers.NewSharedInformerFactory(fake.NewClientset(), 0),
		nominator: &nominator{},
		recorder:  metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done()),
	}
	// The informer is never started: the store is filled directly.
	e.nsStore = e.informers.Core().V1().Namespaces().Informer().GetIndexer()
	claims := assumecache.NewAssumeCache(klog.FromContext(ctx), e.informers.Resource().V1().ResourceClaims().Informer(), "ResourceClaim", "", nil)
	e.draManager = dynamicresources.NewDRAManager(ctx, claims, nil, e.informers)
	h, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(e.lister),
		frameworkruntime.WithInformerFactory(e.informers),
		frameworkruntime.WithPodNominator(e.nominator),
		frameworkruntime.WithMetricsRecorder(e.recorder),
	)
	if err != nil {
		return nil, err
	}
	e.handle = h
	return e, nil
}

// install makes sc the current cluster state.
func (e *env) install(sc *Scenario) {
	e.snapshot = cache.NewSnapshot(sc.Pods, sc.Nodes)
	e.lister.SharedLister = e.snapshot
	objs := make([]any, 0, len(sc.Namespaces))
	for _, ns := range sc.Namespaces {
		objs = append(objs, ns)
	}
	if err := e.nsStore.Replace(objs, ""); err != nil {
		panic(err)
	}
	e.nominator.byNode = map[string][]fwk.PodInfo{}
	for _, p := range sc.Nominated {
		pi, _ := framework.NewPodInfo(p) // the queue ignores the parse error too
		e.nominator.byNode[p.Status.NominatedNodeName] = append(e.nominator.byNode[p.Status.NominatedNodeName], pi)
	}
}

// ---------------------------------------------------------------------------
// Results are compared as strings so that any difference is printable.

type mismatch struct {
	Plugin   string // upstream plugin name, or "Profile"
	Check    string // PreFilter, Filter, Score, ...
	Where    string // node, event, op...
	Upstream string
	Ours     string
}

func (m mismatch) key() string { return m.Plugin + "/" + m.Check }

func (m mismatch) String() string {
	where := ""
	if m.Where != "" {
		where = " [" + m.Where + "]"
	}
	return fmt.Sprintf("%s %s%s\n    upstream: %s\n    ours:     %s", m.Plugin, m.Check, where, m.Upstream, m.Ours)
}

type recorder struct {
	plugin string
	out    []mismatch
	// oursMustNotPanic makes a panic on our side a mismatch even when
	// upstream panicked the same way (the batches accept that; the hostile
	// input fuzz targets do not: a plugin of ours must never panic).
	oursMustNotPanic bool
}

// eq records a mismatch when a != b and reports whether they were equal.
func (r *recorder) eq(check, where, a, b string) bool {
	if s := outcomes.Load(); s != nil {
		s.add(r.plugin + "/" + check + ": " + a)
	}
	if r.oursMustNotPanic && strings.HasPrefix(b, "PANIC: ") {
		r.out = append(r.out, mismatch{Plugin: r.plugin, Check: check + "(ours panicked)", Where: where, Upstream: a, Ours: b})
		return false
	}
	if a == b || samePanic(a, b) {
		return true
	}
	r.out = append(r.out, mismatch{Plugin: r.plugin, Check: check, Where: where, Upstream: a, Ours: b})
	return false
}

// outcomeStats counts the upstream outcomes seen (TestGeneratorReachesCorners).
type outcomeStats struct {
	sync.Mutex
	seen map[string]int
}

var (
	outcomes     atomic.Pointer[outcomeStats]
	positiveNums = regexp.MustCompile(`\b[1-9][0-9]*\b`)
)

func (s *outcomeStats) add(outcome string) {
	if len(outcome) > 300 {
		outcome = outcome[:300]
	}
	outcome = positiveNums.ReplaceAllString(outcome, "#")
	s.Lock()
	s.seen[outcome]++
	s.Unlock()
}

// statusString is the suite's one status renderer: what the framework acts
// on, i.e. the code and, for non-success codes, the reasons and the plugin
// the framework attributed the status to. Success and Skip carry no
// observable text.
func statusString(s *fwk.Status) string {
	switch {
	case s.IsSuccess():
		return "Success"
	case s.IsSkip():
		return "Skip"
	}
	rs := make([]string, len(s.Reasons()))
	for i, r := range s.Reasons() {
		rs[i] = fmt.Sprintf("%q", r)
	}
	out := s.Code().String() + " " + strings.Join(rs, ", ")
	if s.Plugin() != "" {
		out += " (plugin " + s.Plugin() + ")"
	}
	return out
}

func resultString(r *fwk.PreFilterResult) string {
	if r == nil {
		return "<nil>"
	}
	if r.AllNodes() {
		return "AllNodes"
	}
	return fmt.Sprintf("NodeNames%q", sets.List(r.NodeNames))
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return "error: " + err.Error()
}

// samePanic: both sides panicked with the same value (stacks differ).
func samePanic(a, b string) bool {
	if !strings.HasPrefix(a, "PANIC: ") || !strings.HasPrefix(b, "PANIC: ") {
		return false
	}
	la, _, _ := strings.Cut(a, "\n")
	lb, _, _ := strings.Cut(b, "\n")
	return la == lb
}

// protect runs f and turns a panic into a printable result.
func protect(f func() string) (out string) {
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("PANIC: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

// capabilities lists the extension interfaces a plugin implements.
func capabilities(p fwk.Plugin) string {
	if u, ok := p.(interface{ Unwrap() fwk.Plugin }); ok {
		p = u.Unwrap()
	}
	var c []string
	if _, ok := p.(fwk.PreFilterPlugin); ok {
		c = append(c, "PreFilter")
	}
	if _, ok := p.(fwk.FilterPlugin); ok {
		c = append(c, "Filter")
	}
	if _, ok := p.(fwk.PreScorePlugin); ok {
		c = append(c, "PreScore")
	}
	if _, ok := p.(fwk.ScorePlugin); ok {
		c = append(c, "Score")
	}
	if _, ok := p.(fwk.EnqueueExtensions); ok {
		c = append(c, "EnqueueExtensions")
	}
	if _, ok := p.(fwk.SignPlugin); ok {
		c = append(c, "Sign")
	}
	if _, ok := p.(fwk.PostFilterPlugin); ok {
		c = append(c, "PostFilter")
	}
	if _, ok := p.(fwk.ReservePlugin); ok {
		c = append(c, "Reserve")
	}
	if _, ok := p.(fwk.PermitPlugin); ok {
		c = append(c, "Permit")
	}
	if _, ok := p.(fwk.PreBindPlugin); ok {
		c = append(c, "PreBind")
	}
	if _, ok := p.(fwk.BindPlugin); ok {
		c = append(c, "Bind")
	}
	return strings.Join(c, ",")
}

// ---------------------------------------------------------------------------
// Plugin-level comparison.

// comparePlugin builds upstream (a) and candidate (b) for sc, which must
// already be installed in e, and compares one cycle on e's snapshot.
func comparePlugin(e *env, sc *Scenario, k *kind, a, b factory) []mismatch {
	return comparePluginWith(&recorder{plugin: k.Name}, e, sc, a, b)
}

// comparePluginWith is comparePlugin recording into r.
func comparePluginWith(r *recorder, e *env, sc *Scenario, a, b factory) []mismatch {
	pa, pb, ok := newPluginPair(r, e.ctx, sc, e.handle, e.handle, a, b)
	if !ok {
		return r.out
	}
	comparePluginCycle(r, e.ctx, sc, side{pa, e.snapshot}, side{pb, e.snapshot})
	return r.out
}

// newPluginPair builds both plugins (each on its own handle) and compares
// what construction exposes; ok is false when there is nothing more to run.
func newPluginPair(r *recorder, ctx context.Context, sc *Scenario, hA, hB fwk.Handle, a, b factory) (pa, pb fwk.Plugin, ok bool) {
	fts := featuresFor(sc)
	var errA, errB error
	na := protect(func() string { pa, errA = a(ctx, sc, hA, fts); return errString(errA) })
	nb := protect(func() string { pb, errB = b(ctx, sc, hB, fts); return errString(errB) })
	if (errA == nil) != (errB == nil) || strings.HasPrefix(na, "PANIC") || strings.HasPrefix(nb, "PANIC") {
		r.eq("New", "", na, nb)
		return nil, nil, false
	}
	if errA != nil {
		// Both refuse the args; the exact text only matters for the operator.
		r.eq("NewErrorText", "", na, nb)
		return nil, nil, false
	}
	if !r.eq("Interfaces", "", capabilities(pa), capabilities(pb)) {
		return nil, nil, false
	}
	return pa, pb, true
}

// side is one half of a comparison: a plugin and the snapshot its handle
// serves. The one-cycle mode gives both halves the same snapshot; the
// sequence mode gives each its own, maintained by its own cache.
type side struct {
	p    fwk.Plugin
	snap *cache.Snapshot
}

// pairedNodes lists a's nodes and b's NodeInfo for each (by position, which
// two caches fed the same events keep identical); ok is false (and a
// mismatch recorded) if the two snapshots disagree on the node list.
func pairedNodes(r *recorder, a, b *cache.Snapshot) (na, nb []fwk.NodeInfo, ok bool) {
	na, err := a.NodeInfos().List()
	if err != nil {
		panic(err)
	}
	if a == b {
		return na, na, true
	}
	nb, err = b.NodeInfos().List()
	if err != nil {
		panic(err)
	}
	names := func(l []fwk.NodeInfo) string {
		s := make([]string, len(l))
		for i, n := range l {
			s[i] = n.Node().Name
		}
		return strings.Join(s, ",")
	}
	return na, nb, r.eq("SnapshotNodes", "", names(na), names(nb))
}

// comparePluginCycle runs one scheduling cycle for sc.Pod on both sides.
// newCycleState is a cycle's state as kube-scheduler starts it.
func newCycleState(sc *Scenario) *framework.CycleState {
	st := framework.NewCycleState()
	if sc.PodGroupCycle {
		// kube-scheduler hands the pod group's own state; any non-nil one
		// marks the cycle.
		markPodGroupCycle(st)
	}
	return st
}

func comparePluginCycle(r *recorder, ctx context.Context, sc *Scenario, a, b side) {
	pa, pb := a.p, b.p
	pod := sc.Pod
	pristine := pod.DeepCopy()

	compareSign(r, ctx, pa, pb, pod)
	compareEvents(r, ctx, pa, pb, sc)

	nodes, nodesB, ok := pairedNodes(r, a.snap, b.snap)
	if !ok {
		return
	}
	// A profile may enable Filter without PreFilter: then nothing was
	// skipped or narrowed and the state is missing.
	if fA, ok := pa.(fwk.FilterPlugin); ok && sc.NoStateChecks {
		fB := pb.(fwk.FilterPlugin)
		for i, n := range nodes {
			if i == 3 {
				break
			}
			r.eq("FilterWithoutPreFilterState", "node "+n.Node().Name,
				protect(func() string { return statusString(fA.Filter(ctx, framework.NewCycleState(), pod, n)) }),
				protect(func() string { return statusString(fB.Filter(ctx, framework.NewCycleState(), pod, nodesB[i])) }))
		}
	}

	stA, stB := newCycleState(sc), newCycleState(sc)

	// PreFilter. candidates are indices into nodes/nodesB.
	candidates := make([]int, len(nodes))
	for i := range nodes {
		candidates[i] = i
	}
	proceed, skipped := true, false
	if pfA, ok := pa.(fwk.PreFilterPlugin); ok {
		pfB := pb.(fwk.PreFilterPlugin)
		var rA, rB *fwk.PreFilterResult
		var sA, sB *fwk.Status
		outA := protect(func() string {
			rA, sA = pfA.PreFilter(ctx, stA, pod, nodes)
			return statusString(sA) + " " + resultString(rA)
		})
		outB := protect(func() string {
			rB, sB = pfB.PreFilter(ctx, stB, pod, nodesB)
			return statusString(sB) + " " + resultString(rB)
		})
		if !r.eq("PreFilter", "", outA, outB) {
			return
		}
		switch {
		case sA.IsSkip():
			skipped = true
		case !sA.IsSuccess():
			proceed = false
		case !rA.AllNodes():
			candidates = candidates[:0]
			for i, n := range nodes {
				if rA.NodeNames.Has(n.Node().Name) {
					candidates = append(candidates, i)
				}
			}
		}
		extA, extB := pfA.PreFilterExtensions(), pfB.PreFilterExtensions()
		if !r.eq("PreFilterExtensions", "", fmt.Sprint(extA != nil), fmt.Sprint(extB != nil)) {
			return
		}
	}
	if !proceed {
		checkPodUntouched(r, pristine, pod)
		return
	}

	// Filter (not run for a plugin whose PreFilter skipped).
	passed := map[string]bool{}
	for _, i := range candidates {
		passed[nodes[i].Node().Name] = true
	}
	if fA, ok := pa.(fwk.FilterPlugin); ok && !skipped {
		fB := pb.(fwk.FilterPlugin)
		filterAll := func(sa, sb fwk.CycleState) map[string][2]string {
			res := map[string][2]string{}
			for _, i := range candidates {
				res[nodes[i].Node().Name] = [2]string{
					protect(func() string { return statusString(fA.Filter(ctx, sa, pod, nodes[i])) }),
					protect(func() string { return statusString(fB.Filter(ctx, sb, pod, nodesB[i])) }),
				}
			}
			return res
		}
		first := filterAll(stA, stB)
		for _, i := range candidates {
			name := nodes[i].Node().Name
			res := first[name]
			r.eq("Filter", "node "+name, res[0], res[1])
			if res[0] != "Success" {
				passed[name] = false
			}
		}

		// Nominated pods and preemption: clone, add/remove, filter that node.
		if len(sc.Preemption) > 0 {
			dry := func(s side, st fwk.CycleState, f fwk.FilterPlugin) dryRunSide {
				d := dryRunSide{snap: s.snap, state: st, render: statusString,
					filter: func(st fwk.CycleState, ni fwk.NodeInfo) *fwk.Status { return f.Filter(ctx, st, pod, ni) }}
				if pf, ok := s.p.(fwk.PreFilterPlugin); ok {
					if ext := pf.PreFilterExtensions(); ext != nil {
						d.remove = func(st fwk.CycleState, v fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
							return ext.RemovePod(ctx, st, pod, v, ni)
						}
						d.add = func(st fwk.CycleState, p fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
							return ext.AddPod(ctx, st, pod, p, ni)
						}
					}
				}
				return d
			}
			replayPreemption(r, klog.FromContext(ctx), sc.Preemption, dry(a, stA, fA), dry(b, stB, fB), "FilterAfterAddRemove")
			// Clone independence: the ops above mutated clones only.
			again := filterAll(stA, stB)
			for _, i := range candidates {
				name := nodes[i].Node().Name
				if again[name][0] != first[name][0] {
					r.eq("CloneIndependence(upstream!)", "node "+name, first[name][0], again[name][0])
				}
				r.eq("CloneIndependence", "node "+name+" (ours before vs after mutating clones)", first[name][1], again[name][1])
			}
		}
	}

	// Scoring on the nodes the scenario marks feasible and this plugin passed.
	if sA, ok := pa.(fwk.ScorePlugin); ok {
		sB := pb.(fwk.ScorePlugin)
		var scoreA, scoreB []fwk.NodeInfo
		scoreSet := sets.New(sc.ScoreNodes...)
		for _, i := range candidates {
			if name := nodes[i].Node().Name; passed[name] && scoreSet.Has(name) {
				scoreA = append(scoreA, nodes[i])
				scoreB = append(scoreB, nodesB[i])
			}
		}
		if len(scoreA) > 0 {
			compareScores(r, ctx, pa, pb, sA, sB, stA, stB, pod, scoreA, scoreB, sc.NoStateChecks)
		}
	}
	checkPodUntouched(r, pristine, pod)
}

// dryRunSide is what a preemption dry-run needs from one side: its snapshot,
// the PreFilter state to clone, and the calls under test (remove/add nil when
// there are no PreFilter extensions).
type dryRunSide struct {
	snap   *cache.Snapshot
	state  fwk.CycleState
	remove func(st fwk.CycleState, victim fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status
	add    func(st fwk.CycleState, pi fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status
	filter func(st fwk.CycleState, ni fwk.NodeInfo) *fwk.Status
	render func(*fwk.Status) string
}

// replayPreemption simulates SelectVictimsOnNode and nominated-pod filtering
// the way the scheduler does, for the plugin-level and the whole-profile
// comparison alike: per op, clone the state, copy the node
// (NodeInfo.Snapshot), remove/add pods on the copy, call the extensions and
// filter the copy after each step. The states it was given are not touched.
func replayPreemption(r *recorder, logger klog.Logger, ops []PreemptionOp, a, b dryRunSide, filterCheck string) {
	for i, op := range ops {
		niA, errA := a.snap.NodeInfos().Get(op.Node)
		niB, errB := b.snap.NodeInfos().Get(op.Node)
		if errA != nil || errB != nil || niA.Node() == nil || niB.Node() == nil {
			continue
		}
		copyA, copyB := niA.Snapshot(), niB.Snapshot()
		cA, cB := a.state.Clone(), b.state.Clone()
		for j, step := range op.Steps {
			where := fmt.Sprintf("preemption op %d step %d node %s", i, j, op.Node)
			if step.Remove != "" {
				victimA, victimB := podOn(copyA, step.Remove), podOn(copyB, step.Remove)
				if victimA == nil || victimB == nil {
					continue
				}
				if copyA.RemovePod(logger, victimA.GetPod()) != nil || copyB.RemovePod(logger, victimB.GetPod()) != nil {
					continue
				}
				where += " remove " + step.Remove
				if a.remove != nil && !r.eq("RemovePod", where,
					protect(func() string { return a.render(a.remove(cA, victimA, copyA)) }),
					protect(func() string { return b.render(b.remove(cB, victimB, copyB)) })) {
					break
				}
			} else if step.Add != nil {
				piA, _ := framework.NewPodInfo(step.Add)
				piB, _ := framework.NewPodInfo(step.Add)
				copyA.AddPodInfo(piA)
				copyB.AddPodInfo(piB)
				where += " add " + step.Add.Namespace + "/" + step.Add.Name
				if a.add != nil && !r.eq("AddPod", where,
					protect(func() string { return a.render(a.add(cA, piA, copyA)) }),
					protect(func() string { return b.render(b.add(cB, piB, copyB)) })) {
					break
				}
			}
			r.eq(filterCheck, where,
				protect(func() string { return a.render(a.filter(cA, copyA)) }),
				protect(func() string { return b.render(b.filter(cB, copyB)) }))
		}
	}
}

// podOn returns the pod namespace/name on ni, or nil.
func podOn(ni fwk.NodeInfo, key string) fwk.PodInfo {
	var found fwk.PodInfo
	for _, pi := range ni.GetPods() {
		if pi.GetPod().Namespace+"/"+pi.GetPod().Name == key {
			found = pi
		}
	}
	return found
}

func checkPodUntouched(r *recorder, pristine, pod *v1.Pod) {
	if !equality.Semantic.DeepEqual(pristine, pod) {
		r.eq("PodMutated", "", "pod unchanged", "a plugin mutated the incoming pod")
	}
}

func compareScores(r *recorder, ctx context.Context, pa, pb fwk.Plugin, sA, sB fwk.ScorePlugin, stA, stB fwk.CycleState, pod *v1.Pod, nodes, nodesB []fwk.NodeInfo, noState bool) {
	if psA, ok := pa.(fwk.PreScorePlugin); ok {
		psB := pb.(fwk.PreScorePlugin)
		var stsA, stsB *fwk.Status
		if !r.eq("PreScore", fmt.Sprintf("%d nodes", len(nodes)),
			protect(func() string { stsA = psA.PreScore(ctx, stA, pod, nodes); return statusString(stsA) }),
			protect(func() string { stsB = psB.PreScore(ctx, stB, pod, nodesB); return statusString(stsB) })) {
			return
		}
		if !stsA.IsSuccess() {
			return // Skip: no Score/Normalize; error: cycle fails
		}
	}
	rawA := make(fwk.NodeScoreList, len(nodes))
	rawB := make(fwk.NodeScoreList, len(nodes))
	for i, n := range nodes {
		name := n.Node().Name
		var okA bool
		outA := protect(func() string {
			s, st := sA.Score(ctx, stA, pod, n)
			rawA[i] = fwk.NodeScore{Name: name, Score: s}
			okA = st.IsSuccess()
			if !okA {
				return statusString(st)
			}
			return fmt.Sprint(s)
		})
		outB := protect(func() string {
			s, st := sB.Score(ctx, stB, pod, nodesB[i])
			rawB[i] = fwk.NodeScore{Name: name, Score: s}
			if !st.IsSuccess() {
				return statusString(st)
			}
			return fmt.Sprint(s)
		})
		if !r.eq("Score", "node "+name, outA, outB) || !okA {
			return
		}
	}
	extA, extB := sA.ScoreExtensions(), sB.ScoreExtensions()
	if !r.eq("ScoreExtensions", "", fmt.Sprint(extA != nil), fmt.Sprint(extB != nil)) || extA == nil {
		return
	}
	r.eq("NormalizeScore", fmt.Sprintf("raw %s", scoresString(rawA)),
		protect(func() string {
			st := extA.NormalizeScore(ctx, stA, pod, rawA)
			return statusString(st) + " " + scoresString(rawA)
		}),
		protect(func() string {
			st := extB.NormalizeScore(ctx, stB, pod, rawB)
			return statusString(st) + " " + scoresString(rawB)
		}))
	if noState {
		for i, n := range nodes {
			if i == 2 {
				break
			}
			r.eq("ScoreWithoutPreScoreState", "node "+n.Node().Name,
				protect(func() string {
					s, st := sA.Score(ctx, framework.NewCycleState(), pod, n)
					return fmt.Sprint(s, " ", statusString(st))
				}),
				protect(func() string {
					s, st := sB.Score(ctx, framework.NewCycleState(), pod, nodesB[i])
					return fmt.Sprint(s, " ", statusString(st))
				}))
		}
	}
}

func scoresString(l fwk.NodeScoreList) string {
	parts := make([]string, len(l))
	for i, s := range l {
		parts[i] = fmt.Sprintf("%s=%d", s.Name, s.Score)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func compareSign(r *recorder, ctx context.Context, pa, pb fwk.Plugin, pod *v1.Pod) {
	spA, ok := pa.(fwk.SignPlugin)
	if !ok {
		return
	}
	spB := pb.(fwk.SignPlugin)
	sign := func(sp fwk.SignPlugin) string {
		frags, st := sp.SignPod(ctx, pod)
		// The framework folds fragments into a map and JSON-encodes it, so
		// compare keys and encoded values; order is not observable.
		parts := make([]string, 0, len(frags))
		for _, f := range frags {
			v, err := json.Marshal(f.Value)
			if err != nil {
				parts = append(parts, f.Key+"=<unmarshalable: "+err.Error()+">")
				continue
			}
			parts = append(parts, f.Key+"="+string(v))
		}
		sort.Strings(parts)
		return statusString(st) + " " + strings.Join(parts, " ; ")
	}
	r.eq("SignPod", "", protect(func() string { return sign(spA) }), protect(func() string { return sign(spB) }))
}

// ---------------------------------------------------------------------------
// Queueing hints.

func eventEntries(ctx context.Context, p fwk.Plugin) ([]fwk.ClusterEventWithHint, string) {
	ee := p.(fwk.EnqueueExtensions)
	evs, err := ee.EventsToRegister(ctx)
	evs = slices.Clone(evs)
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].Event.Resource != evs[j].Event.Resource {
			return evs[i].Event.Resource < evs[j].Event.Resource
		}
		return evs[i].Event.ActionType < evs[j].Event.ActionType
	})
	parts := []string{errString(err)}
	for _, ev := range evs {
		parts = append(parts, fmt.Sprintf("%s/%s(label=%s,hint=%t,preHint=%t)", ev.Event.Resource, ev.Event.ActionType,
			ev.Event.Label(), ev.QueueingHintFn != nil, hasPreHint(ev)))
	}
	return evs, strings.Join(parts, " ")
}

// clusterEvents is what the scheduling queue derives from an event.
func clusterEvents(ev Event) []fwk.ClusterEvent {
	switch ev.Kind {
	case NodeAdd:
		return []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Add}}
	case NodeUpdate:
		return framework.NodeSchedulingPropertiesChange(ev.NewNode, ev.OldNode)
	case AssignedPodAdd:
		return []fwk.ClusterEvent{{Resource: podResource(ev.NewPod), ActionType: fwk.Add}}
	case AssignedPodUpdate:
		return podPropertiesChange(ev.NewPod, ev.OldPod, false)
	case AssignedPodDelete:
		return []fwk.ClusterEvent{{Resource: podResource(ev.OldPod), ActionType: fwk.Delete}}
	case TargetPodUpdate:
		return podPropertiesChange(ev.NewPod, ev.OldPod, true)
	}
	return nil
}

// directResource is the resource whose hints are also exercised directly
// with an event, whatever action the queue would derive: upstream's own hint
// tests do that, and it reaches branches (e.g. nominated-only pods) that the
// queue's routing rarely produces.
func directResource(ev Event) fwk.EventResource {
	switch ev.Kind {
	case NodeAdd, NodeUpdate:
		return fwk.Node
	case TargetPodUpdate:
		return targetPodResource
	}
	return assignedPodResource
}

func eventObjects(ev Event) (oldObj, newObj any) {
	switch {
	case ev.OldNode != nil:
		oldObj = ev.OldNode
	case ev.OldPod != nil:
		oldObj = ev.OldPod
	}
	switch {
	case ev.NewNode != nil:
		newObj = ev.NewNode
	case ev.NewPod != nil:
		newObj = ev.NewPod
	}
	return oldObj, newObj
}

func compareEvents(r *recorder, ctx context.Context, pa, pb fwk.Plugin, sc *Scenario) {
	if _, ok := pa.(fwk.EnqueueExtensions); !ok {
		return
	}
	var evA, evB []fwk.ClusterEventWithHint
	outA := protect(func() string { var s string; evA, s = eventEntries(ctx, pa); return s })
	outB := protect(func() string { var s string; evB, s = eventEntries(ctx, pb); return s })
	if !r.eq("EventsToRegister", "", outA, outB) {
		return
	}
	logger := klog.FromContext(ctx)
	hint := func(e fwk.ClusterEventWithHint, oldObj, newObj any) string {
		if e.QueueingHintFn == nil {
			return "Queue (no hint fn)"
		}
		h, err := e.QueueingHintFn(logger, sc.Pod, oldObj, newObj)
		return h.String() + " " + errString(err)
	}
	preHint := func(e fwk.ClusterEventWithHint, oldObj, newObj any) string {
		return runPreHint(logger, e, sc.Pod, oldObj, newObj)
	}
	for i, ev := range sc.Events {
		oldObj, newObj := eventObjects(ev)
		ces := clusterEvents(ev)
		for j := range evA {
			matched := false
			for _, ce := range ces {
				if framework.MatchClusterEvents(evA[j].Event, ce) {
					matched = true
				}
			}
			if !matched && evA[j].Event.Resource != directResource(ev) {
				continue
			}
			check := "QueueingHint"
			if !matched {
				check = "QueueingHint(direct)"
			}
			where := fmt.Sprintf("event %d %s -> %s/%s", i, ev.Kind, evA[j].Event.Resource, evA[j].Event.ActionType)
			ha := protect(func() string { return hint(evA[j], oldObj, newObj) })
			hb := protect(func() string { return hint(evB[j], oldObj, newObj) })
			r.eq(check, where, ha, hb)
			if matched && strings.HasPrefix(ha, "Queue ") {
				// A pre-hint may narrow the pods evaluated; it must keep a pod
				// upstream would queue.
				r.eq("PreQueueingHint", where,
					protect(func() string { return preHint(evA[j], oldObj, newObj) }),
					protect(func() string { return preHint(evB[j], oldObj, newObj) }))
			}
		}
	}
}

package plugins

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// Panic containment. kube-scheduler v1.37.2 does not recover
// panics of plugins: Filter and Score run in workqueue.ParallelizeUntil,
// whose utilruntime.HandleCrash re-panics, and the scheduling loop's
// wait.UntilWithContext does the same, so one pod that trips a bug in a
// plugin would crash the whole scheduler, and again after every restart
// until the pod is deleted. Registry therefore hands the framework each of
// our plugins wrapped by Contain: a panic in an extension point becomes an
// Error status naming the plugin and the extension point (the framework
// fails that pod's cycle and records a FailedScheduling event carrying the
// message; the pod is retried with backoff), and is logged with its stack.
// Other pods keep being scheduled. Each contained panic also counts in
// placement_scheduler_plugin_panics_total{plugin, extension_point}
// (metrics.go), which the chart's PrometheusRule alerts on.
//
// The wrapper must be invisible otherwise: the framework decides what a
// plugin runs at by type assertion, so the wrapper implements exactly the
// interfaces the plugin does (Contain refuses a shape it does not know
// rather than hide an interface), and the equivalence suite's whole-profile
// comparison runs ours through it.

// PanicMessage is the text of the Error status a contained panic becomes;
// tests match events and statuses against it.
func PanicMessage(plugin, extensionPoint string, value any) string {
	return fmt.Sprintf("plugin %s panicked in %s: %v", plugin, extensionPoint, value)
}

// filterShape is what every plugin of ours implements (NodeName).
type filterShape interface {
	fwk.PreFilterPlugin
	fwk.FilterPlugin
	fwk.EnqueueExtensions
	fwk.SignPlugin
	explanation.FilterExplainer
}

// scoreShape adds scoring (TaintToleration, NodeAffinity, InterPodAffinity).
type scoreShape interface {
	filterShape
	fwk.PreScorePlugin
	fwk.ScorePlugin
}

// Interfaces lists the extension interfaces p implements, by name: what the
// framework (and our tools) can see of a plugin. Contain keeps it unchanged.
func Interfaces(p fwk.Plugin) []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	_, ok := p.(fwk.PreEnqueuePlugin)
	add(ok, "PreEnqueue")
	_, ok = p.(fwk.QueueSortPlugin)
	add(ok, "QueueSort")
	_, ok = p.(fwk.EnqueueExtensions)
	add(ok, "EnqueueExtensions")
	_, ok = p.(fwk.PreFilterPlugin)
	add(ok, "PreFilter")
	_, ok = p.(fwk.FilterPlugin)
	add(ok, "Filter")
	_, ok = p.(fwk.PostFilterPlugin)
	add(ok, "PostFilter")
	_, ok = p.(fwk.PreScorePlugin)
	add(ok, "PreScore")
	_, ok = p.(fwk.ScorePlugin)
	add(ok, "Score")
	_, ok = p.(fwk.ReservePlugin)
	add(ok, "Reserve")
	_, ok = p.(fwk.PermitPlugin)
	add(ok, "Permit")
	_, ok = p.(fwk.PreBindPlugin)
	add(ok, "PreBind")
	_, ok = p.(fwk.BindPlugin)
	add(ok, "Bind")
	_, ok = p.(fwk.PostBindPlugin)
	add(ok, "PostBind")
	_, ok = p.(fwk.SignPlugin)
	add(ok, "Sign")
	minorInterfaces(p, add)
	_, ok = p.(explanation.FilterExplainer)
	add(ok, "FilterExplainer")
	return out
}

// Contain wraps p (see above). It fails for a plugin whose interface set is
// not one of the shapes the wrapper implements, so that adding an extension
// point to a plugin cannot silently disable it.
func Contain(p fwk.Plugin) (fwk.Plugin, error) {
	var out fwk.Plugin
	switch q := p.(type) {
	case scoreShape:
		out = &containedScorer{containedFilter: newContainedFilter(q), scorer: q, normalizer: containNormalizer(q.Name(), q.ScoreExtensions())}
	case filterShape:
		out = newContainedFilter(q)
	default:
		if out = containLineShape(p); out == nil {
			return nil, fmt.Errorf("plugin %s implements %v, which no panic-containment wrapper has: add one in pkg/plugins/containment.go", p.Name(), Interfaces(p))
		}
	}
	if want, got := Interfaces(p), Interfaces(out); !slices.Equal(want, got) {
		return nil, fmt.Errorf("plugin %s implements %v, its panic-containment wrapper %v: add a wrapper of that exact shape in pkg/plugins/containment.go", p.Name(), want, got)
	}
	RegisterMetrics()
	initPanicSeries(p.Name(), out.(interface{ panicPoints() []string }).panicPoints())
	return out, nil
}

// recovered turns a recovered panic value into the Error status, logged
// with the stack. It runs in the deferred function, where debug.Stack still
// shows where the panic happened.
func recovered(logger klog.Logger, plugin, point string, pod *v1.Pod, value any) *fwk.Status {
	msg := PanicMessage(plugin, point, value)
	kv := []any{"plugin", plugin, "extensionPoint", point, "stack", string(debug.Stack())}
	if pod != nil {
		kv = append(kv, "pod", klog.KObj(pod))
	}
	logger.Error(nil, "Plugin panicked; the panic was contained and turned into an Error status", kv...)
	pluginPanics.WithLabelValues(plugin, panicPoint(point)).Inc()
	return fwk.AsStatus(fmt.Errorf("%s", msg))
}

// containedFilter wraps a filterShape plugin.
type containedFilter struct {
	plugin filterShape
	name   string
	// extensions wraps the plugin's PreFilterExtensions once (nil when it
	// has none): the framework asks for them in every preemption dry-run,
	// and our plugins return a fixed value.
	extensions fwk.PreFilterExtensions
}

func newContainedFilter(p filterShape) *containedFilter {
	c := &containedFilter{plugin: p, name: p.Name()}
	if ext := p.PreFilterExtensions(); ext != nil {
		c.extensions = &containedExtensions{ext: ext, name: c.name}
	}
	return c
}

var _ filterShape = &containedFilter{}

// panicPoints are the extension_point values of the panics c contains.
func (c *containedFilter) panicPoints() []string {
	points := []string{"PreFilter", "Filter", "SignPod", "ExplainFilter", "EventsToRegister", "QueueingHint", "PreQueueingHint"}
	if c.extensions != nil {
		points = append(points, "AddPod", "RemovePod")
	}
	return points
}

// Unwrap returns the wrapped plugin (for tools that inspect ours).
func (c *containedFilter) Unwrap() fwk.Plugin { return c.plugin }

func (c *containedFilter) Name() string { return c.name }

func (c *containedFilter) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (res *fwk.PreFilterResult, st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			res, st = nil, recovered(klog.FromContext(ctx), c.name, "PreFilter", pod, r)
		}
	}()
	return c.plugin.PreFilter(ctx, state, pod, nodes)
}

func (c *containedFilter) PreFilterExtensions() fwk.PreFilterExtensions {
	if c.extensions == nil {
		return nil // an untyped nil: the framework compares with nil
	}
	return c.extensions
}

// Filter and Score run once per node of a cycle, so their wrappers keep
// the no-panic path short: the deferred function calls recover only when
// the plugin did not return (runtime.gorecover and its call are a quarter
// of the wrapper's instructions; BenchmarkContainment). recover is still
// called directly by the deferred function, as it must be to stop the
// panic, and a nil result (runtime.Goexit, not a panic) is left alone.
func (c *containedFilter) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (st *fwk.Status) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				st = recovered(klog.FromContext(ctx), c.name, "Filter", pod, r)
			}
		}
	}()
	st = c.plugin.Filter(ctx, state, pod, nodeInfo)
	returned = true
	return st
}

func (c *containedFilter) SignPod(ctx context.Context, pod *v1.Pod) (frags []fwk.SignFragment, st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			frags, st = nil, recovered(klog.FromContext(ctx), c.name, "SignPod", pod, r)
		}
	}()
	return c.plugin.SignPod(ctx, pod)
}

// ExplainFilter runs only after Filter rejected a node (kubectl-placement,
// PlacementDiagnosis at PostFilter); a panic there loses the explanation,
// not the scheduler.
func (c *containedFilter) ExplainFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (causes []explanation.Cause) {
	defer func() {
		if r := recover(); r != nil {
			recovered(klog.FromContext(ctx), c.name, "ExplainFilter", pod, r)
			causes = nil
		}
	}()
	return c.plugin.ExplainFilter(ctx, state, pod, nodeInfo)
}

// EventsToRegister wraps the queueing hints too: the scheduling queue calls
// them from informer event handlers, where a panic is just as fatal. A
// panicking hint answers Queue (with the error, which the queue logs), the
// queue's own answer to a failing hint, so the pod is retried, not lost.
func (c *containedFilter) EventsToRegister(ctx context.Context) (evs []fwk.ClusterEventWithHint, err error) {
	defer func() {
		if r := recover(); r != nil {
			recovered(klog.FromContext(ctx), c.name, "EventsToRegister", nil, r)
			evs, err = nil, fmt.Errorf("%s", PanicMessage(c.name, "EventsToRegister", r))
		}
	}()
	evs, err = c.plugin.EventsToRegister(ctx)
	evs = slices.Clone(evs)
	for i := range evs {
		point := fmt.Sprintf("QueueingHint(%s/%s)", evs[i].Event.Resource, evs[i].Event.ActionType)
		if hint := evs[i].QueueingHintFn; hint != nil {
			evs[i].QueueingHintFn = func(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (h fwk.QueueingHint, err error) {
				defer func() {
					if r := recover(); r != nil {
						h, err = fwk.Queue, recovered(logger, c.name, point, pod, r).AsError()
					}
				}()
				return hint(logger, pod, oldObj, newObj)
			}
		}
		containPreQueueingHint(&evs[i], c.name, point)
	}
	return evs, err
}

// containedScorer wraps a scoreShape plugin.
type containedScorer struct {
	*containedFilter
	scorer scoreShape
	// normalizer wraps the plugin's ScoreExtensions once (nil: none).
	normalizer fwk.ScoreExtensions
}

func containNormalizer(name string, ext fwk.ScoreExtensions) fwk.ScoreExtensions {
	if ext == nil {
		return nil
	}
	return &containedNormalizer{ext: ext, name: name}
}

var _ scoreShape = &containedScorer{}

func (c *containedScorer) panicPoints() []string {
	points := append(c.containedFilter.panicPoints(), "PreScore", "Score")
	if c.normalizer != nil {
		points = append(points, "NormalizeScore")
	}
	return points
}

func (c *containedScorer) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = recovered(klog.FromContext(ctx), c.name, "PreScore", pod, r)
		}
	}()
	return c.scorer.PreScore(ctx, state, pod, nodes)
}

// Score: see Filter for the returned flag.
func (c *containedScorer) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (score int64, st *fwk.Status) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil {
				score, st = 0, recovered(klog.FromContext(ctx), c.name, "Score", pod, r)
			}
		}
	}()
	score, st = c.scorer.Score(ctx, state, pod, nodeInfo)
	returned = true
	return score, st
}

func (c *containedScorer) ScoreExtensions() fwk.ScoreExtensions { return c.normalizer }

type containedExtensions struct {
	ext  fwk.PreFilterExtensions
	name string
}

func (c *containedExtensions) AddPod(ctx context.Context, state fwk.CycleState, pod *v1.Pod, add fwk.PodInfo, nodeInfo fwk.NodeInfo) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = recovered(klog.FromContext(ctx), c.name, "AddPod", pod, r)
		}
	}()
	return c.ext.AddPod(ctx, state, pod, add, nodeInfo)
}

func (c *containedExtensions) RemovePod(ctx context.Context, state fwk.CycleState, pod *v1.Pod, remove fwk.PodInfo, nodeInfo fwk.NodeInfo) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = recovered(klog.FromContext(ctx), c.name, "RemovePod", pod, r)
		}
	}()
	return c.ext.RemovePod(ctx, state, pod, remove, nodeInfo)
}

type containedNormalizer struct {
	ext  fwk.ScoreExtensions
	name string
}

func (c *containedNormalizer) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) (st *fwk.Status) {
	defer func() {
		if r := recover(); r != nil {
			st = recovered(klog.FromContext(ctx), c.name, "NormalizeScore", pod, r)
		}
	}()
	return c.ext.NormalizeScore(ctx, state, pod, scores)
}

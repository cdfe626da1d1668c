package plugins

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/klog/v2/textlogger"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plugintesting "k8s.io/kubernetes/pkg/scheduler/framework/plugins/testing"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// Every plugin Registry builds is wrapped, and the wrapper shows the
// framework exactly the interfaces of the plugin it wraps.
func TestRegistryContainsEveryPluginInvisibly(t *testing.T) {
	schedmetrics.Register()
	_, ctx := ktesting.NewTestContext(t)
	for _, p := range Set() {
		pl := plugintesting.SetupPluginWithInformers(ctx, t, Registry()[p.Name], nil, cache.NewEmptySnapshot(), nil)
		u, ok := pl.(interface{ Unwrap() fwk.Plugin })
		if !ok {
			t.Errorf("%s: Registry built %T, not a panic-containment wrapper", p.Name, pl)
			continue
		}
		inner := u.Unwrap()
		if got, want := Interfaces(pl), Interfaces(inner); !slices.Equal(got, want) {
			t.Errorf("%s: wrapper implements %v, the plugin %v", p.Name, got, want)
		}
		if pl.Name() != inner.Name() {
			t.Errorf("%s: wrapper named %q", p.Name, pl.Name())
		}
	}
}

// panicky panics in every extension point, with the point's name.
type panicky struct{}

func (panicky) Name() string { return "Panicky" }
func (panicky) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	panic("boom in PreFilter")
}
func (p panicky) PreFilterExtensions() fwk.PreFilterExtensions { return p }
func (panicky) AddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	panic("boom in AddPod")
}
func (panicky) RemovePod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	panic("boom in RemovePod")
}
func (panicky) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	panic("boom in Filter")
}
func (panicky) PreScore(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status {
	panic("boom in PreScore")
}
func (panicky) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	panic("boom in Score")
}
func (p panicky) ScoreExtensions() fwk.ScoreExtensions { return p }
func (panicky) NormalizeScore(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeScoreList) *fwk.Status {
	panic("boom in NormalizeScore")
}
func (panicky) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	panic("boom in SignPod")
}
func (panicky) ExplainFilter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) []explanation.Cause {
	panic("boom in ExplainFilter")
}
func (panicky) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{{
		Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add},
		QueueingHintFn: func(klog.Logger, *v1.Pod, any, any) (fwk.QueueingHint, error) {
			panic("boom in QueueingHint")
		},
		PreQueueingHintFn: func(klog.Logger, any, any) (fwk.PreQueueingHintResult, error) {
			panic("boom in PreQueueingHint")
		},
	}, {
		Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete},
	}}, nil
}

// A panic in any extension point comes back as an Error status naming the
// plugin and the point, logged with the stack of the panic.
func TestContainTurnsPanicsIntoErrors(t *testing.T) {
	var logs bytes.Buffer
	ctx := klog.NewContext(context.Background(), textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs))))
	logger := klog.FromContext(ctx)
	wrapped, err := Contain(panicky{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Interfaces(wrapped), Interfaces(panicky{}); !slices.Equal(got, want) {
		t.Fatalf("wrapper implements %v, the plugin %v", got, want)
	}
	pod := testutil.MakePod("ns", "bad").Obj()
	ni := testutil.NodeInfo(testutil.MakeNode("n1").Obj())
	pi, _ := framework.NewPodInfo(testutil.MakePod("ns", "victim").Obj())
	state := framework.NewCycleState()
	w := wrapped.(scoreShape)
	// Contain created the plugin's counters at zero, one per point it
	// contains (deltas: -count=N reuses the process's registry).
	points := []string{"PreFilter", "AddPod", "RemovePod", "Filter", "PreScore", "Score", "NormalizeScore", "SignPod", "ExplainFilter", "QueueingHint", "PreQueueingHint"}
	before := map[string]float64{}
	for _, p := range points {
		v, ok := panicCount(t, "Panicky", p)
		if !ok {
			t.Errorf("no placement_scheduler_plugin_panics_total{plugin=\"Panicky\",extension_point=%q} on /metrics after Contain", p)
		}
		before[p] = v
	}

	check := func(point string, st *fwk.Status) {
		t.Helper()
		want := PanicMessage("Panicky", point, "boom in "+point)
		testutil.CheckStatus(t, point, st, fwk.Error, want)
	}
	res, st := w.PreFilter(ctx, state, pod, nil)
	check("PreFilter", st)
	if res != nil {
		t.Errorf("PreFilter result after a panic = %v, want nil", res)
	}
	check("AddPod", w.PreFilterExtensions().AddPod(ctx, state, pod, pi, ni))
	check("RemovePod", w.PreFilterExtensions().RemovePod(ctx, state, pod, pi, ni))
	check("Filter", w.Filter(ctx, state, pod, ni))
	check("PreScore", w.PreScore(ctx, state, pod, nil))
	score, st := w.Score(ctx, state, pod, ni)
	check("Score", st)
	if score != 0 {
		t.Errorf("Score after a panic = %d, want 0", score)
	}
	check("NormalizeScore", w.ScoreExtensions().NormalizeScore(ctx, state, pod, fwk.NodeScoreList{{Name: "n1", Score: 1}}))
	frags, st := w.SignPod(ctx, pod)
	check("SignPod", st)
	if frags != nil {
		t.Errorf("SignPod fragments after a panic = %v", frags)
	}
	if causes := w.ExplainFilter(ctx, state, pod, ni); causes != nil {
		t.Errorf("ExplainFilter after a panic = %v, want none", causes)
	}

	evs, err := w.EventsToRegister(ctx)
	if err != nil || len(evs) != 2 {
		t.Fatalf("EventsToRegister = %v, %v", evs, err)
	}
	h, err := evs[0].QueueingHintFn(logger, pod, nil, ni.Node())
	if h != fwk.Queue || err == nil || !strings.Contains(err.Error(), PanicMessage("Panicky", "QueueingHint(Node/Add)", "boom in QueueingHint")) {
		t.Errorf("panicking queueing hint = %v, %v; want Queue and the panic as error", h, err)
	}
	pre, err := evs[0].PreQueueingHintFn(logger, nil, ni.Node())
	if !pre.AllPods || err == nil || !strings.Contains(err.Error(), "boom in PreQueueingHint") {
		t.Errorf("panicking pre-queueing hint = %+v, %v; want AllPods and the panic as error", pre, err)
	}
	if evs[1].QueueingHintFn != nil || evs[1].PreQueueingHintFn != nil {
		t.Error("the wrapper added a hint function where the plugin has none")
	}

	// Every contained panic counted once, under its point (the hints
	// under their kind, not per event).
	for _, p := range points {
		if got, _ := panicCount(t, "Panicky", p); got != before[p]+1 {
			t.Errorf("plugin_panics_total{Panicky,%s} = %v after one panic there, want %v", p, got, before[p]+1)
		}
	}
	if _, ok := panicCount(t, "Panicky", "QueueingHint(Node/Add)"); ok {
		t.Error("a queueing hint's panic counted under a per-event extension_point")
	}

	out := logs.String()
	for _, want := range []string{
		`"Plugin panicked; the panic was contained and turned into an Error status" plugin="Panicky" extensionPoint="Filter"`,
		`pod="ns/bad"`,
		// The stack reaches into the panicking method.
		"plugins.panicky.Filter(",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%.3000s", want, out)
		}
	}
}

// panicCount reads placement_scheduler_plugin_panics_total{plugin, point}
// from the registry /metrics serves; ok is false when there is no such
// series.
func panicCount(t *testing.T, plugin, point string) (v float64, ok bool) {
	t.Helper()
	v, ok, err := testutil.CounterValue("placement_scheduler_plugin_panics_total", map[string]string{"plugin": plugin, "extension_point": point})
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// filterOnly lacks Sign and Explain: no wrapper has its shape.
type filterOnly struct{}

func (filterOnly) Name() string { return "FilterOnly" }
func (filterOnly) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

// withPostFilter has a scorer's shape plus PostFilter, which the wrapper
// would hide.
type withPostFilter struct{ panicky }

func (withPostFilter) PostFilter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return nil, nil
}

func TestContainRefusesShapesItWouldChange(t *testing.T) {
	for _, p := range []fwk.Plugin{filterOnly{}, withPostFilter{}} {
		if w, err := Contain(p); err == nil {
			t.Errorf("Contain(%s) = %T, want an error: the wrapper would change what the framework sees", p.Name(), w)
		} else if !strings.Contains(err.Error(), "pkg/plugins/containment.go") {
			t.Errorf("Contain(%s) error %q does not say where to add a wrapper", p.Name(), err)
		}
	}
}

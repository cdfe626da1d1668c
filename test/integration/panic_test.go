package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/schedulerapp"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// injectPanicLabel on a pod makes the faulty NodeAffinity below panic for
// it, at the extension point the label's value names.
const injectPanicLabel = "test.placement-scheduler/inject-panic"

// panickingNodeAffinity is our real NodeAffinity, except that it panics
// for pods carrying injectPanicLabel. It embeds the plugin, so it has exactly
// its interfaces, and it is wrapped like every plugin of ours: through
// plugins.RegistryOf, i.e. the same Contain the binary runs.
type panickingNodeAffinity struct{ *nodeaffinity.NodeAffinity }

func (p panickingNodeAffinity) Filter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if pod.Labels[injectPanicLabel] == "Filter" {
		panic(fmt.Sprintf("injected panic for pod %s", pod.Name))
	}
	return p.NodeAffinity.Filter(ctx, st, pod, ni)
}

func (p panickingNodeAffinity) Score(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	if pod.Labels[injectPanicLabel] == "Score" {
		var nilMap map[string]*int
		return int64(*nilMap["boom"]), nil // a nil dereference, as a real bug would
	}
	return p.NodeAffinity.Score(ctx, st, pod, ni)
}

// faultyOptions registers plugins.All() with NodeAffinity swapped for the
// panicking one, as app options.
func faultyOptions(t *testing.T) []app.Option {
	t.Helper()
	set := plugins.Set()
	swapped := false
	for i := range set {
		if set[i].Name != nodeaffinity.Name {
			continue
		}
		inner := set[i].New
		set[i].New = func(ctx context.Context, args runtime.Object, h fwk.Handle, fts plfeature.Features) (fwk.Plugin, error) {
			p, err := inner(ctx, args, h, fts)
			if err != nil {
				return nil, err
			}
			return panickingNodeAffinity{p.(*nodeaffinity.NodeAffinity)}, nil
		}
		swapped = true
	}
	if !swapped {
		t.Fatalf("%s is not in plugins.Set()", nodeaffinity.Name)
	}
	reg := plugins.RegistryOf(set)
	for name, f := range plugins.OptIn() {
		reg[name] = f
	}
	return schedulerapp.OptionsOf(reg)
}

// A panic inside one of our plugins, for one pod, does not take the
// scheduler down: kube-scheduler v1.37.2 recovers no plugin panic (Filter
// and Score run under workqueue.ParallelizeUntil, whose HandleCrash
// re-panics), so pkg/plugins.Contain does. The pod gets a FailedScheduling
// event naming the plugin; the pods around it are scheduled.
//
// The scheduler runs in-process (app.Setup + app.Run with the shipped
// profile, as the binary does) because the fault is injected through the
// registry, which keeps any fault hook out of the production binary.
func TestPluginPanicIsContained(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	schedulerName := "panic-containment-" + ns // ignored by the shared scheduler

	var doc map[string]any
	if err := yaml.Unmarshal(manifests.SchedulerConfig(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["leaderElection"] = map[string]any{"leaderElect": false}
	profiles := doc["profiles"].([]any)
	profiles[0].(map[string]any)["schedulerName"] = schedulerName
	raw, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := configOptions(t, raw)
	ctx, cancel := context.WithCancel(context.Background())
	cc, sched, err := app.Setup(ctx, opts, faultyOptions(t)...)
	if err != nil {
		cancel()
		t.Fatalf("app.Setup: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- app.Run(ctx, cc, sched) }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})

	// Two nodes only this test's pods select, so Filter runs (NodeAffinity
	// skips pods without node constraints) and Score has two to rank.
	sel := map[string]string{"panic-test": ns}
	a := framework.SchedulableNode(ns, "a").Labels(sel).Obj()
	b := framework.SchedulableNode(ns, "b").Labels(sel).Obj()
	env.CreateNodes(t, a, b)
	pod := func(name, panicAt string) *v1.Pod {
		w := testutil.MakePod(ns, name).SchedulerName(schedulerName).NodeSelector(sel)
		if panicAt != "" {
			w.Label(injectPanicLabel, panicAt)
		}
		if panicAt == "Score" {
			// NodeAffinity's PreScore skips pods without preferred terms.
			w.PreferredNodeTerm(10, testutil.Term(testutil.Expr("panic-test", v1.NodeSelectorOpIn, ns)))
		}
		return w.Obj()
	}
	// The faulty pods first: their cycles fail and are retried with backoff
	// while the healthy pods behind them are scheduled.
	env.CreatePod(t, pod("panics-in-filter", "Filter"))
	env.CreatePod(t, pod("panics-in-score", "Score"))
	const healthy = 6
	for i := range healthy {
		env.CreatePod(t, pod(fmt.Sprintf("healthy-%d", i), ""))
	}
	for i := range healthy {
		env.WaitForBound(t, ns, fmt.Sprintf("healthy-%d", i))
	}
	for _, c := range []struct{ pod, point, value string }{
		{"panics-in-filter", "Filter", "injected panic for pod panics-in-filter"},
		{"panics-in-score", "Score", "runtime error: invalid memory address or nil pointer dereference"},
	} {
		ev := env.WaitForEvent(t, ns, c.pod, "FailedScheduling", plugins.PanicMessage(nodeaffinity.Name, c.point, c.value))
		t.Logf("%s: FailedScheduling %q", c.pod, ev.Message)
	}
	// Still running, and the faulty pods are still unbound (retried, not
	// lost): nothing bound them by accident.
	select {
	case err := <-exited:
		t.Fatalf("the scheduler stopped: %v", err)
	default:
	}
	// Each contained panic is counted, by plugin and extension point, in
	// the registry the scheduler's /metrics serves (this process's: the
	// scheduler runs in it).
	for _, point := range []string{"Filter", "Score"} {
		if n := panicsCounted(t, nodeaffinity.Name, point); n < 1 {
			t.Errorf("placement_scheduler_plugin_panics_total{plugin=%q,extension_point=%q} = %v after a contained panic there, want >= 1", nodeaffinity.Name, point, n)
		}
	}
	for _, name := range []string{"panics-in-filter", "panics-in-score"} {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s although its plugin panicked in every cycle", name, p.Spec.NodeName)
		}
		if c := framework.PodCondition(p, v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || !strings.Contains(c.Message, nodeaffinity.Name) {
			t.Errorf("%s: PodScheduled condition %+v does not report the failing plugin", name, c)
		}
	}
}

// panicsCounted reads placement_scheduler_plugin_panics_total{plugin, point}
// from the registry /metrics serves (0 when there is no such series).
func panicsCounted(t *testing.T, plugin, point string) float64 {
	t.Helper()
	v, _, err := testutil.CounterValue("placement_scheduler_plugin_panics_total", map[string]string{"plugin": plugin, "extension_point": point})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

package placementdiagnosis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/placementdiagnosis"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// ours is the New of every row of pkg/plugins.Set(), as pkg/plugins.OptIn
// hands them to NewWith.
func ours() []placementdiagnosis.Factory {
	var out []placementdiagnosis.Factory
	for _, p := range plugins.Set() {
		out = append(out, p.New)
	}
	return out
}

// setup returns the plugin over a snapshot of nodes, its event recorder and
// its clock.
func setup(t *testing.T, args string, nodes ...*v1.Node) (*placementdiagnosis.PlacementDiagnosis, *events.FakeRecorder, *clocktesting.FakeClock) {
	t.Helper()
	ctx := context.Background()
	rec := events.NewFakeRecorder(10)
	h, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithEventRecorder(rec),
		frameworkruntime.WithSnapshotSharedLister(cache.NewSnapshot(nil, nodes)),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(fake.NewClientset(), 0)))
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var obj = tu.RawArgs(args)
	pl, err := placementdiagnosis.NewWithClock(ctx, obj, h, feature.Features{}, clk, ours()...)
	if err != nil {
		t.Fatal(err)
	}
	return pl, rec, clk
}

// statuses is a NodeToStatusReader as the scheduler builds it: each node's
// first failing filter, with the plugin set.
func statuses(byNode map[string]*fwk.Status) fwk.NodeToStatusReader {
	m := framework.NewDefaultNodeToStatus()
	for n, st := range byNode {
		m.Set(n, st)
	}
	return m
}

func rejected(plugin, reason string) *fwk.Status {
	st := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	st.SetPlugin(plugin)
	return st
}

func TestPostFilterRecordsOneCompactEventPerInterval(t *testing.T) {
	gpu := func(n string) *v1.Node {
		return tu.MakeNode(n).Taint("dedicated", "gpu", v1.TaintEffectNoSchedule).Obj()
	}
	nodes := []*v1.Node{gpu("gpu-1"), gpu("gpu-2"), gpu("gpu-3"), gpu("gpu-4"), tu.MakeNode("hdd").Label("disktype", "hdd").Obj(), tu.MakeNode("other").Obj()}
	pl, rec, clk := setup(t, `{"minInterval": "1m", "examples": 2}`, nodes...)
	pod := tu.MakePod("default", "p").UID("u1").NodeSelector(map[string]string{"disktype": "ssd"}).Obj()
	ctx, state := context.Background(), framework.NewCycleState()
	sts := statuses(map[string]*fwk.Status{
		"gpu-1": rejected(tainttoleration.Name, "node(s) had untolerated taint(s)"),
		"gpu-2": rejected(tainttoleration.Name, "node(s) had untolerated taint(s)"),
		"gpu-3": rejected(tainttoleration.Name, "node(s) had untolerated taint(s)"),
		"gpu-4": rejected(tainttoleration.Name, "node(s) had untolerated taint(s)"),
		"hdd":   rejected(nodeaffinity.Name, "node(s) didn't match Pod's node affinity/selector"),
		"other": rejected("NodeResourcesFit", "Insufficient cpu"),
	})

	res, st := pl.PostFilter(ctx, state, pod, sts)
	if res != nil || st.Code() != fwk.Unschedulable || len(st.Reasons()) != 0 {
		t.Fatalf("PostFilter = %v, %v; want nil, Unschedulable with no reasons (the FailedScheduling message must not change)", res, st)
	}
	want := "Warning PlacementDiagnosis 6 node(s), by deciding plugin: " +
		"PlacementTaintToleration: taint dedicated=gpu:NoSchedule is not tolerated (4 node(s), e.g. gpu-1, gpu-2); " +
		"NodeResourcesFit: Insufficient cpu (1 node(s), e.g. other); " +
		"PlacementNodeAffinity: nodeSelector disktype=ssd: node has disktype=hdd (1 node(s), e.g. hdd)"
	select {
	case got := <-rec.Events:
		if got != want {
			t.Errorf("event\n got: %s\nwant: %s", got, want)
		}
	default:
		t.Fatal("no event recorded")
	}

	// Retried within the interval: no second event; after it: one more.
	pl.PostFilter(ctx, state, pod, sts)
	if len(rec.Events) != 0 {
		t.Errorf("second event within minInterval: %s", <-rec.Events)
	}
	clk.Step(time.Minute)
	pl.PostFilter(ctx, state, pod, sts)
	if len(rec.Events) != 1 {
		t.Errorf("after minInterval: %d events, want 1", len(rec.Events))
	}
}

// The note stays within the events API's 1 kB however many causes there are.
func TestNoteIsBounded(t *testing.T) {
	var nodes []*v1.Node
	byNode := map[string]*fwk.Status{}
	for i := range 200 {
		n := tu.MakeNode(strings.Repeat("n", 20) + string(rune('a'+i%26)) + string(rune('a'+i/26))).Obj()
		nodes = append(nodes, n)
		byNode[n.Name] = rejected("SomePlugin", "reason "+n.Name)
	}
	pl, _, _ := setup(t, ``, nodes...)
	note, err := pl.Diagnose(context.Background(), framework.NewCycleState(), tu.MakePod("d", "p").Obj(), statuses(byNode))
	if err != nil {
		t.Fatal(err)
	}
	if len(note) > placementdiagnosis.MaxNote || !strings.Contains(note, "more") {
		t.Errorf("note of %d bytes (max %d), ends %q", len(note), placementdiagnosis.MaxNote, note[max(0, len(note)-40):])
	}
}

func TestBadArgs(t *testing.T) {
	for _, args := range []string{`{"minInterval": "-1s"}`, `{"examples": 11}`, `{"exampels": 1}`} {
		_, err := placementdiagnosis.NewWithClock(context.Background(), tu.RawArgs(args), nil, feature.Features{}, clocktesting.NewFakeClock(time.Time{}), ours()...)
		if err == nil {
			t.Errorf("args %s accepted", args)
		}
	}
}

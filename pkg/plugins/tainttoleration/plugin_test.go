package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// TaintToleration takes no args: none or empty ones start, any other is
// refused with the fix (upstream ignores them; whoever wrote them expects an
// effect).
func TestNewRefusesArgs(t *testing.T) {
	_, err := New(context.Background(), tu.RawArgs(`{"anything": 1, "tolerateAll": true}`), nil, gatesOff)
	if want := `this plugin takes no args: remove its pluginConfig entry (got fields: anything, tolerateAll)`; err == nil || err.Error() != want {
		t.Errorf("New with args: %v, want %q", err, want)
	}
	_, err = New(context.Background(), tu.RawArgs(`[1]`), nil, gatesOff)
	if want := `this plugin takes no args: remove its pluginConfig entry (got [1])`; err == nil || err.Error() != want {
		t.Errorf("New with a list: %v, want %q", err, want)
	}
	for name, args := range map[string]runtime.Object{
		"nil":   nil,
		"empty": tu.RawArgs(`{}`),
		"yaml":  &runtime.Unknown{Raw: []byte("{}\n"), ContentType: runtime.ContentTypeYAML},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := New(context.Background(), args, nil, gatesOff)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := p.Name(); got != "PlacementTaintToleration" {
				t.Errorf("Name() = %q", got)
			}
		})
	}
}

func TestPreFilter(t *testing.T) {
	plain := tu.MakePod("ns", "p").Obj()
	deferred := tu.MakePod("ns", "p").ResizeDeferred().Obj()
	infeasible := tu.MakePod("ns", "p").Condition(v1.PodResizePending, v1.ConditionTrue, v1.PodReasonInfeasible).Obj()
	tests := []struct {
		name     string
		fts      feature.Features
		pod      *v1.Pod
		wantSkip bool
	}{
		{name: "plain pod, gates off", fts: gatesOff, pod: plain},
		{name: "plain pod, resize gate on", fts: resizeGateOn, pod: plain},
		{name: "deferred resize, gate off", fts: gatesOff, pod: deferred},
		{name: "deferred resize, gate on", fts: resizeGateOn, pod: deferred, wantSkip: true},
		{name: "infeasible resize, gate on", fts: resizeGateOn, pod: infeasible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, tc.fts)
			state := framework.NewCycleState()
			res, st := pl.PreFilter(context.Background(), state, tc.pod, tu.NodeInfos(tu.MakeNode("n").Obj()))
			if res != nil {
				t.Errorf("PreFilterResult = %v, want nil", res)
			}
			want := fwk.Success
			if tc.wantSkip {
				want = fwk.Skip
			}
			tu.CheckStatus(t, "PreFilter", st, want, "")
			if pl.PreFilterExtensions() != nil {
				t.Error("PreFilterExtensions() must be nil")
			}
		})
	}
}

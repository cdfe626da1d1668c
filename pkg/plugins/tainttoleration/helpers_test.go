package tainttoleration

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// newPlugin builds the plugin through its public factory with the given gates.
func newPlugin(t testing.TB, fts feature.Features) *TaintToleration {
	t.Helper()
	return tu.NewPlugin[*TaintToleration](t, New, nil, fts)
}

var (
	gatesOff     = feature.Features{}
	comparisonOn = feature.Features{EnableTaintTolerationComparisonOperators: true}
	resizeGateOn = feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: true}
)

const (
	noSched = v1.TaintEffectNoSchedule
	noExec  = v1.TaintEffectNoExecute
	prefer  = v1.TaintEffectPreferNoSchedule
	equal   = v1.TolerationOpEqual
	exists  = v1.TolerationOpExists
	gt      = v1.TolerationOpGt
	lt      = v1.TolerationOpLt
)

func taint(k, v string, e v1.TaintEffect) v1.Taint { return v1.Taint{Key: k, Value: v, Effect: e} }

func nodeWith(taints ...v1.Taint) *v1.Node {
	n := tu.MakeNode("node-a")
	for _, t := range taints {
		n.Taint(t.Key, t.Value, t.Effect)
	}
	return n.Obj()
}

func podWith(tols ...v1.Toleration) *v1.Pod {
	p := tu.MakePod("ns", "pod")
	for _, t := range tols {
		p.Toleration(t)
	}
	return p.Obj()
}

// filterWant is Filter's expected verdict: success, or upstream's fixed
// rejection (which names no taint).
func filterWant(pass bool) (fwk.Code, string) {
	if pass {
		return fwk.Success, ""
	}
	return fwk.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)"
}

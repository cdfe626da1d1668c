package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		taints   []v1.Taint
		tols     []v1.Toleration
		wantPass bool
	}{
		{
			name:   "seed: key2 NoSchedule is not tolerated",
			taints: []v1.Taint{taint("key1", "value1", noSched), taint("key1", "value1", noExec), taint("key2", "value2", noSched)},
			tols:   []v1.Toleration{tu.Tol("key1", equal, "value1", noSched), tu.Tol("key1", equal, "value1", noExec)},
		},
		{
			name:     "seed plus a toleration for key2 passes",
			taints:   []v1.Taint{taint("key1", "value1", noSched), taint("key1", "value1", noExec), taint("key2", "value2", noSched)},
			tols:     []v1.Toleration{tu.Tol("key1", equal, "value1", noSched), tu.Tol("key1", equal, "value1", noExec), tu.Tol("key2", equal, "value2", noSched)},
			wantPass: true,
		},
		{name: "untainted node, no tolerations", wantPass: true},
		{name: "tainted node, no tolerations", taints: []v1.Taint{taint("a", "", noExec)}},
		{
			name:     "keyless Exists tolerates every key, value and effect",
			taints:   []v1.Taint{taint("a", "1", noSched), taint("b", "", noExec), taint("c", "x", prefer)},
			tols:     []v1.Toleration{tu.Tol("", exists, "", "")},
			wantPass: true,
		},
		{
			name:   "keyless Exists with an effect covers only that effect",
			taints: []v1.Taint{taint("a", "1", noSched), taint("b", "", noExec)},
			tols:   []v1.Toleration{tu.Tol("", exists, "", noSched)},
		},
		{
			name:     "key with Exists tolerates any value of that key",
			taints:   []v1.Taint{taint("gpu", "a100", noSched), taint("gpu", "", noExec), taint("gpu", "t4", noSched)},
			tols:     []v1.Toleration{tu.Tol("gpu", exists, "", "")},
			wantPass: true,
		},
		{
			name:   "key with Exists does not cover another key",
			taints: []v1.Taint{taint("gpu", "a100", noSched), taint("tpu", "v5", noSched)},
			tols:   []v1.Toleration{tu.Tol("gpu", exists, "", "")},
		},
		{
			name:     "Exists ignores a (invalid) value",
			taints:   []v1.Taint{taint("gpu", "a100", noSched)},
			tols:     []v1.Toleration{tu.Tol("gpu", exists, "other", noSched)},
			wantPass: true,
		},
		{
			name:     "empty effect matches NoSchedule and NoExecute",
			taints:   []v1.Taint{taint("k", "v", noSched), taint("k", "v", noExec)},
			tols:     []v1.Toleration{tu.Tol("k", equal, "v", "")},
			wantPass: true,
		},
		{
			name:   "effect mismatch is not tolerated",
			taints: []v1.Taint{taint("k", "v", noExec)},
			tols:   []v1.Toleration{tu.Tol("k", equal, "v", noSched)},
		},
		{
			name:   "PreferNoSchedule toleration does not cover NoSchedule",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", equal, "v", prefer)},
		},
		{
			name:     "empty operator means Equal: same value",
			taints:   []v1.Taint{taint("k", "v", noSched)},
			tols:     []v1.Toleration{tu.Tol("k", "", "v", noSched)},
			wantPass: true,
		},
		{
			name:   "empty operator means Equal: other value",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", "", "w", noSched)},
		},
		{
			name:   "Equal: other value",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", equal, "V", noSched)},
		},
		{
			name:   "Equal: empty toleration value vs non-empty taint value",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", equal, "", noSched)},
		},
		{
			name:   "Equal: other key",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("j", equal, "v", noSched)},
		},
		{
			name:     "all-empty toleration tolerates every empty-valued taint, any key and effect",
			taints:   []v1.Taint{taint("a", "", noSched), taint("b", "", noExec), taint("", "", noSched)},
			tols:     []v1.Toleration{{}},
			wantPass: true,
		},
		{
			name:   "all-empty toleration does not tolerate a valued taint",
			taints: []v1.Taint{taint("a", "", noSched), taint("b", "x", noExec)},
			tols:   []v1.Toleration{{}},
		},
		{
			name:     "keyless Equal with empty value acts like the all-empty toleration",
			taints:   []v1.Taint{taint("a", "", noSched)},
			tols:     []v1.Toleration{tu.Tol("", equal, "", noSched)},
			wantPass: true,
		},
		{
			name:     "PreferNoSchedule taints are ignored",
			taints:   []v1.Taint{taint("k", "v", prefer), taint("k", "v", prefer)},
			wantPass: true,
		},
		{
			name:     "empty-effect and unknown-effect taints are ignored",
			taints:   []v1.Taint{taint("k", "v", ""), taint("k", "v", "Bogus")},
			wantPass: true,
		},
		{
			name:   "unknown operator tolerates nothing",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", "In", "v", noSched)},
		},
		{
			name:   "operators are case-sensitive",
			taints: []v1.Taint{taint("k", "v", noSched)},
			tols:   []v1.Toleration{tu.Tol("k", "exists", "", noSched)},
		},
		{
			name:     "tolerationSeconds is irrelevant for scheduling",
			taints:   []v1.Taint{taint("k", "v", noExec)},
			tols:     []v1.Toleration{{Key: "k", Operator: equal, Value: "v", Effect: noExec, TolerationSeconds: new(int64)}},
			wantPass: true,
		},
		{
			name:     "each taint may be tolerated by a different toleration",
			taints:   []v1.Taint{taint("a", "1", noSched), taint("b", "2", noExec), taint("c", "", noSched)},
			tols:     []v1.Toleration{tu.Tol("c", exists, "", ""), tu.Tol("b", equal, "2", ""), tu.Tol("a", "", "1", noSched)},
			wantPass: true,
		},
		{
			name:   "comparison operator with the gate off tolerates nothing",
			taints: []v1.Taint{taint("limit", "10", noSched)},
			tols:   []v1.Toleration{tu.Tol("limit", gt, "5", noSched)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, gatesOff)
			st := pl.Filter(context.Background(), framework.NewCycleState(), podWith(tc.tols...), tu.NodeInfo(nodeWith(tc.taints...)))
			code, msg := filterWant(tc.wantPass)
			tu.CheckStatus(t, "Filter", st, code, msg)
		})
	}
}

// TestFilterComparisonOperators runs every case with the gate off (where Gt
// and Lt never tolerate) and on.
func TestFilterComparisonOperators(t *testing.T) {
	tests := []struct {
		name         string
		taint        v1.Taint
		tol          v1.Toleration
		passWhenGate bool
	}{
		{name: "Gt: taint above", taint: taint("limit", "10", noExec), tol: tu.Tol("limit", gt, "5", noExec), passWhenGate: true},
		{name: "Gt: taint equal", taint: taint("limit", "5", noExec), tol: tu.Tol("limit", gt, "5", noExec)},
		{name: "Gt: taint below", taint: taint("limit", "4", noExec), tol: tu.Tol("limit", gt, "5", noExec)},
		{name: "Lt: taint below", taint: taint("limit", "3", noSched), tol: tu.Tol("limit", lt, "5", noSched), passWhenGate: true},
		{name: "Lt: taint equal", taint: taint("limit", "5", noSched), tol: tu.Tol("limit", lt, "5", noSched)},
		{name: "Lt: taint above", taint: taint("limit", "7", noSched), tol: tu.Tol("limit", lt, "5", noSched)},
		{name: "negative values compare numerically", taint: taint("t", "-3", noSched), tol: tu.Tol("t", gt, "-5", noSched), passWhenGate: true},
		{name: "numeric, not lexical, order", taint: taint("t", "10", noSched), tol: tu.Tol("t", gt, "9", noSched), passWhenGate: true},
		{name: "zero is a valid integer", taint: taint("t", "0", noSched), tol: tu.Tol("t", lt, "1", noSched), passWhenGate: true},
		{name: "keyless Gt with empty effect", taint: taint("anything", "7", noSched), tol: tu.Tol("", gt, "6", ""), passWhenGate: true},
		{name: "Gt respects the key", taint: taint("other", "10", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "Gt respects the effect", taint: taint("limit", "10", noSched), tol: tu.Tol("limit", gt, "5", noExec)},
		{name: "non-integer taint value", taint: taint("limit", "ten", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "non-integer toleration value", taint: taint("limit", "10", noSched), tol: tu.Tol("limit", gt, "five", noSched)},
		{name: "decimal taint value", taint: taint("limit", "10.5", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "empty taint value", taint: taint("limit", "", noSched), tol: tu.Tol("limit", lt, "5", noSched)},
		{name: "leading zero in taint value", taint: taint("limit", "010", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "leading zero in toleration value", taint: taint("limit", "10", noSched), tol: tu.Tol("limit", gt, "05", noSched)},
		{name: "leading plus sign", taint: taint("limit", "+10", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "negative zero", taint: taint("limit", "-0", noSched), tol: tu.Tol("limit", lt, "5", noSched)},
		{name: "int64 overflow", taint: taint("limit", "99999999999999999999", noSched), tol: tu.Tol("limit", gt, "5", noSched)},
		{name: "Equal and Exists do not depend on the gate", taint: taint("limit", "10", noSched), tol: tu.Tol("limit", exists, "", noSched), passWhenGate: true},
	}
	for _, tc := range tests {
		for _, gate := range []bool{false, true} {
			name := tc.name + "/gate off"
			if gate {
				name = tc.name + "/gate on"
			}
			t.Run(name, func(t *testing.T) {
				pl := newPlugin(t, feature.Features{EnableTaintTolerationComparisonOperators: gate})
				st := pl.Filter(context.Background(), framework.NewCycleState(), podWith(tc.tol), tu.NodeInfo(nodeWith(tc.taint)))
				wantPass := tc.passWhenGate && (gate || (tc.tol.Operator != gt && tc.tol.Operator != lt))
				code, msg := filterWant(wantPass)
				tu.CheckStatus(t, "Filter", st, code, msg)
			})
		}
	}
}

func TestResizeDeferred(t *testing.T) {
	node := tu.NodeInfo(nodeWith(taint("k", "v", noSched)))
	deferred := tu.MakePod("ns", "p").ResizeDeferred().Obj()
	tests := []struct {
		name string
		fts  feature.Features
		pod  *v1.Pod
		pass bool
	}{
		// With the gate on the pod is already bound and taints do not apply.
		{name: "deferred, gate on", fts: resizeGateOn, pod: deferred, pass: true},
		{name: "deferred, gate off", fts: gatesOff, pod: deferred},
		{name: "not deferred, gate on", fts: resizeGateOn, pod: podWith()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newPlugin(t, tc.fts).Filter(context.Background(), framework.NewCycleState(), tc.pod, node)
			code, msg := filterWant(tc.pass)
			tu.CheckStatus(t, "Filter", st, code, msg)
		})
	}
}

// TestFilterLogsFirstUntoleratedTaint checks that the V(4) line names the
// first untolerated NoSchedule/NoExecute taint in node order, skipping
// tolerated and PreferNoSchedule ones.
func TestFilterLogsFirstUntoleratedTaint(t *testing.T) {
	for _, tc := range []struct {
		verbosity int
		wantLog   bool
	}{{4, true}, {3, false}} {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(tc.verbosity), ktesting.BufferLogs(true)))
		ctx := klog.NewContext(context.Background(), logger)
		node := nodeWith(taint("ok", "1", noSched), taint("p", "x", prefer), taint("bad1", "2", noExec), taint("bad2", "3", noSched))
		st := newPlugin(t, gatesOff).Filter(ctx, framework.NewCycleState(), podWith(tu.Tol("ok", equal, "1", noSched)), tu.NodeInfo(node))
		code, msg := filterWant(false)
		tu.CheckStatus(t, "Filter", st, code, msg)

		var found []any
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message != "node had untolerated taints" {
				continue
			}
			if e.Verbosity != 4 {
				t.Errorf("logged at V(%d), want V(4)", e.Verbosity)
			}
			kv := e.ParameterKVList
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == "untoleratedTaint" {
					found = append(found, kv[i+1])
				}
			}
		}
		if !tc.wantLog {
			if len(found) != 0 {
				t.Errorf("verbosity %d: unexpected log %v", tc.verbosity, found)
			}
			continue
		}
		if len(found) != 1 || !isTaint(found[0], taint("bad1", "2", noExec)) {
			t.Errorf("verbosity %d: logged untoleratedTaint %v, want exactly bad1=2:NoExecute", tc.verbosity, found)
		}
	}
}

// isTaint reports whether a logged value is the taint want (it is logged by
// pointer).
func isTaint(logged any, want v1.Taint) bool {
	got, ok := logged.(*v1.Taint)
	return ok && *got == want
}

// TestFilterDoesNotAllocateOnSuccess pins the reason for walking the taints
// in place: a feasible node costs no allocation.
func TestFilterDoesNotAllocateOnSuccess(t *testing.T) {
	pl := newPlugin(t, gatesOff)
	ctx := context.Background()
	state := framework.NewCycleState()
	pod := podWith(tu.Tol("a", exists, "", ""), tu.Tol("b", equal, "2", noExec))
	ni := tu.NodeInfo(nodeWith(taint("a", "1", noSched), taint("p", "", prefer), taint("b", "2", noExec), taint("a", "3", noExec)))
	allocs := testing.AllocsPerRun(100, func() {
		if st := pl.Filter(ctx, state, pod, ni); st != nil {
			t.Fatalf("Filter = %v", st)
		}
	})
	if allocs != 0 {
		t.Errorf("Filter allocated %v times per call, want 0", allocs)
	}
}

package nodeaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestScoring(t *testing.T) {
	term := tu.Term
	expr := tu.Expr
	// Three nodes; scores are reported in this order.
	nodes := []*v1.Node{
		tu.MakeNode("a").Label("zone", "a").Label("disk", "ssd").Label("cpus", "8").Obj(),
		tu.MakeNode("b").Label("zone", "b").Label("disk", "ssd").Label("cpus", "2").Obj(),
		tu.MakeNode("c").Label("zone", "c").Obj(),
	}
	pod := func() *tu.PodWrapper { return tu.MakePod("ns", "p") }
	const gtX = `[0].matchExpressions[0].values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`

	tests := []struct {
		name  string
		pod   *v1.Pod
		added *v1.NodeAffinity
		// PreScore status.
		code fwk.Code
		msg  string
		// Raw and normalized scores for nodes a, b, c (only checked when
		// PreScore succeeds).
		raw, normalized []int64
	}{
		// --- Skip rules ---
		{name: "no affinity skips", pod: pod().Obj(), code: fwk.Skip},
		{name: "required-only affinity skips", pod: pod().RequiredNodeTerms(term(expr("zone", in, "a"))).Obj(), code: fwk.Skip},
		{name: "added required-only affinity still skips", pod: pod().Obj(), added: requiredAdded(term(expr("zone", in, "a"))), code: fwk.Skip},
		{name: "added preferred [] still skips", pod: pod().Obj(), added: preferredAdded(), code: fwk.Skip},
		{
			name: "empty non-nil preferred list does not skip, scores 0",
			pod:  pod().NodeAffinity(&v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{}}).Obj(),
			code: success, raw: []int64{0, 0, 0}, normalized: []int64{0, 0, 0},
		},
		{
			name: "only weight-0 pod terms: no skip, scores 0",
			pod:  pod().PreferredNodeTerm(0, term(expr("zone", in, "a"))).Obj(),
			code: success, raw: []int64{0, 0, 0}, normalized: []int64{0, 0, 0},
		},
		{
			name:  "added preferred with only weight-0 terms disables skip, scores 0",
			pod:   pod().Obj(),
			added: preferredAdded(pref(0, term(expr("zone", in, "a")))),
			code:  success, raw: []int64{0, 0, 0}, normalized: []int64{0, 0, 0},
		},
		// --- parse errors ---
		{name: "non-integer Gt in a preferred term is an Error", pod: pod().PreferredNodeTerm(5, term(expr("cpus", gt, "x"))).Obj(), code: fwk.Error, msg: gtX},
		{
			name: "error path carries the term index",
			pod: pod().PreferredNodeTerm(5, term(expr("zone", in, "a"))).
				PreferredNodeTerm(5, term(expr("zone", in, "a"), expr("cpus", lt, "1.5"))).Obj(),
			code: fwk.Error,
			msg:  `[1].matchExpressions[1].values[0]: Invalid value: "1.5": for 'Gt', 'Lt' operators, the value must be an integer`,
		},
		{
			name: "several bad terms are aggregated",
			pod: pod().PreferredNodeTerm(5, term(expr("cpus", gt, "x"))).
				PreferredNodeTerm(5, tu.FieldTerm(expr(nameField, in, "a", "b"))).Obj(),
			code: fwk.Error,
			msg:  `[` + gtX + `, [1].matchFields[0].values: Invalid value: ["a","b"]: must have one element]`,
		},
		{
			name: "negative Gt value in a preferred term is an Error",
			pod:  pod().PreferredNodeTerm(5, term(expr("cpus", gt, "-5"))).Obj(),
			code: fwk.Error,
			msg:  `[0].matchExpressions[0].values[0][cpus]: Invalid value: "-5": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
		{
			name: "weight-0 terms are dropped before parsing",
			pod: pod().PreferredNodeTerm(0, term(expr("cpus", gt, "x"))).
				PreferredNodeTerm(7, term(expr("zone", in, "b"))).Obj(),
			code: success, raw: []int64{0, 7, 0}, normalized: []int64{0, 100, 0},
		},
		{
			name: "empty preferences are dropped",
			pod:  pod().PreferredNodeTerm(9, v1.NodeSelectorTerm{}).PreferredNodeTerm(3, term(expr("zone", in, "c"))).Obj(),
			code: success, raw: []int64{0, 0, 3}, normalized: []int64{0, 0, 100},
		},
		// --- sums ---
		{
			name: "weights of matching terms add up",
			pod: pod().PreferredNodeTerm(10, term(expr("disk", in, "ssd"))).
				PreferredNodeTerm(3, term(expr("zone", in, "b"))).
				PreferredNodeTerm(50, term(expr("disk", doesNotExist))).Obj(),
			code: success, raw: []int64{10, 13, 50}, normalized: []int64{20, 26, 100},
		},
		{
			name: "normalization truncates: {10, 3, 0} -> {100, 30, 0}",
			pod: pod().PreferredNodeTerm(7, term(expr("zone", in, "a"))).
				PreferredNodeTerm(3, term(expr("disk", exists))).Obj(),
			code: success, raw: []int64{10, 3, 0}, normalized: []int64{100, 30, 0},
		},
		{
			name: "Gt/Lt and matchFields in preferred terms",
			pod: pod().PreferredNodeTerm(4, term(expr("cpus", gt, "4"))).
				PreferredNodeTerm(2, term(expr("cpus", lt, "4"))).
				PreferredNodeTerm(1, tu.FieldTerm(expr(nameField, in, "c"))).Obj(),
			code: success, raw: []int64{4, 2, 1}, normalized: []int64{100, 50, 25},
		},
		{
			name:  "added preferred weights are added to the pod's",
			pod:   pod().PreferredNodeTerm(10, term(expr("zone", in, "b"))).Obj(),
			added: preferredAdded(pref(5, term(expr("disk", in, "ssd")))),
			code:  success, raw: []int64{5, 15, 0}, normalized: []int64{33, 100, 0},
		},
		{
			name:  "added preferred alone scores",
			pod:   pod().Obj(),
			added: preferredAdded(pref(20, term(expr("zone", in, "c")))),
			code:  success, raw: []int64{0, 0, 20}, normalized: []int64{0, 0, 100},
		},
		{
			name:  "negative added weight: a positive maximum scales the negatives",
			pod:   pod().PreferredNodeTerm(10, term(expr("zone", in, "c"))).Obj(),
			added: preferredAdded(pref(-5, term(expr("disk", in, "ssd")))),
			code:  success, raw: []int64{-5, -5, 10}, normalized: []int64{-50, -50, 100},
		},
		{
			name:  "negative added weight: no positive score leaves them as they are",
			pod:   pod().Obj(),
			added: preferredAdded(pref(-5, term(expr("disk", in, "ssd")))),
			code:  success, raw: []int64{-5, -5, 0}, normalized: []int64{-5, -5, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newPlugin(t, tc.added, feature.Features{})
			infos := tu.NodeInfos(nodes...)
			state := framework.NewCycleState()
			tu.CheckStatus(t, "PreScore", pl.PreScore(ctx, state, tc.pod, infos), tc.code, tc.msg)
			if tc.code != success {
				if _, err := state.Read("PreScoreNodeAffinity"); err == nil {
					t.Error("PreScore wrote state although it did not succeed")
				}
				// With PreScore disabled, Score parses on its own and
				// reports the same error.
				if tc.code == fwk.Error {
					_, st := pl.Score(ctx, framework.NewCycleState(), tc.pod, infos[0])
					tu.CheckStatus(t, "Score without PreScore state", st, tc.code, tc.msg)
				}
				return
			}

			for _, withState := range []bool{true, false} {
				cs := fwk.CycleState(state)
				if !withState {
					cs = framework.NewCycleState()
				}
				scores := make(fwk.NodeScoreList, len(infos))
				for i, ni := range infos {
					s, st := pl.Score(ctx, cs, tc.pod, ni)
					tu.CheckStatus(t, "Score", st, success, "")
					scores[i] = fwk.NodeScore{Name: ni.Node().Name, Score: s}
				}
				if diff := cmp.Diff(tc.raw, scoreValues(scores)); diff != "" {
					t.Errorf("raw scores (PreScore state: %v) (-want +got):\n%s", withState, diff)
				}
				tu.CheckStatus(t, "NormalizeScore", pl.ScoreExtensions().NormalizeScore(ctx, cs, tc.pod, scores), success, "")
				if diff := cmp.Diff(tc.normalized, scoreValues(scores)); diff != "" {
					t.Errorf("normalized scores (PreScore state: %v) (-want +got):\n%s", withState, diff)
				}
			}
		})
	}
}

func TestNormalizeScore(t *testing.T) {
	tests := []struct {
		in, want []int64
	}{
		{in: []int64{10, 3, 0}, want: []int64{100, 30, 0}},
		{in: []int64{3, 1, 2}, want: []int64{100, 33, 66}},
		{in: []int64{0, 0}, want: []int64{0, 0}},
		{in: []int64{7}, want: []int64{100}},
		{in: []int64{200, 1}, want: []int64{100, 0}},
		{in: []int64{-3, -1}, want: []int64{-3, -1}},
		{in: []int64{}, want: []int64{}},
	}
	pl := newPlugin(t, nil, feature.Features{})
	for _, tc := range tests {
		scores := make(fwk.NodeScoreList, len(tc.in))
		for i, s := range tc.in {
			scores[i] = fwk.NodeScore{Name: string(rune('a' + i)), Score: s}
		}
		tu.CheckStatus(t, "NormalizeScore", pl.NormalizeScore(context.Background(), framework.NewCycleState(), nil, scores), success, "")
		if diff := cmp.Diff(tc.want, scoreValues(scores)); diff != "" {
			t.Errorf("NormalizeScore(%v) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func scoreValues(l fwk.NodeScoreList) []int64 {
	out := make([]int64, len(l))
	for i := range l {
		out[i] = l[i].Score
	}
	return out
}

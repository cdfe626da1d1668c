package interpodaffinity

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestScoring(t *testing.T) {
	namespaces := []*v1.Namespace{
		tu.MakeNamespace("a", nil),
		tu.MakeNamespace("b", map[string]string{"team": "x"}),
		tu.MakeNamespace("prod", map[string]string{"env": "prod"}),
	}
	tests := []struct {
		name     string
		args     runtime.Object
		pod      *v1.Pod
		existing []*v1.Pod
		extra    []*v1.Node
		feasible []string
		want     scoreResult
	}{
		{
			name:     "no terms on either side: Skip",
			pod:      incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "web", "n1").Label("app", "web").Obj()},
			want:     scoreResult{preScore: skip},
		},
		{
			name: "incoming preferred affinity, summed over topology keys",
			pod: incoming("default").PreferredPodAffinity(
				tu.Weighted(10, tu.AffinityTerm(zone, sel("app", "db"))),
				tu.Weighted(3, tu.AffinityTerm(rack, sel("app", "cache")))).Obj(),
			existing: []*v1.Pod{
				placed("default", "db", "n1").Label("app", "db").Obj(),
				placed("default", "cache", "n3").Label("app", "cache").Obj(),
			},
			want: scoreResult{raw: scores(13, 10, 3, 0), normalized: scores(100, 76, 23, 0)},
		},
		{
			name: "incoming preferred affinity counts every matching pod",
			pod:  incoming("default").PreferredPodAffinity(tu.Weighted(2, tu.AffinityTerm(zone, sel("app", "db")))).Obj(),
			existing: []*v1.Pod{
				placed("default", "db1", "n1").Label("app", "db").Obj(),
				placed("default", "db2", "n2").Label("app", "db").Obj(),
				placed("default", "db3", "n3").Label("app", "db").Obj(),
			},
			want: scoreResult{raw: scores(4, 4, 2, 0), normalized: scores(100, 100, 50, 0)},
		},
		{
			name:     "incoming preferred anti-affinity scores negative",
			pod:      incoming("default").PreferredPodAntiAffinity(tu.Weighted(5, tu.AffinityTerm(zone, sel("app", "web")))).Obj(),
			existing: []*v1.Pod{placed("default", "web", "n1").Label("app", "web").Obj()},
			want:     scoreResult{raw: scores(-5, -5, 0, 0), normalized: scores(0, 0, 100, 100)},
		},
		{
			name: "incoming preferred terms: nil selector matches nothing, so nothing to score",
			pod:  incoming("default").PreferredPodAffinity(tu.Weighted(5, tu.AffinityTerm(zone, nil))).Obj(),
			existing: []*v1.Pod{
				placed("default", "web", "n1").Label("app", "web").Obj(),
			},
			want: scoreResult{preScore: skip},
		},
		{
			name: "incoming preferred terms: namespaceSelector expanded through the lister",
			pod: incoming("a").PreferredPodAffinity(tu.Weighted(10,
				tu.WithNamespaceSelector(tu.AffinityTerm(zone, sel("app", "db")), sel("team", "x")))).Obj(),
			existing: []*v1.Pod{
				placed("b", "db", "n3").Label("app", "db").Obj(),
				placed("a", "db", "n1").Label("app", "db").Obj(),
			},
			want: scoreResult{raw: scores(0, 0, 10, 0), normalized: scores(0, 0, 100, 0)},
		},
		{
			name: "existing pod's required affinity scores hardPodAffinityWeight (default 1)",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "needy", "n3").
				RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			want: scoreResult{raw: scores(0, 0, 1, 0), normalized: scores(0, 0, 100, 0)},
		},
		{
			name: "hardPodAffinityWeight from args",
			args: tu.RawArgs(`{"hardPodAffinityWeight": 7}`),
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{
				placed("default", "needy", "n3").RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj(),
				placed("default", "needy2", "n2").RequiredPodAffinity(tu.AffinityTerm(rack, sel("app", "web"))).Obj(),
			},
			want: scoreResult{raw: scores(0, 7, 7, 0), normalized: scores(0, 100, 100, 0)},
		},
		{
			name: "existing pods' required anti-affinity only filters: Skip",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{
				placed("default", "loner", "n1").Label("app", "web").
					RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj(),
				placed("default", "db", "n2").Label("app", "db").Obj(),
			},
			want: scoreResult{preScore: skip},
		},
		{
			name: "existing pods' preferred terms score an incoming pod without terms of its own",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{
				placed("default", "loner", "n1").RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj(),
				placed("default", "friend", "n3").PreferredPodAffinity(tu.Weighted(4, tu.AffinityTerm(zone, sel("app", "web")))).Obj(),
			},
			want: scoreResult{raw: scores(0, 0, 4, 0), normalized: scores(0, 0, 100, 0)},
		},
		{
			name: "hardPodAffinityWeight 0 disables the symmetric score",
			args: tu.RawArgs(`{"hardPodAffinityWeight": 0}`),
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "needy", "n3").
				RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			want: scoreResult{preScore: skip},
		},
		{
			name: "existing pod's required affinity is matched against the incoming pod's namespace labels",
			pod:  incoming("prod").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("a", "needy", "n1").RequiredPodAffinity(
				tu.WithNamespaceSelector(tu.AffinityTerm(rack, sel("app", "web")), sel("env", "prod"))).Obj()},
			want: scoreResult{raw: scores(1, 0, 1, 0), normalized: scores(100, 0, 100, 0)},
		},
		{
			name: "existing pod's preferred affinity and anti-affinity",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "picky", "n1").
				PreferredPodAffinity(tu.Weighted(4, tu.AffinityTerm(zone, sel("app", "web")))).
				PreferredPodAntiAffinity(tu.Weighted(2, tu.AffinityTerm(rack, sel("app", "web")))).Obj()},
			want: scoreResult{raw: scores(2, 4, -2, 0), normalized: scores(66, 100, 0, 33)},
		},
		{
			name: "existing pod's required anti-affinity never scores",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "guard", "n1").
				RequiredPodAntiAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			want: scoreResult{preScore: skip},
		},
		{
			name: "existing pod with a bad preferred term loses only that category",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "picky", "n1").
				PreferredPodAffinity(
					tu.Weighted(4, tu.AffinityTerm(zone, sel("app", "web"))),
					tu.Weighted(4, tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus"))))).
				RequiredPodAffinity(tu.AffinityTerm(rack, sel("app", "web"))).Obj()},
			want: scoreResult{raw: scores(1, 0, 1, 0), normalized: scores(100, 0, 100, 0)},
		},
		{
			name: "ignorePreferredTermsOfExistingPods: Skip when the pod has no preferred terms",
			args: tu.RawArgs(`{"ignorePreferredTermsOfExistingPods": true}`),
			pod:  incoming("default").Label("app", "web").RequiredPodAffinity(tu.AffinityTerm(zone, everything)).Obj(),
			existing: []*v1.Pod{placed("default", "needy", "n3").
				RequiredPodAffinity(tu.AffinityTerm(zone, sel("app", "web"))).Obj()},
			want: scoreResult{preScore: skip},
		},
		{
			name: "ignorePreferredTermsOfExistingPods: existing pods' terms still count when the pod has preferred terms",
			args: tu.RawArgs(`{"ignorePreferredTermsOfExistingPods": true}`),
			pod: incoming("default").Label("app", "web").
				PreferredPodAffinity(tu.Weighted(1, tu.AffinityTerm(zone, sel("app", "nobody")))).Obj(),
			existing: []*v1.Pod{
				placed("default", "picky", "n3").PreferredPodAffinity(tu.Weighted(4, tu.AffinityTerm(zone, sel("app", "web")))).Obj(),
				placed("default", "needy", "n2").RequiredPodAffinity(tu.AffinityTerm(rack, sel("app", "web"))).Obj(),
			},
			want: scoreResult{raw: scores(0, 1, 4, 0), normalized: scores(0, 25, 100, 0)},
		},
		{
			name:     "pods on every snapshot node count, not only on the nodes being scored",
			pod:      incoming("default").PreferredPodAffinity(tu.Weighted(10, tu.AffinityTerm(zone, sel("app", "db")))).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n2").Label("app", "db").Obj()},
			feasible: []string{"n1", "n3"},
			want: scoreResult{
				raw:        map[string]int64{"n1": 10, "n3": 0},
				normalized: map[string]int64{"n1": 100, "n3": 0},
			},
		},
		{
			name: "without preferred terms, pods with terms on unscored nodes count too",
			pod:  incoming("default").Label("app", "web").Obj(),
			existing: []*v1.Pod{placed("default", "picky", "n2").
				PreferredPodAffinity(tu.Weighted(3, tu.AffinityTerm(zone, sel("app", "web")))).Obj()},
			feasible: []string{"n1", "n3"},
			want: scoreResult{
				raw:        map[string]int64{"n1": 3, "n3": 0},
				normalized: map[string]int64{"n1": 100, "n3": 0},
			},
		},
		{
			name:     "a node without labels contributes nothing",
			pod:      incoming("default").PreferredPodAffinity(tu.Weighted(10, tu.AffinityTerm(zone, everything))).Obj(),
			existing: []*v1.Pod{placed("default", "x", "bare").Obj()},
			extra:    []*v1.Node{tu.MakeNode("bare").NoLabels().Obj()},
			feasible: []string{"n1", "n3"},
			want:     scoreResult{preScore: skip},
		},
		{
			name: "weights that cancel out still score, and equal raw scores normalize to 0",
			pod: incoming("default").
				PreferredPodAffinity(tu.Weighted(5, tu.AffinityTerm(zone, sel("app", "web")))).
				PreferredPodAntiAffinity(tu.Weighted(5, tu.AffinityTerm(zone, sel("app", "web")))).Obj(),
			existing: []*v1.Pod{placed("default", "web", "n1").Label("app", "web").Obj()},
			want:     scoreResult{raw: scores(0, 0, 0, 0), normalized: scores(0, 0, 0, 0)},
		},
		{
			name:     "equal positive raw scores normalize to 0, not 100",
			pod:      incoming("default").PreferredPodAffinity(tu.Weighted(10, tu.AffinityTerm(zone, sel("app", "db")))).Obj(),
			existing: []*v1.Pod{placed("default", "db", "n1").Label("app", "db").Obj()},
			feasible: []string{"n1", "n2"},
			want: scoreResult{
				raw:        map[string]int64{"n1": 10, "n2": 10},
				normalized: map[string]int64{"n1": 0, "n2": 0},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := append(fixtureNodes(), tc.extra...)
			e := newEnv(t, tc.args, feature.Features{}, tc.existing, nodes, namespaces...)
			got := e.score(t, tc.pod, tc.feasible...)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(scoreResult{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeScore(t *testing.T) {
	tests := []struct {
		raw, want []int64
	}{
		{raw: []int64{10, -5, 10, 0}, want: []int64{100, 0, 100, 33}},
		{raw: []int64{0, 0, 0, -5}, want: []int64{100, 100, 100, 0}},
		{raw: []int64{7, 7, 7}, want: []int64{0, 0, 0}},
		{raw: []int64{-3}, want: []int64{0}},
		// 100*(29/100) is 28.999…, truncated: the evaluation order matters.
		{raw: []int64{0, 29, 100}, want: []int64{0, 28, 100}},
		{raw: []int64{0, 1, 3}, want: []int64{0, 33, 100}},
		{raw: []int64{}, want: []int64{}},
		// The range overflows int64 and wraps negative: no spread, all 0.
		{raw: []int64{math.MinInt64, 5, math.MaxInt64}, want: []int64{0, 0, 0}},
		{raw: []int64{math.MinInt64, 0}, want: []int64{0, 0}},
	}
	e := newEnv(t, nil, feature.Features{}, nil, nil)
	for _, tc := range tests {
		cs := framework.NewCycleState()
		// One scored key, whatever its weights: NormalizeScore reads the
		// scores alone.
		cs.Write(preScoreStateKey, oneScoredKey(zone))
		list := make(fwk.NodeScoreList, len(tc.raw))
		for i, s := range tc.raw {
			list[i] = fwk.NodeScore{Name: string(rune('a' + i)), Score: s}
		}
		if !tu.CheckStatus(t, fmt.Sprintf("%v", tc.raw), e.pl.NormalizeScore(e.ctx, cs, nil, list), fwk.Success, "") {
			t.FailNow()
		}
		got := make([]int64, len(list))
		for i := range list {
			got[i] = list[i].Score
		}
		if !cmp.Equal(tc.want, got) {
			t.Errorf("NormalizeScore(%v) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}

func TestScoreErrors(t *testing.T) {
	e := newEnv(t, nil, feature.Features{}, nil, fixtureNodes())
	pod := incoming("default").Obj()
	const missing = `failed to read "PreScoreInterPodAffinity" from cycleState: not found`
	cs := framework.NewCycleState()
	_, st := e.pl.Score(e.ctx, cs, pod, e.nodeInfo(t, "n1"))
	tu.CheckStatus(t, "Score", st, fwk.Error, missing)
	tu.CheckStatus(t, "NormalizeScore", e.pl.NormalizeScore(e.ctx, cs, pod, fwk.NodeScoreList{{Name: "n1"}}), fwk.Error, missing)

	wrongType := framework.NewCycleState()
	wrongType.Write(preScoreStateKey, foreignState{})
	const foreign = `cycle state "PreScoreInterPodAffinity" holds interpodaffinity.foreignState, not *interpodaffinity.preScoreState: is another plugin writing the same key?`
	_, st = e.pl.Score(e.ctx, wrongType, pod, e.nodeInfo(t, "n1"))
	tu.CheckStatus(t, "Score with a foreign state", st, fwk.Error, foreign)

	bad := incoming("default").PreferredPodAffinity(tu.Weighted(1,
		tu.AffinityTerm(zone, tu.Selector(nil, tu.SelectorExpr("app", "Bogus"))))).Obj()
	tu.CheckStatus(t, "PreScore", e.pl.PreScore(e.ctx, framework.NewCycleState(), bad, nil), fwk.Error,
		`failed to parse pod: preferredAffinityTerms: "Bogus" is not a valid label selector operator`)
}

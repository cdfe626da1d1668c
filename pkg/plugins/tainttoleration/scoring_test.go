package tainttoleration

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

func TestScore(t *testing.T) {
	tests := []struct {
		name           string
		fts            feature.Features
		tols           []v1.Toleration
		nodes          [][]v1.Taint // one taint list per node
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:           "no PreferNoSchedule taints anywhere: every node gets 100",
			nodes:          [][]v1.Taint{nil, {taint("k", "v", noSched)}, {taint("k", "v", noExec), taint("j", "", "")}},
			wantRaw:        []int64{0, 0, 0},
			wantNormalized: []int64{100, 100, 100},
		},
		{
			name: "counts {0,1,3} normalize to {100,67,0}",
			nodes: [][]v1.Taint{
				nil,
				{taint("a", "1", prefer)},
				{taint("a", "1", prefer), taint("b", "2", prefer), taint("c", "", prefer)},
			},
			wantRaw:        []int64{0, 1, 3},
			wantNormalized: []int64{100, 67, 0},
		},
		{
			name:           "duplicate taints count separately",
			nodes:          [][]v1.Taint{{taint("a", "1", prefer), taint("a", "1", prefer)}, {taint("a", "1", prefer)}},
			wantRaw:        []int64{2, 1},
			wantNormalized: []int64{0, 50},
		},
		{
			name:           "only PreferNoSchedule taints are counted",
			nodes:          [][]v1.Taint{{taint("a", "1", noSched), taint("b", "1", noExec), taint("c", "1", ""), taint("d", "1", prefer)}},
			wantRaw:        []int64{1},
			wantNormalized: []int64{0},
		},
		{
			name: "PreferNoSchedule and empty-effect tolerations are used",
			tols: []v1.Toleration{tu.Tol("a", equal, "1", prefer), tu.Tol("b", exists, "", "")},
			nodes: [][]v1.Taint{
				{taint("a", "1", prefer), taint("b", "anything", prefer)},
				{taint("a", "2", prefer), taint("b", "x", prefer), taint("c", "", prefer)},
			},
			wantRaw:        []int64{0, 2},
			wantNormalized: []int64{100, 0},
		},
		{
			name:           "NoSchedule/NoExecute tolerations do not cover PreferNoSchedule",
			tols:           []v1.Toleration{tu.Tol("a", equal, "1", noSched), tu.Tol("", exists, "", noExec)},
			nodes:          [][]v1.Taint{{taint("a", "1", prefer)}, nil},
			wantRaw:        []int64{1, 0},
			wantNormalized: []int64{0, 100},
		},
		{
			name:           "all-empty toleration covers empty-valued PreferNoSchedule taints",
			tols:           []v1.Toleration{{}},
			nodes:          [][]v1.Taint{{taint("a", "", prefer), taint("b", "v", prefer)}},
			wantRaw:        []int64{1},
			wantNormalized: []int64{0},
		},
		{
			name:           "Gt with the gate off tolerates nothing",
			tols:           []v1.Toleration{tu.Tol("level", gt, "3", prefer)},
			nodes:          [][]v1.Taint{{taint("level", "4", prefer)}, {taint("level", "2", prefer)}, nil},
			wantRaw:        []int64{1, 1, 0},
			wantNormalized: []int64{0, 0, 100},
		},
		{
			name:           "Gt with the gate on",
			fts:            comparisonOn,
			tols:           []v1.Toleration{tu.Tol("level", gt, "3", prefer)},
			nodes:          [][]v1.Taint{{taint("level", "4", prefer)}, {taint("level", "2", prefer)}, {taint("level", "04", prefer)}},
			wantRaw:        []int64{0, 1, 1},
			wantNormalized: []int64{100, 0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newPlugin(t, tc.fts)
			pod := podWith(tc.tols...)
			var nodeInfos []fwk.NodeInfo
			for i, taints := range tc.nodes {
				n := tu.MakeNode(string(rune('a'+i)) + "-node")
				for _, tt := range taints {
					n.Taint(tt.Key, tt.Value, tt.Effect)
				}
				nodeInfos = append(nodeInfos, tu.NodeInfo(n.Obj()))
			}
			state := framework.NewCycleState()
			if !tu.CheckStatus(t, "PreScore", pl.PreScore(ctx, state, pod, nodeInfos), fwk.Success, "") {
				t.FailNow()
			}
			var raw []int64
			scores := make(fwk.NodeScoreList, 0, len(nodeInfos))
			for _, ni := range nodeInfos {
				s, st := pl.Score(ctx, state, pod, ni)
				if !tu.CheckStatus(t, "Score("+ni.Node().Name+")", st, fwk.Success, "") {
					t.FailNow()
				}
				raw = append(raw, s)
				scores = append(scores, fwk.NodeScore{Name: ni.Node().Name, Score: s})
			}
			if diff := cmp.Diff(tc.wantRaw, raw); diff != "" {
				t.Errorf("raw scores (-want +got):\n%s", diff)
			}
			if !tu.CheckStatus(t, "NormalizeScore", pl.ScoreExtensions().NormalizeScore(ctx, state, pod, scores), fwk.Success, "") {
				t.FailNow()
			}
			var norm []int64
			for _, s := range scores {
				norm = append(norm, s.Score)
			}
			if diff := cmp.Diff(tc.wantNormalized, norm); diff != "" {
				t.Errorf("normalized scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeScore(t *testing.T) {
	tests := []struct {
		name      string
		raw, want []int64
	}{
		{name: "empty list", raw: []int64{}, want: []int64{}},
		{name: "all zero", raw: []int64{0, 0, 0}, want: []int64{100, 100, 100}},
		{name: "0,1,3", raw: []int64{0, 1, 3}, want: []int64{100, 67, 0}},
		{name: "all equal and positive", raw: []int64{2, 2}, want: []int64{0, 0}},
		{name: "integer division truncates before reversing", raw: []int64{1, 2, 3}, want: []int64{67, 34, 0}},
		{name: "single node with taints", raw: []int64{5}, want: []int64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scores := make(fwk.NodeScoreList, len(tc.raw))
			for i, s := range tc.raw {
				scores[i] = fwk.NodeScore{Name: string(rune('a' + i)), Score: s}
			}
			if !tu.CheckStatus(t, "NormalizeScore", newPlugin(t, gatesOff).NormalizeScore(context.Background(), framework.NewCycleState(), podWith(), scores), fwk.Success, "") {
				t.FailNow()
			}
			got := make([]int64, len(scores))
			for i, s := range scores {
				got[i] = s.Score
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPreScoreNeverSkips: upstream always scores, so even a pod without
// tolerations and a cycle without nodes must not Skip.
func TestPreScoreNeverSkips(t *testing.T) {
	pods := map[string]*v1.Pod{
		"no tolerations":          podWith(),
		"only NoSchedule":         podWith(tu.Tol("a", exists, "", noSched)),
		"PreferNoSchedule":        podWith(tu.Tol("a", exists, "", prefer)),
		"deferred resize (gated)": tu.MakePod("ns", "p").ResizeDeferred().Obj(),
	}
	for name, pod := range pods {
		for _, nodes := range [][]fwk.NodeInfo{nil, tu.NodeInfos(tu.MakeNode("n").Obj())} {
			state := framework.NewCycleState()
			tu.CheckStatus(t, fmt.Sprintf("%s, %d nodes: PreScore", name, len(nodes)), newPlugin(t, resizeGateOn).PreScore(context.Background(), state, pod, nodes), fwk.Success, "")
			if _, err := state.Read("PreScoreTaintToleration"); err != nil {
				t.Errorf("%s: state not written: %v", name, err)
			}
		}
	}
}

func TestPreScoreKeepsOnlyRelevantTolerations(t *testing.T) {
	pod := podWith(
		tu.Tol("a", exists, "", noSched),
		tu.Tol("b", equal, "1", ""),
		tu.Tol("c", equal, "2", noExec),
		tu.Tol("d", exists, "", prefer),
	)
	state := framework.NewCycleState()
	if !tu.CheckStatus(t, "PreScore", newPlugin(t, gatesOff).PreScore(context.Background(), state, pod, nil), fwk.Success, "") {
		t.FailNow()
	}
	s, err := cyclestate.Read[*preScoreState](state, preScoreStateKey)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.Toleration{tu.Tol("b", equal, "1", ""), tu.Tol("d", exists, "", prefer)}
	if diff := cmp.Diff(want, s.tolerations); diff != "" {
		t.Errorf("stored tolerations (-want +got):\n%s", diff)
	}
}

func TestScoreWithoutPreScore(t *testing.T) {
	s, st := newPlugin(t, gatesOff).Score(context.Background(), framework.NewCycleState(), podWith(), tu.NodeInfo(nodeWith(taint("a", "", prefer))))
	if s != 0 {
		t.Errorf("score = %d, want 0", s)
	}
	tu.CheckStatus(t, "Score", st, fwk.Error, `failed to read "PreScoreTaintToleration" from cycleState: not found`)
}

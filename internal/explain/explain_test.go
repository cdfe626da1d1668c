package explain

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

func decodeFile(t *testing.T, path string) *Cluster {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objs, err := DecodeObjects(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return ClusterFrom(objs)
}

// TestAgreesWithTheFramework: explain calls each plugin on its own; the
// framework's own entry points (RunFilterPluginsWithNominatedPods, which the
// scheduler uses, and RunScorePlugins) must reach the same feasible set and
// the same totals on every seed scenario.
func TestAgreesWithTheFramework(t *testing.T) {
	dirs, err := filepath.Glob("../placementcmd/testdata/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ctx := context.Background()
			c := decodeFile(t, filepath.Join(dir, "cluster.json"))
			pc := decodeFile(t, filepath.Join(dir, "pod.json"))
			pod := pc.Pods[0]
			MergeMatchLabelKeys(pod)
			data := manifests.SchedulerConfig()
			if b, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
				data = b
			}
			cfg, err := LoadConfig(data, dir)
			if err != nil {
				t.Fatal(err)
			}
			prof := &cfg.Profiles[0]
			res, err := Explain(ctx, pod, c, prof)
			if err != nil {
				t.Fatal(err)
			}

			fw, err := newFramework(ctx, c, pod, prof)
			if err != nil {
				t.Fatal(err)
			}
			state := framework.NewCycleState()
			if _, st, _ := fw.RunPreFilterPlugins(ctx, state, pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			nodes, _ := fw.snapshot.NodeInfos().List()
			want := sets.New[string]()
			var feasible = nodes[:0:0]
			for _, ni := range nodes {
				if fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess() {
					want.Insert(ni.Node().Name)
					feasible = append(feasible, ni)
				}
			}
			got := sets.New[string]()
			for _, nr := range res.NodeResults {
				if nr.Feasible {
					got.Insert(nr.Node)
				}
			}
			if !got.Equal(want) {
				t.Fatalf("explain finds feasible %v, the framework %v", sets.List(got), sets.List(want))
			}
			if res.Feasible != want.Len() {
				t.Errorf("Feasible = %d, want %d", res.Feasible, want.Len())
			}
			if len(feasible) == 0 {
				if res.SchedulerMessage == "" {
					t.Error("unschedulable pod without the scheduler's message")
				}
				return
			}
			if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
				t.Fatal(st)
			}
			scores, st := fw.RunScorePlugins(ctx, state, pod, feasible)
			if !st.IsSuccess() {
				t.Fatal(st)
			}
			totals := map[string]int64{}
			for _, s := range scores {
				totals[s.Name] = s.TotalScore
			}
			for _, r := range res.Ranking {
				if totals[r.Node] != r.Total {
					t.Errorf("node %s: explain total %d, framework %d", r.Node, r.Total, totals[r.Node])
				}
			}
		})
	}
}

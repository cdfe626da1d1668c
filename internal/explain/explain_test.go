package explain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/profile"
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
	pods, err := filepath.Glob("../placementcmd/testdata/*/pod.json")
	if err != nil || len(pods) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, p := range pods {
		dir := filepath.Dir(p)
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
			cfg, err := profile.LoadConfig(data, dir)
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
			nodes, _ := fw.Snapshot.Lister().NodeInfos().List()
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

// shippedScenario is a golden scenario's cluster and pod, and the shipped
// profile.
func shippedScenario(t *testing.T, name string) (*Cluster, *v1.Pod, *config.KubeSchedulerProfile) {
	t.Helper()
	dir := filepath.Join("../placementcmd/testdata", name)
	cfg, err := profile.LoadConfig(manifests.SchedulerConfig(), "shipped")
	if err != nil {
		t.Fatal(err)
	}
	return decodeFile(t, filepath.Join(dir, "cluster.json")), decodeFile(t, filepath.Join(dir, "pod.json")).Pods[0], &cfg.Profiles[0]
}

// TestPostFilterIsADryRun: on a pod preemption would place, explain names
// the node and victims, writes nothing through the only client the plugins
// have, and leaves every node of the snapshot as it was (the dry run works
// on copies).
func TestPostFilterIsADryRun(t *testing.T) {
	ctx := context.Background()
	c, pod, prof := shippedScenario(t, "preemption-helps")
	fw, err := newFramework(ctx, c, pod, prof)
	if err != nil {
		t.Fatal(err)
	}
	before := nodeState(t, fw)
	res, err := explainWith(ctx, fw, pod, c, prof)
	if err != nil {
		t.Fatal(err)
	}
	pf := res.PostFilter
	if pf == nil || !pf.WouldPreempt || pf.Node != "node-a" {
		t.Fatalf("PostFilter = %+v, want preemption on node-a", pf)
	}
	if len(pf.Victims) != 1 || pf.Victims[0].Pod != "default/low-old" {
		t.Errorf("victims %+v, want only default/low-old (evicting it alone frees enough; low-new is reprieved)", pf.Victims)
	}
	for _, a := range fw.client.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" && v != "get" {
			t.Errorf("explain wrote through the plugins' client: %s %s", v, a.GetResource().Resource)
		}
	}
	if after := nodeState(t, fw); !cmp.Equal(before, after) {
		t.Errorf("the snapshot changed (-before +after):\n%s", cmp.Diff(before, after))
	}
}

// nodeState is what a mutation of the snapshot would change: each node's
// pods and requested resources.
func nodeState(t *testing.T, fw *profileFramework) map[string]string {
	t.Helper()
	nodes, err := fw.Snapshot.Lister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ni := range nodes {
		var pods []string
		for _, p := range ni.GetPods() {
			pods = append(pods, p.GetPod().Name)
		}
		r := ni.GetRequested()
		out[ni.Node().Name] = fmt.Sprintf("pods %v cpu %dm memory %d generation %d", pods, r.GetMilliCPU(), r.GetMemory(), ni.GetGeneration())
	}
	return out
}

// TestResourceDetailAddsUp: on the resources-only scenario every node's
// detail agrees with NodeInfo: used is Requested, free is allocatable minus
// used, and the holders listed add up to used when none are left out.
func TestResourceDetailAddsUp(t *testing.T) {
	c, pod, prof := shippedScenario(t, "resources-only")
	res, err := Explain(context.Background(), pod, c, prof)
	if err != nil {
		t.Fatal(err)
	}
	if res.Feasible != 0 {
		t.Fatalf("%d feasible nodes, want 0", res.Feasible)
	}
	seen := 0
	for _, nr := range res.NodeResults {
		for _, f := range nr.Filters {
			if f.Plugin != "NodeResourcesFit" || f.Code == "Success" {
				continue
			}
			if len(f.Resources) != len(f.Reasons) {
				t.Errorf("%s: %d resource details for reasons %v", nr.Node, len(f.Resources), f.Reasons)
			}
			for _, rf := range f.Resources {
				seen++
				q := func(s string) resource.Quantity { return resource.MustParse(s) }
				free := q(rf.Allocatable)
				free.Sub(q(rf.Used))
				if free.Cmp(q(rf.Free)) != 0 {
					t.Errorf("%s %s: free %s, allocatable %s - used %s = %s", nr.Node, rf.Resource, rf.Free, rf.Allocatable, rf.Used, free.String())
				}
				short := q(rf.Requested)
				short.Sub(q(rf.Free))
				if short.Cmp(q(rf.Short)) != 0 {
					t.Errorf("%s %s: short %s, want %s", nr.Node, rf.Resource, rf.Short, short.String())
				}
				if rf.MoreHolders == 0 {
					sum := resource.Quantity{}
					for _, h := range rf.Holders {
						sum.Add(q(h.Request))
					}
					if sum.Cmp(q(rf.Used)) != 0 {
						t.Errorf("%s %s: holders add up to %s, used is %s", nr.Node, rf.Resource, sum.String(), rf.Used)
					}
				}
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d resource details, want 3 (cpu on node-a and node-c, memory on node-b)", seen)
	}
}

// A hand-written snapshot may leave out pods' UIDs; the dry run, which
// removes victims from a node by UID, still works, and the caller's pods
// are not changed.
func TestPostFilterWithoutUIDs(t *testing.T) {
	c, pod, prof := shippedScenario(t, "preemption-helps")
	for _, p := range c.Pods {
		p.UID = ""
	}
	res, err := Explain(context.Background(), pod, c, prof)
	if err != nil {
		t.Fatal(err)
	}
	if pf := res.PostFilter; pf == nil || !pf.WouldPreempt || pf.Node != "node-a" {
		t.Errorf("PostFilter = %+v, want preemption on node-a", pf)
	}
	for _, p := range c.Pods {
		if p.UID != "" {
			t.Errorf("pod %s/%s got UID %q in the caller's cluster", p.Namespace, p.Name, p.UID)
		}
	}
}

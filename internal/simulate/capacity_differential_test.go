package simulate

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// TestMaxReplicasDifferentialAgainstInTree: on the generated clusters of
// TestDifferentialAgainstInTree, --max-replicas of the first generated
// workload (the shipped profile, our plugins) counts as many replicas as
// the in-tree loop places before its first Pending one, given the same
// replicas, under upstream's default profile with the in-tree plugins; at
// the limit, the loop places them all. Nothing preempts: every pod has the
// same priority. SIMULATE_DIFF_CASES and SIMULATE_DIFF_SEED as there.
func TestMaxReplicasDifferentialAgainstInTree(t *testing.T) {
	const limit = 30
	ctx, cases, seed, prof := diffRun(t)
	mismatches, stopped, limited := 0, 0, 0
	for i := 0; i < cases; i++ {
		c, objs := generate(rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		res, _, err := MaxReplicas(ctx, CopyCluster(c), prof, objs[0], "default", limit, Options{})
		if err != nil {
			t.Fatalf("case %d: max-replicas: %v", i, err)
		}
		in := CopyCluster(c)
		src, _, err := newReplicaSource(objs[0], "default", in, limit)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		replicas := make([]Replica, limit)
		for j := range replicas {
			if replicas[j], err = src.next(); err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		}
		nodes, err := inTreeOneByOne(ctx, in, replicas)
		if err != nil {
			t.Fatalf("case %d: in-tree loop: %v", i, err)
		}
		want, wantStop := limit, simulatev1alpha1.StoppedLimit
		for j, n := range nodes {
			if n == "" {
				want, wantStop = j, simulatev1alpha1.StoppedUnschedulable
				break
			}
		}
		capy := res.Capacity
		got := make([]string, 0, want)
		for _, rr := range res.Replicas[:capy.Fits] {
			got = append(got, rr.Node)
		}
		if capy.Fits != want || capy.Preempting != 0 || capy.StoppedBy != wantStop || fmt.Sprint(got) != fmt.Sprint(nodes[:want]) {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d): max-replicas fits %d (preempting %d, %s) on %q; in-tree loop places %d (%s) on %q",
					i, seed, capy.Fits, capy.Preempting, capy.StoppedBy, got, want, wantStop, nodes[:want])
			}
		}
		if wantStop == simulatev1alpha1.StoppedLimit {
			limited++
		} else {
			stopped++
		}
	}
	t.Logf("%d cases, %d mismatches; %d stopped by a Pending replica, %d by the limit", cases, mismatches, stopped, limited)
	if stopped == 0 || limited == 0 {
		t.Errorf("the generator stopped %d by a Pending replica, %d by the limit: it must reach both", stopped, limited)
	}
}

// TestCompareDifferentialAgainstInTree: on the same generated cases, a
// comparison of the shipped profile with the same profile scoring
// NodeResourcesFit by MostAllocated gives, on each side, the nodes the
// in-tree loop gives under upstream's default profile with that scoring
// strategy, and reports as moved exactly the replicas whose in-tree nodes
// differ.
func TestCompareDifferentialAgainstInTree(t *testing.T) {
	ctx, cases, seed, a := diffRun(t)
	b := mostAllocated(t, a)
	def, err := latest.Default()
	if err != nil {
		t.Fatal(err)
	}
	inA := &def.Profiles[0]
	inB := mostAllocated(t, inA)
	mismatches, moves := 0, 0
	for i := 0; i < cases; i++ {
		c, objs := generate(rand.New(rand.NewPCG(uint64(seed), uint64(i))))
		replicasOn := func(cc *explain.Cluster) []Replica {
			cp := make([]runtime.Object, len(objs))
			for j, o := range objs {
				cp[j] = o.DeepCopyObject()
			}
			replicas, _, err := Workloads(cp, "default", cc)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			return replicas
		}
		res, err := Compare(func(p *config.KubeSchedulerProfile, opts Options) (*simulatev1alpha1.PlacementSimulation, error) {
			cc := CopyCluster(c)
			return Run(ctx, cc, p, replicasOn(cc), opts)
		}, a, b, Options{})
		if err != nil {
			t.Fatalf("case %d: compare: %v", i, err)
		}
		inTree := func(p *config.KubeSchedulerProfile) []string {
			cc := CopyCluster(c)
			nodes, err := inTreeOneByOneWith(ctx, cc, replicasOn(cc), p)
			if err != nil {
				t.Fatalf("case %d: in-tree loop: %v", i, err)
			}
			return nodes
		}
		wantA, wantB := inTree(inA), inTree(inB)
		var wantMoved, gotMoved []string
		for j, rr := range res.Replicas {
			if wantA[j] != wantB[j] {
				wantMoved = append(wantMoved, rr.Pod)
			}
		}
		for _, m := range res.Comparison.Moved {
			gotMoved = append(gotMoved, m.Pod)
		}
		moves += len(wantMoved)
		if got, got2 := nodesOf(res), nodesOf(res.Comparison.Result); fmt.Sprint(got) != fmt.Sprint(wantA) || fmt.Sprint(got2) != fmt.Sprint(wantB) || fmt.Sprint(gotMoved) != fmt.Sprint(wantMoved) {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d): compare A %q, B %q, moved %q; in-tree A %q, B %q, moved %q", i, seed, got, got2, gotMoved, wantA, wantB, wantMoved)
			}
		}
	}
	t.Logf("%d cases, %d mismatches; %d replicas moved in all", cases, mismatches, moves)
	if moves == 0 {
		t.Error("no replica moved between the two scoring strategies: the generator must reach that")
	}
}

package simulate

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDifferentialDrainAgainstInTree: on generated clusters whose bound
// pods mostly belong to ReplicaSets, simulate --drain NODE --force places
// the replacements of NODE's pods on the same nodes, in the same order, as
// the in-tree loop of TestDifferentialAgainstInTree does on the cluster as
// kubectl drain leaves it, built here: NODE cordoned, its pods gone (the
// bare ones for good), and the replacements queued in the order kubectl
// evicts (namespace, then name).
func TestDifferentialDrainAgainstInTree(t *testing.T) {
	ctx, cases, seed, prof := diffRun(t)
	mismatches, moved := 0, 0
	for i := 0; i < cases; i++ {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i)+2<<32))
		c, _ := generate(r)
		yes := true
		for _, p := range c.Pods {
			p.Status.Phase = v1.PodRunning
			if r.IntN(4) > 0 {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.Labels["app"], UID: types.UID("rs-" + p.Labels["app"]), Controller: &yes}}
			}
		}
		node := c.Nodes[r.IntN(len(c.Nodes))].Name

		drained, replicas, _, err := Drain(c, DrainOptions{Nodes: []string{node}, Force: true})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		res, err := Run(ctx, drained, prof, replicas, Options{})
		if err != nil {
			t.Fatalf("case %d: simulate: %v", i, err)
		}
		var got []string
		for _, rr := range res.Replicas {
			got = append(got, rr.Pod+"@"+rr.Node)
		}

		after := *c
		after.Nodes, after.Pods = nil, nil
		for _, n := range c.Nodes {
			if n.Name == node {
				n = n.DeepCopy()
				n.Spec.Unschedulable = true
			}
			after.Nodes = append(after.Nodes, n)
		}
		var evicted []*v1.Pod
		for _, p := range c.Pods {
			if p.Spec.NodeName != node {
				after.Pods = append(after.Pods, p)
			} else if len(p.OwnerReferences) > 0 {
				evicted = append(evicted, p)
			}
		}
		sort.Slice(evicted, func(a, b int) bool {
			return evicted[a].Namespace+"/"+evicted[a].Name < evicted[b].Namespace+"/"+evicted[b].Name
		})
		var queue []Replica
		for _, p := range evicted {
			repl := p.DeepCopy()
			repl.UID, repl.Spec.NodeName, repl.Status = "new-"+p.UID, "", v1.PodStatus{Phase: v1.PodPending}
			queue = append(queue, Replica{Pod: repl})
		}
		want, err := inTreeOneByOne(ctx, &after, queue)
		if err != nil {
			t.Fatalf("case %d: in-tree loop: %v", i, err)
		}
		var wantRows []string
		for j, rp := range queue {
			wantRows = append(wantRows, rp.Pod.Namespace+"/"+rp.Pod.Name+"@"+want[j])
		}
		moved += len(queue)
		if fmt.Sprint(got) != fmt.Sprint(wantRows) {
			mismatches++
			if mismatches <= 5 {
				t.Errorf("case %d (seed %d), drain of %s: simulate %q; in-tree %q", i, seed, node, got, wantRows)
			}
		}
	}
	t.Logf("%d cases, %d mismatches; %d pods re-placed in all", cases, mismatches, moved)
	if moved == 0 {
		t.Error("the generator drained no pod with a controller: it must")
	}
}

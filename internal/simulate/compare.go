package simulate

import (
	"fmt"
	"io"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// RunFunc runs one what-if under profile with opts, on its own fresh copy
// of the cluster.
type RunFunc func(profile *config.KubeSchedulerProfile, opts Options) (*simulatev1alpha1.PlacementSimulation, error)

// Compare runs the same what-if under profiles a and b and returns a's
// PlacementSimulation with b's run and the moved replicas in its Comparison. When some
// replica lands on a node under each profile but not the same one, each
// side runs once more, explaining those replicas just before they are
// placed, for the scores that decided.
func Compare(run RunFunc, a, b *config.KubeSchedulerProfile, opts Options) (*simulatev1alpha1.PlacementSimulation, error) {
	resA, err := run(a, opts)
	if err != nil {
		return nil, err
	}
	resB, err := run(b, opts)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", b.SchedulerName, err)
	}
	moved := diff(resA, resB)
	both := map[string]bool{}
	for _, m := range moved {
		if m.Node != "" && m.OtherNode != "" {
			both[m.Pod] = true
		}
	}
	if len(both) > 0 {
		rankA, err := explainAgain(run, a, opts, both)
		if err != nil {
			return nil, err
		}
		rankB, err := explainAgain(run, b, opts, both)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", b.SchedulerName, err)
		}
		for i, m := range moved {
			if both[m.Pod] {
				moved[i].Why = decided("A", rankA[m.Pod], m.Node, m.OtherNode) + "; " +
					decided("B", rankB[m.Pod], m.OtherNode, m.Node)
			}
		}
	}
	resA.Comparison = &simulatev1alpha1.Comparison{Profile: resB.Profile, Result: resB, Moved: moved}
	return resA, nil
}

func explainAgain(run RunFunc, prof *config.KubeSchedulerProfile, opts Options, pods map[string]bool) (map[string]*explainv1alpha1.PlacementExplanation, error) {
	out := map[string]*explainv1alpha1.PlacementExplanation{}
	opts.Progress = nil
	opts.Explain = pods
	opts.Explained = func(pod string, e *explainv1alpha1.PlacementExplanation) { out[pod] = e }
	if _, err := run(prof, opts); err != nil {
		return nil, err
	}
	return out, nil
}

// diff pairs a's and b's replicas by name (the same inputs make the same
// replicas) and returns those on different nodes.
func diff(a, b *simulatev1alpha1.PlacementSimulation) []simulatev1alpha1.Move {
	other := map[string]simulatev1alpha1.ReplicaResult{}
	for _, rr := range b.Replicas {
		other[rr.Pod] = rr
	}
	moved := []simulatev1alpha1.Move{}
	for _, rr := range a.Replicas {
		o := other[rr.Pod]
		if o.Node == rr.Node {
			continue
		}
		m := simulatev1alpha1.Move{Pod: rr.Pod, Workload: rr.Workload, Node: rr.Node, Topology: rr.Topology, OtherNode: o.Node, OtherTopology: o.Topology}
		switch {
		case rr.Node == "":
			m.Why = "A leaves it Pending: " + rr.Reason
		case o.Node == "":
			m.Why = "B leaves it Pending: " + o.Reason
		}
		moved = append(moved, m)
	}
	return moved
}

// decided says, in one clause, why side put the replica on chosen
// rather than other, from the explanation made just before: other fails a
// filter there, or the scores rank chosen first (with the plugin that
// makes the largest difference).
func decided(side string, e *explainv1alpha1.PlacementExplanation, chosen, other string) string {
	if e == nil {
		return side + ": no explanation"
	}
	var c, o *explainv1alpha1.NodeScore
	for i := range e.Ranking {
		switch e.Ranking[i].Node {
		case chosen:
			c = &e.Ranking[i]
		case other:
			o = &e.Ranking[i]
		}
	}
	if c == nil {
		return fmt.Sprintf("%s: %s was not feasible when explained", side, chosen)
	}
	if o == nil {
		for _, nr := range e.NodeResults {
			if nr.Node != other {
				continue
			}
			for _, f := range nr.Filters {
				if f.Code != fwk.Success.String() && f.Code != fwk.Skip.String() {
					return fmt.Sprintf("%s: %s fails %s (%s)", side, other, f.Plugin, strings.Join(f.Reasons, "; "))
				}
			}
			if nr.ExcludedByPreFilter != "" {
				return fmt.Sprintf("%s: %s excluded by PreFilter (%s)", side, other, nr.ExcludedByPreFilter)
			}
		}
		return fmt.Sprintf("%s: %s is not feasible", side, other)
	}
	if c.Total == o.Total {
		return fmt.Sprintf("%s: %s and %s tie at %d, the first by name taken", side, chosen, other, c.Total)
	}
	plugin, dc, do := "", int64(0), int64(0)
	for _, pc := range c.Plugins {
		for _, po := range o.Plugins {
			if po.Plugin == pc.Plugin && (plugin == "" || abs(pc.Weighted-po.Weighted) > abs(dc-do)) {
				plugin, dc, do = pc.Plugin, pc.Weighted, po.Weighted
			}
		}
	}
	return fmt.Sprintf("%s: %s %d > %s %d, most of it %s (%d vs %d)", side, chosen, c.Total, other, o.Total, plugin, dc, do)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// CopyCluster is a deep copy of c, for a second run over the same state:
// a run adds to its cluster (a workload's controller object) and a drain
// or an edit replaces objects in it.
func CopyCluster(c *explain.Cluster) *explain.Cluster {
	out := &explain.Cluster{
		Nodes:      make([]*v1.Node, len(c.Nodes)),
		Pods:       make([]*v1.Pod, len(c.Pods)),
		Namespaces: make([]*v1.Namespace, len(c.Namespaces)),
		Others:     make([]runtime.Object, len(c.Others)),
		Unseen:     append([]string(nil), c.Unseen...),
	}
	for i, n := range c.Nodes {
		out.Nodes[i] = n.DeepCopy()
	}
	for i, p := range c.Pods {
		out.Pods[i] = p.DeepCopy()
	}
	for i, ns := range c.Namespaces {
		out.Namespaces[i] = ns.DeepCopy()
	}
	for i, o := range c.Others {
		out.Others[i] = o.DeepCopyObject()
	}
	return out
}

// printComparison writes the second profile's counts and the replicas it
// places differently, or one line when none does.
func printComparison(w io.Writer, r *simulatev1alpha1.PlacementSimulation) error {
	c := r.Comparison
	of := ""
	if c.Config != "" {
		of = " of " + c.Config
	}
	o := c.Result
	fmt.Fprintf(w, "\nCompared with profile %s%s: placed %d, pending %d, would preempt %d.\n", c.Profile, of, o.Placed, o.Pending, o.Preempting)
	if len(c.Moved) == 0 {
		fmt.Fprintln(w, "Every replica lands on the same node under both profiles.")
		return nil
	}
	fmt.Fprintf(w, "%d replica(s) land differently (A: profile %s, B: profile %s%s):\n\n", len(c.Moved), r.Profile, c.Profile, of)
	tw := printers.GetNewTabWriter(w)
	key := topologyHeader(r.TopologyKey)
	fmt.Fprintln(tw, strings.Join([]string{"REPLICA", "A NODE", "A " + key, "B NODE", "B " + key, "WHY"}, "\t"))
	for _, m := range c.Moved {
		fmt.Fprintln(tw, strings.Join([]string{m.Pod, pendingOr(m.Node), orDash(m.Topology), pendingOr(m.OtherNode), orDash(m.OtherTopology), m.Why}, "\t"))
	}
	return tw.Flush()
}

func pendingOr(node string) string {
	if node == "" {
		return "<pending>"
	}
	return node
}

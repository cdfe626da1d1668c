package simulate

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// PrintTable writes the human form: what was simulated, the summary line,
// one row per replica, then each distinct Pending reason with the explain
// breakdown of the first replica it held for.
func PrintTable(w io.Writer, r *simulatev1alpha1.PlacementSimulation) error {
	of := ""
	if r.Config != "" {
		of = " of " + r.Config
	}
	fmt.Fprintf(w, "Simulated %d replica(s) with profile %s%s over %d node(s).\n", len(r.Replicas), r.Profile, of, r.Nodes)
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s.\n", warn)
	}
	for _, e := range r.Edits {
		fmt.Fprintf(w, "What-if: %s.\n", e)
	}
	printDrain(w, r.Drain)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	fmt.Fprintf(w, "Placed %d, pending %d, would preempt %d.\n", r.Placed, r.Pending, r.Preempting)
	switch {
	case r.Capacity != nil:
		// Its replicas are many and alike: their distribution says more.
		if err := printCapacity(w, r); err != nil {
			return err
		}
	case len(r.Replicas) > 0:
		fmt.Fprintln(w)
		if err := replicaTable(w, r); err != nil {
			return err
		}
	}
	switch {
	case r.Ties > 0 && r.Capacity != nil:
		fmt.Fprintf(w, "Ties: %d replica(s) had several nodes on the top score; the scheduler picks one of them at random, this run the first by name, so the distribution is one possible outcome.\n", r.Ties)
	case r.Ties > 0:
		fmt.Fprintf(w, "Ties: %d replica(s) had several nodes on the top score (\"tied with\" in NOTE); the scheduler picks one of them at random, this table the first by name, so their node is one possible outcome.\n", r.Ties)
	}
	for i, pr := range r.Reasons {
		fmt.Fprintf(w, "\nPending reason %d (%d replica(s)): %s\n", i+1, pr.Replicas, pr.Reason)
		var buf bytes.Buffer
		if err := explain.PrintTable(&buf, pr.Explanation, false); err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
			if line == "" {
				fmt.Fprintln(w)
				continue
			}
			fmt.Fprintln(w, "  "+line)
		}
	}
	if r.Comparison != nil {
		return printComparison(w, r)
	}
	return nil
}

func replicaTable(w io.Writer, r *simulatev1alpha1.PlacementSimulation) error {
	drain := r.Drain != nil
	reasonNo := map[string]int{}
	for i, pr := range r.Reasons {
		reasonNo[pr.Reason] = i + 1
	}
	tw := printers.GetNewTabWriter(w)
	head := []string{"REPLICA", "WORKLOAD"}
	if drain {
		head = append(head, "FROM")
	}
	head = append(head, "NODE", topologyHeader(r.TopologyKey), "NOTE")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, rr := range r.Replicas {
		row := []string{rr.Pod, rr.Workload}
		if drain {
			row = append(row, orDash(rr.From))
		}
		node, note := rr.Node, ""
		switch {
		case rr.Node == "":
			node, note = "<pending>", fmt.Sprintf("pending reason %d", reasonNo[rr.Reason])
		case len(rr.Preempts) > 0:
			note = "preempts " + strings.Join(rr.Preempts, ", ")
		case rr.Tied > 1:
			note = fmt.Sprintf("tied with %d other node(s)", rr.Tied-1)
		}
		row = append(row, node, orDash(rr.Topology), orDash(note))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// topologyHeader names the topology column after the label key's name
// without its prefix: ZONE, HOSTNAME, POOL.
func topologyHeader(key string) string {
	return strings.ToUpper(key[strings.LastIndex(key, "/")+1:])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package explain

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
	fwk "k8s.io/kube-scheduler/framework"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
)

// PrintTable writes the human form: the summary first, then every node's
// failing filters with our plugins' causes, then the score ranking. wide
// adds every filter's verdict (also the passing ones) and each score's
// raw and normalized values.
func PrintTable(w io.Writer, r *explainv1alpha1.PlacementExplanation, wide bool) error {
	if r.Config != "" {
		fmt.Fprintf(w, "Pod %s, profile %s of %s\n", r.Pod, r.Profile, r.Config)
	} else {
		fmt.Fprintf(w, "Pod %s, profile %s\n", r.Pod, r.Profile)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "Warning: %s.\n", warn)
	}
	switch {
	case r.Feasible == 0:
		fmt.Fprintf(w, "Feasible: 0/%d nodes: unschedulable.\n", r.Nodes)
	case len(r.Tied) > 0:
		fmt.Fprintf(w, "Feasible: %d/%d nodes. Would pick one of %s (tied on the top score; the scheduler breaks ties randomly).\n",
			r.Feasible, r.Nodes, strings.Join(r.Tied, ", "))
	case r.Feasible == 1:
		fmt.Fprintf(w, "Feasible: 1/%d nodes. Would pick %s (the only feasible node: the scheduler does not score it; scores below are for information).\n", r.Nodes, r.Selected)
	default:
		fmt.Fprintf(w, "Feasible: %d/%d nodes. Would pick %s (highest total score; ties are broken randomly).\n", r.Feasible, r.Nodes, r.Selected)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	if r.SchedulerMessage != "" {
		msg := r.SchedulerMessage
		if r.PostFilter != nil && r.PostFilter.Message != "" {
			msg += " " + r.PostFilter.Message
		}
		fmt.Fprintf(w, "kube-scheduler would report: %s\n", msg)
	}
	if len(r.Reasons) > 0 {
		fmt.Fprintln(w, "Rejections (all filters run on every node; a node counts under each plugin that rejects it):")
		for _, rc := range r.Reasons {
			fmt.Fprintf(w, "  %d node(s): %s: %s\n", rc.Nodes, rc.Plugin, rc.Reason)
		}
	}
	for _, p := range r.PreFilter {
		if p.Code == fwk.Skip.String() && !wide {
			continue // nothing to act on; -o wide lists them
		}
		fmt.Fprintf(w, "PreFilter %s: %s: %s\n", p.Plugin, p.Code, strings.Join(p.Reasons, "; "))
	}
	if len(r.Hints) > 0 {
		fmt.Fprintln(w, "What would change the outcome:")
		for _, h := range r.Hints {
			fmt.Fprintf(w, "  %s would make %d more node(s) feasible\n", h.Change, h.Nodes)
		}
	}
	printPostFilter(w, r.PostFilter)
	if len(r.NodeResults) > 0 {
		fmt.Fprintln(w)
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "NODE\tFEASIBLE\tFILTER\tVERDICT")
		for _, nr := range r.NodeResults {
			rows := filterRows(nr, wide)
			for i, row := range rows {
				node, feasible := "", ""
				if i == 0 {
					node, feasible = nr.Node, yesNo(nr.Feasible)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", node, feasible, row[0], row[1])
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Ranking) > 0 {
		fmt.Fprintln(w)
		tw := printers.GetNewTabWriter(w)
		head := []string{"RANK", "NODE", "TOTAL"}
		for _, p := range r.Ranking[0].Plugins {
			head = append(head, p.Plugin)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, ns := range r.Ranking {
			row := []string{fmt.Sprint(ns.Rank), ns.Node, fmt.Sprint(ns.Total)}
			for _, p := range ns.Plugins {
				row = append(row, scoreCell(p, wide))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if wide {
			fmt.Fprintln(w, "Score cells: raw -> normalized x weight = weighted; TOTAL sums the weighted scores.")
		} else {
			fmt.Fprintln(w, "Score cells are weighted (normalized x weight); -o wide shows raw and normalized.")
		}
	}
	return nil
}

// filterRows returns (plugin, verdict) rows for one node: with wide every
// filter, otherwise the failing ones (or one "all passed" row).
func filterRows(nr explainv1alpha1.NodeResult, wide bool) [][2]string {
	var rows [][2]string
	if nr.ExcludedByPreFilter != "" {
		rows = append(rows, [2]string{"(PreFilter)", nr.ExcludedByPreFilter})
	}
	if nr.NominatedPods != "" {
		rows = append(rows, [2]string{"(nominated pods)", "every filter passes alone, but with the pods nominated to this node: " + nr.NominatedPods})
	}
	for _, f := range nr.Filters {
		passed := f.Code == fwk.Success.String() || f.Code == fwk.Skip.String()
		if passed && !wide {
			continue
		}
		if passed {
			rows = append(rows, [2]string{f.Plugin, f.Code})
			continue
		}
		for _, rf := range f.Resources {
			for _, line := range resourceRows(rf) {
				rows = append(rows, [2]string{f.Plugin, line})
			}
		}
		if len(f.Causes) == 0 && len(f.Resources) == 0 {
			rows = append(rows, [2]string{f.Plugin, f.Code + ": " + strings.Join(f.Reasons, "; ")})
		}
		for _, c := range f.Causes {
			rows = append(rows, [2]string{f.Plugin, c.Message})
		}
	}
	if len(rows) == 0 {
		rows = append(rows, [2]string{"(all)", "passed"})
	}
	return rows
}

func scoreCell(p explainv1alpha1.PluginScore, wide bool) string {
	switch {
	case p.Skipped:
		return "skip"
	case wide:
		return fmt.Sprintf("%d->%dx%d=%d", p.Raw, p.Normalized, p.Weight, p.Weighted)
	default:
		return fmt.Sprint(p.Weighted)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printPostFilter writes the preemption dry run: where and at whose
// expense, or why not.
func printPostFilter(w io.Writer, pf *explainv1alpha1.PostFilter) {
	if pf == nil {
		return
	}
	if pf.Plugin == "" {
		fmt.Fprintf(w, "Preemption: %s.\n", pf.Reason)
		return
	}
	fmt.Fprintf(w, "Preemption (%s, dry run: nothing is evicted or nominated):\n", pf.Plugin)
	if pf.WouldPreempt {
		fmt.Fprintf(w, "  would help: the scheduler would nominate %s and evict %d pod(s): %s%s\n", pf.Node, len(pf.Victims), victimList(pf.Victims), pdbNote(pf.PDBViolations))
		for _, c := range pf.Candidates {
			if c.Node != pf.Node {
				fmt.Fprintf(w, "  also possible on %s, evicting %s%s\n", c.Node, victimList(c.Victims), pdbNote(c.PDBViolations))
			}
		}
	} else {
		fmt.Fprintf(w, "  would not help: %s\n", pf.Reason)
	}
	for _, n := range pf.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if len(pf.NotHelpful) > 0 {
		// Grouped by reason, so that a large cluster reads in a few lines;
		// -o json lists every node.
		fmt.Fprintln(w, "  why not (after evicting every lower-priority pod, where there are any):")
		var reasons []string
		nodes := map[string][]string{}
		for _, n := range pf.NotHelpful {
			if _, ok := nodes[n.Reason]; !ok {
				reasons = append(reasons, n.Reason)
			}
			nodes[n.Reason] = append(nodes[n.Reason], n.Node)
		}
		for _, r := range reasons {
			fmt.Fprintf(w, "    %s: %s\n", nodeList(nodes[r]), r)
		}
	}
}

// nodeList names up to three nodes and counts the rest.
func nodeList(nodes []string) string {
	const show = 3
	if len(nodes) <= show {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:show], ", "), len(nodes)-show)
}

// pdbNote says how many victims a PodDisruptionBudget does not allow to
// evict (preemption evicts them only when no node needs fewer such).
func pdbNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d beyond what a PodDisruptionBudget allows)", n)
}

func victimList(vs []explainv1alpha1.Victim) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s (priority %d)", v.Pod, v.Priority)
	}
	return strings.Join(parts, ", ")
}

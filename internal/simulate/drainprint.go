package simulate

import (
	"fmt"
	"io"
	"strings"
)

// drainVerdicts say each outcome in the table.
var drainVerdicts = map[string]string{
	DrainRefused:   "refused: kubectl drain cordons, evicts nothing from the node(s) below and exits 1",
	DrainFails:     "fails: a pod's eviction is refused for good (pdbs below); kubectl drain evicts the rest and exits 1",
	DrainStuck:     "stuck: a PodDisruptionBudget holds evictions whose replacements stay Pending; kubectl drain waits until its --timeout",
	DrainWaits:     "completes once PodDisruptionBudgets let the held evictions through as replacements become ready",
	DrainCompletes: "completes",
}

// stayLabels name what happens to each kind of pod left out of the
// placement.
var stayLabels = map[string]string{
	StayDaemonSet:   "stays",
	StayMirror:      "stays",
	StayPDBs:        "stays",
	StayBare:        "gone",
	StayFinished:    "gone",
	StayTerminating: "going",
}

func printDrain(w io.Writer, d *DrainReport) {
	if d == nil {
		return
	}
	fmt.Fprintf(w, "Drain (kubectl drain %s): %s cordoned; %s.\n", strings.Join(d.Flags, " "), nodeList(d.Nodes), drainVerdicts[d.Status])
	for _, r := range d.Refused {
		fmt.Fprintf(w, "  refused: %s: %s\n", r.Node, r.Message)
	}
	with := ""
	if len(d.Allow) > 0 {
		with = "With " + strings.Join(d.Allow, " ") + " added: "
	}
	fmt.Fprintf(w, "  %s%d pod(s) evicted for their controllers to re-create, %d not re-created elsewhere.\n", with, d.Evicted, len(d.Staying))
	for _, s := range d.Staying {
		fmt.Fprintf(w, "  %s: %s on %s (%s): %s\n", stayLabels[s.Kind], s.Pod, s.Node, s.Kind, s.Why)
	}
	for _, p := range d.PDBs {
		verdict := "lets " + strings.Join(p.Evicting, ", ") + " go now"
		if len(p.Blocks) > 0 {
			verdict = fmt.Sprintf("holds %s until replacements become ready", strings.Join(p.Blocks, ", "))
			if len(p.Forever) > 0 {
				verdict += fmt.Sprintf("; %s forever: the replacements that would free the budget stay Pending", strings.Join(p.Forever, ", "))
			}
		}
		fmt.Fprintf(w, "  PodDisruptionBudget %s allows %d eviction(s) now, decides %d drained pod(s): %s\n", p.PDB, p.Allowed, len(p.Evicting), verdict)
	}
}

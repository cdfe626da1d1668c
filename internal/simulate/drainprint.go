package simulate

import (
	"fmt"
	"io"
	"strings"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
)

// drainVerdicts say each outcome in the table.
var drainVerdicts = map[string]string{
	simulatev1alpha1.DrainRefused:   "refused: kubectl drain cordons, evicts nothing from the node(s) below and exits 1",
	simulatev1alpha1.DrainFails:     "fails: a pod's eviction is refused for good (pdbs below); kubectl drain evicts the rest and exits 1",
	simulatev1alpha1.DrainStuck:     "stuck: a PodDisruptionBudget holds evictions whose replacements stay Pending; kubectl drain waits until its --timeout",
	simulatev1alpha1.DrainWaits:     "completes once PodDisruptionBudgets let the held evictions through as replacements become ready",
	simulatev1alpha1.DrainCompletes: "completes",
}

// stayLabels name what happens to each kind of pod left out of the
// placement.
var stayLabels = map[string]string{
	simulatev1alpha1.StayDaemonSet:   "stays",
	simulatev1alpha1.StayMirror:      "stays",
	simulatev1alpha1.StayPDBs:        "stays",
	simulatev1alpha1.StayBare:        "gone",
	simulatev1alpha1.StayFinished:    "gone",
	simulatev1alpha1.StayTerminating: "going",
}

func printDrain(w io.Writer, d *simulatev1alpha1.DrainReport) {
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

package placementcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
)

type violationsOptions struct {
	flags          *genericclioptions.ConfigFlags
	streams        genericiooptions.IOStreams
	output         string
	fromFile       string
	leaseNamespace string
	leaseName      string
	port           int
}

func newViolations(streams genericiooptions.IOStreams) *cobra.Command {
	o := &violationsOptions{flags: genericclioptions.NewConfigFlags(true), streams: streams}
	cmd := &cobra.Command{
		Use:   "violations [-o table|json] [--from-file REPORT]",
		Short: "Running pods that break the placement rules they opted in to: rule, state, where they could go",
		Long: `Lists what the leading placement-enforcer judged at its last pass: each
violating pod that opted in, its node, the rule it breaks and the term that
decided, its state (grace, no-fit, pdb-blocked, evicting, protected...) and
the node its replacement would be scheduled on.

It reads the leader's /violations through the apiserver's pod proxy: the
enforcer's Lease names the leader. That takes get on the Lease and on
pods/proxy in the enforcer's namespace. --from-file reads a saved /violations
instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var data []byte
			var err error
			if o.fromFile != "" {
				if data, err = os.ReadFile(o.fromFile); err != nil {
					return fmt.Errorf("--from-file: %w", err)
				}
			} else {
				rc, err := o.flags.ToRESTConfig()
				if err != nil {
					return fmt.Errorf("no usable kubeconfig (%v): set --kubeconfig/--context, or use --from-file", err)
				}
				client, err := kubernetes.NewForConfig(rc)
				if err != nil {
					return err
				}
				if data, err = o.fetch(cmd.Context(), client); err != nil {
					return err
				}
			}
			return o.print(o.streams.Out, data)
		},
	}
	o.flags.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "table or json")
	cmd.Flags().StringVar(&o.fromFile, "from-file", "", "a saved /violations report instead of the live enforcer")
	cmd.Flags().StringVar(&o.leaseNamespace, "lease-namespace", installNamespace, "the enforcer's Lease namespace")
	cmd.Flags().StringVar(&o.leaseName, "lease-name", "placement-scheduler-enforcer", "the enforcer's Lease")
	cmd.Flags().IntVar(&o.port, "port", 10261, "the enforcer's metricsBindAddress port")
	return cmd
}

// fetch finds the leader from the Lease (its holder is <pod>_<uuid>) and
// GETs its /violations through the pod proxy.
func (o *violationsOptions) fetch(ctx context.Context, client kubernetes.Interface) ([]byte, error) {
	lease, err := client.CoordinationV1().Leases(o.leaseNamespace).Get(ctx, o.leaseName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("finding the enforcer's leader (Lease %s/%s; --lease-namespace, --lease-name): %w", o.leaseNamespace, o.leaseName, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	i := strings.LastIndex(holder, "_")
	if i <= 0 {
		return nil, fmt.Errorf("Lease %s/%s has no leader (holder %q): is the enforcer running?", o.leaseNamespace, o.leaseName, holder)
	}
	pod := holder[:i]
	data, err := client.CoreV1().Pods(o.leaseNamespace).ProxyGet("http", pod, strconv.Itoa(o.port), "/violations", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /violations of the leader, pod %s/%s, through the pod proxy: %w", o.leaseNamespace, pod, err)
	}
	return data, nil
}

// print writes the report as a table or as JSON.
func (o *violationsOptions) print(w io.Writer, data []byte) error {
	var reports []enforcer.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return fmt.Errorf("not an enforcer /violations report: %w", err)
	}
	switch o.output {
	case "json":
		out, err := json.MarshalIndent(reports, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(out))
		return err
	case "table", "":
	default:
		return fmt.Errorf("-o %q: want table or json", o.output)
	}
	if len(reports) == 0 {
		_, err := fmt.Fprintln(w, "No pod violates a placement rule it opted in to.")
		return err
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "POD\tNODE\tRULE\tSTATE\tCOULD GO TO\tWHY")
	for _, r := range reports {
		target := r.Target
		if target == "" {
			target = "-"
		}
		why := r.Reason
		if len(r.Terms) > 0 {
			why = strings.Join(r.Terms, "; ")
		}
		if r.Detail != "" {
			// A refusal's detail is the server's sentence ("... disruption
			// budget."): its full stop would end up before the colon.
			why = strings.TrimRight(r.Detail, ". ") + ": " + why
		}
		rule := string(r.Rule)
		if rule == "" {
			rule = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Pod, r.Node, rule, r.State, target, why)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := split(reports); line != "" {
		_, err := fmt.Fprintln(w, line)
		return err
	}
	return nil
}

// split sums up the pass: how many pods go now (evicting, or dry-run in a
// dry run) and how many are due but wait, by what holds them ("" when
// neither).
func split(reports []enforcer.Report) string {
	now, waiting := 0, 0
	by := map[string]int{}
	for _, r := range reports {
		switch {
		case r.State == enforcer.StateEvicting || r.State == enforcer.StateDryRun:
			now++
		case r.Wait != "":
			waiting++
			by[r.Wait]++
		}
	}
	if now == 0 && waiting == 0 {
		return ""
	}
	line := fmt.Sprintf("Going now: %d. Waiting: %d", now, waiting)
	if waiting > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(by)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
		}
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line + "."
}

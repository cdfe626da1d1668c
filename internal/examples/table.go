package examples

import (
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"text/tabwriter"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Placement is one row of the demo's table.
type Placement struct {
	Example, Namespace, Workload, Pod, Node, Zone, Pool string
	// Status is the pod's phase; for a pod not yet placed, "Pending: " and
	// the scheduler's reason (its latest FailedScheduling message).
	Status string
}

// Namespaces returns the namespaces the example's files create, in order.
func (ex Example) Namespaces() ([]string, error) {
	seen := sets.New[string]()
	var out []string
	for _, st := range ex.Spec.Steps {
		for _, f := range st.Apply {
			objs, err := readObjects(ex.FS, path.Join(ex.Dir, f))
			if err != nil {
				return nil, err
			}
			for _, o := range objs {
				if o.GetKind() == "Namespace" && o.GetAPIVersion() == "v1" && !seen.Has(o.GetName()) {
					seen.Insert(o.GetName())
					out = append(out, o.GetName())
				}
			}
		}
	}
	return out, nil
}

// Placements reads where the pods of the examples' namespaces are now.
func (r *Runner) Placements(ctx context.Context, exs []Example) ([]Placement, error) {
	nodes, err := r.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var out []Placement
	for _, ex := range exs {
		nss, err := ex.Namespaces()
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			pods, err := r.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
			for i := range pods.Items {
				p := &pods.Items[i]
				row := Placement{Example: ex.Name, Namespace: ns, Pod: p.Name, Node: p.Spec.NodeName, Status: string(p.Status.Phase)}
				if row.Workload, err = r.workload(ctx, p); err != nil {
					return nil, err
				}
				if n := nodes[p.Spec.NodeName]; n != nil {
					row.Zone, row.Pool = n.Labels[v1.LabelTopologyZone], n.Labels["pool"]
				}
				if p.DeletionTimestamp != nil {
					row.Status = "Terminating"
				}
				if p.Spec.NodeName == "" {
					reason, err := r.pendingReason(ctx, p)
					if err != nil {
						return nil, err
					}
					row.Status = "Pending: " + reason
				}
				out = append(out, row)
			}
		}
	}
	return out, nil
}

// pendingReason is the latest FailedScheduling message, or the PodScheduled
// condition's if the event is not there (yet).
func (r *Runner) pendingReason(ctx context.Context, p *v1.Pod) (string, error) {
	evs, err := r.events(ctx, p.Namespace, p.Name, "FailedScheduling")
	if err != nil {
		return "", err
	}
	if len(evs) > 0 {
		return evs[len(evs)-1].Message, nil
	}
	if msg, _ := unschedulableMessage(p); msg != "" {
		return msg, nil
	}
	return "not tried yet", nil
}

// workload names the pod's top controller: Deployment for a ReplicaSet's
// pod, else the direct controller, else the pod itself.
func (r *Runner) workload(ctx context.Context, p *v1.Pod) (string, error) {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return "Pod/" + p.Name, nil
	}
	if ref.Kind == "ReplicaSet" {
		rs, err := r.Client.AppsV1().ReplicaSets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if owner := metav1.GetControllerOf(rs); owner != nil {
				return owner.Kind + "/" + owner.Name, nil
			}
		}
	}
	return ref.Kind + "/" + ref.Name, nil
}

// PrintTable writes placements as aligned columns, with each example's
// verdict (from results, keyed by example name) in its rows.
func PrintTable(w io.Writer, rows []Placement, results map[string]error) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXAMPLE\tCHECK\tWORKLOAD\tPOD\tNODE\tZONE/POOL\tSTATUS")
	for _, row := range rows {
		check := "ok"
		if results[row.Example] != nil {
			check = "FAILED"
		}
		zonePool := ""
		if row.Node != "" {
			zonePool = row.Zone + "/" + row.Pool
		}
		workload := row.Workload
		if row.Namespace != "ex-"+row.Example {
			workload = row.Namespace + ":" + workload
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Example, check, workload, row.Pod, orDash(row.Node), orDash(zonePool), row.Status)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package placementcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/simulate"
)

type simulateOptions struct {
	// explainOptions holds what simulate shares with explain: the
	// kubeconfig flags, snapshot, config and profile flags, -f and -o.
	explainOptions
	drain         []string
	selector      string
	by            string
	failIfPending bool
	edits         simulate.Edits
	// Progress goes to stderr for runs of at least progressMin replicas,
	// at most once per progressEvery.
	progressMin   int
	progressEvery time.Duration
}

// newSimulate is the simulate verb; newClient, when not nil, replaces the
// kubeconfig-built client (tests).
func newSimulate(streams genericiooptions.IOStreams, build BuildInfo, newClient func() (kubernetes.Interface, error)) *cobra.Command {
	return newSimulateWith(&simulateOptions{
		explainOptions: explainOptions{flags: genericclioptions.NewConfigFlags(true), streams: streams, build: build, newClient: newClient},
		progressMin:    100,
		progressEvery:  2 * time.Second,
	})
}

// newSimulateWith is the command over o, whose streams, client and
// progress pacing are set (tests pace the progress line).
func newSimulateWith(o *simulateOptions) *cobra.Command {
	if o.newClient == nil {
		o.newClient = o.client
	}
	cmd := &cobra.Command{
		Use:   "simulate [-f WORKLOAD] [--drain NODE | -l SELECTOR] [what-if edits] [--from-file SNAPSHOT] [-o table|json|yaml]",
		Short: "Where every replica of a workload, or every pod of drained nodes, would land: placed, Pending or preempting",
		Long: `Places pods one by one through the scheduler's real framework, built from the
placement-scheduler profile, over the cluster; each placement is reserved
before the next, so a workload's (anti-)affinity and spreading among its own
replicas count. A pod no node fits gets the preemption dry run. Read-only:
nothing is created, evicted or changed.

What is placed:
  -f FILE      every replica of the Deployments, StatefulSets, ReplicaSets,
               Jobs, DaemonSets (or Pods) in FILE, in order (- for stdin),
               with the claims their controllers create (a StatefulSet's
               volumeClaimTemplates, existing ones as they are; ephemeral
               volumes; ResourceClaimTemplates);
  --drain NODE / -l SELECTOR
               the nodes are cordoned and every pod a controller would
               re-create is placed elsewhere; DaemonSet, mirror and bare pods
               are listed, PodDisruptionBudgets reported;
  neither      the cluster's Pending pods (e.g. with what-if edits: what
               would a new node or a relabelled pool change for them?).

What-if edits change the snapshot before anything is placed (NODE is a node
name or a label selector): --add-nodes N --like NODE, --label NODE:k=v,
--taint NODE:k=v:Effect, --cordon NODE, --remove-node NODE.

The profile and cluster are found as explain finds them (--config, the
installed ConfigMap, or the shipped default; kubeconfig or --from-file).
When several nodes tie on the top score the scheduler picks one at random:
the table shows the first by name and says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context())
		},
	}
	o.flags.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "Workloads to place: Deployment, StatefulSet, ReplicaSet, Job, DaemonSet, Pod or a List (- for stdin); not created")
	f.StringSliceVar(&o.drain, "drain", nil, "Nodes to drain (repeatable, comma-separated): their pods are placed elsewhere")
	f.StringVarP(&o.selector, "selector", "l", "", "Drain every node this label selector matches")
	f.IntVar(&o.edits.AddNodes, "add-nodes", 0, "What-if: add N empty nodes like --like")
	f.StringVar(&o.edits.Like, "like", "", "What-if: the node --add-nodes copies (labels, taints, capacity)")
	f.StringArrayVar(&o.edits.Labels, "label", nil, "What-if: NODE:k=v[,k2-] relabels NODE (a name or label selector); repeatable")
	f.StringArrayVar(&o.edits.Taints, "taint", nil, "What-if: NODE:k=v:Effect taints NODE, NODE:k:Effect- removes it; repeatable")
	f.StringArrayVar(&o.edits.Cordon, "cordon", nil, "What-if: mark NODE unschedulable; repeatable")
	f.StringArrayVar(&o.edits.Remove, "remove-node", nil, "What-if: remove NODE and its pods; repeatable")
	f.StringVar(&o.by, "by", v1.LabelTopologyZone, "Node label to show per replica (e.g. kubernetes.io/hostname, or a pool label)")
	f.BoolVar(&o.failIfPending, "fail-if-pending", false, "Exit non-zero when a replica would stay Pending (for CI)")
	o.addSourceFlags(cmd, "Profile (schedulerName) to place with (default: the pods' schedulerName)")
	f.StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml")
	return cmd
}

func (o *simulateOptions) run(ctx context.Context) error {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return fmt.Errorf("-o %q: want table, json or yaml", o.output)
	}
	ctx = klog.NewContext(ctx, logr.Discard())
	src, err := o.readCluster(ctx)
	if err != nil {
		return err
	}
	if src.offline && len(src.cluster.Namespaces) == 0 {
		return errors.New("the snapshot has no namespaces (affinity namespaceSelectors and namespace checks need them): dump them too, e.g. kubectl get nodes,pods,namespaces,pdb,priorityclasses -A -o yaml")
	}
	cluster, client, namespace := src.cluster, src.client, src.namespace
	workloads, err := o.readWorkloads()
	if err != nil {
		return err
	}
	cfg, err := o.loadConfig(ctx, client)
	if err != nil {
		return err
	}

	var edits []string
	if !o.edits.Empty() {
		if cluster, edits, err = o.edits.Apply(cluster); err != nil {
			return err
		}
	}
	var replicas []simulate.Replica
	var drain *simulate.DrainReport
	if len(o.drain) > 0 || o.selector != "" {
		if cluster, replicas, drain, err = simulate.Drain(cluster, o.drain, o.selector); err != nil {
			return err
		}
	}
	var notes []string
	if workloads != nil {
		var n []string
		workloads.objs, cluster, n = simulate.FileNamespaces(workloads.objs, cluster)
		notes = append(notes, n...)
		if len(workloads.objs) == 0 {
			return fmt.Errorf("%s: only namespaces: give a Deployment, StatefulSet, ReplicaSet, Job, DaemonSet or Pod", workloads.source)
		}
		if err := namespacesExist(ctx, cluster, client, workloads, namespace); err != nil {
			return err
		}
		more, n, err := simulate.Workloads(workloads.objs, namespace, cluster)
		if err != nil {
			return fmt.Errorf("%s: %w", workloads.source, err)
		}
		replicas, notes = append(replicas, more...), append(notes, n...)
	}
	if workloads == nil && drain == nil {
		cluster, replicas = simulate.PendingPods(cluster)
		if len(replicas) == 0 {
			notes = append(notes, "the cluster has no Pending pods: give -f for a workload or --drain for nodes to empty")
		}
	}

	schedName := ""
	if len(replicas) > 0 {
		schedName = replicas[0].Pod.Spec.SchedulerName
	}
	profile, err := explain.PickProfile(cfg.cfg, o.profile, schedName)
	if err != nil {
		return err
	}
	notes = append(notes, otherSchedulers(replicas, profile.SchedulerName)...)
	progress := o.progress(time.Now())
	res, err := simulate.Run(ctx, cluster, profile, replicas, simulate.Options{TopologyKey: o.by, Progress: progress})
	if err != nil {
		return fmt.Errorf("simulating: %w", err)
	}
	res.Config = cfg.source
	res.Warnings = append(res.Warnings, cfg.warnings...)
	res.Edits = edits
	res.Drain = drain
	res.Notes = append(append(res.Notes, cluster.Unseen...), notes...)
	if err := writeSimulation(o.streams.Out, res, o.output); err != nil {
		return err
	}
	if o.failIfPending && res.Pending > 0 {
		return fmt.Errorf("--fail-if-pending: %d of %d replica(s) would stay Pending", res.Pending, len(res.Replicas))
	}
	return nil
}

// workloadFile is -f decoded, and what to call it in errors.
type workloadFile struct {
	objs   []runtime.Object
	source string
}

// readWorkloads decodes -f; nil without it.
func (o *simulateOptions) readWorkloads() (*workloadFile, error) {
	if o.file == "" {
		return nil, nil
	}
	objs, source, err := o.readFile()
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no objects: give a Deployment, StatefulSet, ReplicaSet, Job, DaemonSet or Pod", source)
	}
	return &workloadFile{objs: objs, source: source}, nil
}

// namespacesExist: every workload's namespace is in the cluster (the
// apiserver would refuse to create it). Live, a namespace not among those
// read is asked for by name: a user who may not list namespaces may still
// get one, and one who may do neither is not refused for it.
func namespacesExist(ctx context.Context, c *explain.Cluster, client kubernetes.Interface, w *workloadFile, def string) error {
	known := map[string]bool{}
	for _, ns := range c.Namespaces {
		known[ns.Name] = true
	}
	for _, obj := range w.objs {
		m, ok := obj.(metav1.Object)
		if !ok {
			continue
		}
		ns := m.GetNamespace()
		if ns == "" {
			ns = def
		}
		if known[ns] {
			continue
		}
		if client != nil {
			_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err == nil || apierrors.IsForbidden(err) {
				known[ns] = true
				continue
			}
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("reading namespace %s: %w", ns, err)
			}
		}
		return fmt.Errorf("%s: %s %s is in namespace %q, which the cluster does not have: create it, or set -n / metadata.namespace", w.source, obj.GetObjectKind().GroupVersionKind().Kind, m.GetName(), ns)
	}
	return nil
}

// otherSchedulers notes replicas that ask for another scheduler than the
// profile they are placed with.
func otherSchedulers(replicas []simulate.Replica, profile string) []string {
	counts := map[string]int{}
	var names []string
	for _, r := range replicas {
		n := r.Pod.Spec.SchedulerName
		if n == "" {
			n = v1.DefaultSchedulerName
		}
		if n == profile {
			continue
		}
		if counts[n] == 0 {
			names = append(names, n)
		}
		counts[n]++
	}
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%d replica(s) ask for schedulerName %q: placed with profile %s, as that scheduler would only if it runs the same plugins", counts[n], n, profile))
	}
	return out
}

// progress returns the stderr progress callback for long runs.
func (o *simulateOptions) progress(start time.Time) func(done, total int) {
	last := start
	shown := false
	return func(done, total int) {
		if total < o.progressMin {
			return
		}
		now := time.Now()
		if done < total && now.Sub(last) < o.progressEvery {
			return
		}
		if done == total && !shown {
			return // a run that ended before the first line needs none
		}
		last, shown = now, true
		fmt.Fprintf(o.streams.ErrOut, "simulate: %d/%d replicas placed or judged (%s)\n", done, total, now.Sub(start).Round(time.Second))
	}
}

func writeSimulation(w io.Writer, res *simulate.Result, format string) error {
	switch format {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(res, w)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(res, w)
	default:
		return simulate.PrintTable(w, res)
	}
}

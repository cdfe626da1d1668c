package placementcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	"github.com/placement-scheduler/placement-scheduler/internal/simulate"
)

type simulateOptions struct {
	// explainOptions holds what simulate shares with explain: the
	// kubeconfig flags, snapshot, config and profile flags, -f and -o.
	explainOptions
	drain         simulate.DrainOptions
	by            string
	failIfPending bool
	edits         simulate.Edits
	// maxReplicas asks how many more replicas of -f's workload fit, at
	// most maxReplicasLimit (0: no limit).
	maxReplicas      bool
	maxReplicasLimit int
	// compareConfig and compareProfile name the second profile a
	// comparison runs the same what-if under.
	compareConfig  string
	compareProfile string
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
		Use:   "simulate [-f WORKLOAD [--max-replicas]] [--drain NODE | -l SELECTOR] [what-if edits] [--compare-config FILE | --compare-profile NAME] [--from-file SNAPSHOT] [-o table|json|yaml]",
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
               the nodes are cordoned and their pods judged as kubectl drain
               --ignore-daemonsets judges them (pods with emptyDir volumes
               need --delete-emptydir-data, pods without a controller
               --force: a refusal is shown as kubectl words it, then the
               drain with those flags); every pod a controller re-creates
               is placed elsewhere, in eviction order; DaemonSet, mirror,
               bare and finished pods are listed, and each
               PodDisruptionBudget: what it lets go now, what it holds, and
               a pod under several (the Eviction API never evicts it);
  neither      the cluster's Pending pods (e.g. with what-if edits: what
               would a new node or a relabelled pool change for them?).

What-if edits change the snapshot before anything is placed (NODE is a node
name or a label selector): --add-nodes N --like NODE, --label NODE:k=v,
--taint NODE:k=v:Effect, --cordon NODE, --remove-node NODE. Copies made with
--like are Ready and schedulable (cordon and node-condition taints cleared,
other taints kept) and get first the pods of every DaemonSet that would run
on them.

How many more fit: --max-replicas -f FILE places replicas of the file's one
workload until one stays Pending (its reason and breakdown follow) or
--max-replicas-limit is reached; it reports those that fit as the cluster is
(nothing preempted) and those the scheduler would add by preempting
lower-priority pods, per node and per --by value.

Another profile: --compare-config FILE (its profile of the same name, or its
only one) or --compare-profile NAME runs the same what-if again under that
profile, on its own copy of the snapshot, and lists the replicas that land
differently, with the Pending side's reason or each side's scores.

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
	f.StringSliceVar(&o.drain.Nodes, "drain", nil, "Nodes to drain (repeatable, comma-separated): their pods are placed elsewhere")
	f.StringVarP(&o.drain.Selector, "selector", "l", "", "Drain every node this label selector matches")
	f.BoolVar(&o.drain.DeleteEmptyDirData, "delete-emptydir-data", false, "With --drain: as kubectl drain's flag: evict pods with emptyDir volumes (refused without it)")
	f.BoolVar(&o.drain.Force, "force", false, "With --drain: as kubectl drain's flag: evict pods without a controller, for good (refused without it)")
	f.IntVar(&o.edits.AddNodes, "add-nodes", 0, "What-if: add N empty nodes like --like")
	f.StringVar(&o.edits.Like, "like", "", "What-if: the node --add-nodes copies (labels, operator taints, capacity), Ready and uncordoned, with its DaemonSet pods")
	f.StringArrayVar(&o.edits.Labels, "label", nil, "What-if: NODE:k=v[,k2-] relabels NODE (a name or label selector); repeatable")
	f.StringArrayVar(&o.edits.Taints, "taint", nil, "What-if: NODE:k=v:Effect taints NODE, NODE:k:Effect- removes it; repeatable")
	f.StringArrayVar(&o.edits.Cordon, "cordon", nil, "What-if: mark NODE unschedulable; repeatable")
	f.StringArrayVar(&o.edits.Remove, "remove-node", nil, "What-if: remove NODE and its pods; repeatable")
	f.StringVar(&o.by, "by", v1.LabelTopologyZone, "Node label to show per replica (e.g. kubernetes.io/hostname, or a pool label)")
	f.BoolVar(&o.maxReplicas, "max-replicas", false, "How many more replicas of -f's one workload fit: place them one by one until one stays Pending")
	f.IntVar(&o.maxReplicasLimit, "max-replicas-limit", simulate.DefaultCapacityLimit, "With --max-replicas, stop after this many replicas (0: no limit)")
	f.StringVar(&o.compareConfig, "compare-config", "", "Run the same what-if under this KubeSchedulerConfiguration too, and show the replicas that land differently")
	f.StringVar(&o.compareProfile, "compare-profile", "", "Run the same what-if under this profile too (of --compare-config, else of the config simulated)")
	f.BoolVar(&o.failIfPending, "fail-if-pending", false, "Exit non-zero when a replica would stay Pending, or a --drain would not finish (for CI)")
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
	if err := o.checkModes(); err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, logr.Discard())
	src, err := o.readCluster(ctx)
	if err != nil {
		return err
	}
	if src.offline && len(src.cluster.Namespaces) == 0 {
		return errors.New("the snapshot has no namespaces (affinity namespaceSelectors and namespace checks need them): dump them too, e.g. kubectl get nodes,pods,namespaces,pdb,priorityclasses -A -o yaml")
	}
	workloads, err := o.readWorkloads()
	if err != nil {
		return err
	}
	cfg, err := o.loadConfig(ctx, src.client)
	if err != nil {
		return err
	}
	cluster := src.cluster
	compare := o.compareConfig != "" || o.compareProfile != ""
	if compare {
		// Each side runs on its own copy; the original stays for the next.
		cluster = simulate.CopyCluster(src.cluster)
	}
	w, err := o.prepare(ctx, cluster, src, workloads)
	if err != nil {
		return err
	}
	schedName := w.schedulerName
	if len(w.replicas) > 0 {
		schedName = w.replicas[0].Pod.Spec.SchedulerName
	}
	profile, err := explain.PickProfile(cfg.cfg, o.profile, schedName)
	if err != nil {
		return err
	}
	opts := simulate.Options{TopologyKey: o.by, Progress: o.progress(time.Now())}
	var res *simulatev1alpha1.PlacementSimulation
	switch {
	case o.maxReplicas:
		var notes []string
		res, notes, err = simulate.MaxReplicas(ctx, w.cluster, profile, w.workload, src.namespace, o.maxReplicasLimit, opts)
		w.notes = append(w.notes, notes...)
	case compare:
		var other *config.KubeSchedulerProfile
		var otherCfg *judgedWith
		if otherCfg, other, err = o.otherProfile(cfg, profile, schedName); err != nil {
			return err
		}
		first := true
		res, err = simulate.Compare(func(p *config.KubeSchedulerProfile, opts simulate.Options) (*simulatev1alpha1.PlacementSimulation, error) {
			if first {
				first = false
				return simulate.Run(ctx, w.cluster, p, w.replicas, opts)
			}
			again, err := o.prepare(ctx, simulate.CopyCluster(src.cluster), src, workloads)
			if err != nil {
				return nil, err
			}
			return simulate.Run(ctx, again.cluster, p, again.replicas, opts)
		}, profile, other, opts)
		if err == nil {
			res.Comparison.Config = otherCfg.source
			res.Comparison.Result.Config = otherCfg.source
			res.Comparison.Result.Warnings = otherCfg.warnings
		}
	default:
		res, err = simulate.Run(ctx, w.cluster, profile, w.replicas, opts)
	}
	if err != nil {
		return fmt.Errorf("simulating: %w", err)
	}
	w.notes = append(w.notes, otherSchedulers(w.replicas, profile.SchedulerName)...)
	res.Config = cfg.source
	res.Warnings = append(res.Warnings, cfg.warnings...)
	res.Edits = w.edits
	if w.drain != nil {
		simulate.ConcludeDrain(w.drain, res)
		res.Drain = w.drain
	}
	res.Notes = append(append(res.Notes, w.cluster.Unseen...), w.notes...)
	if err := writeSimulation(o.streams.Out, res, o.output); err != nil {
		return err
	}
	if o.failIfPending && res.Pending > 0 {
		return fmt.Errorf("--fail-if-pending: %d of %d replica(s) would stay Pending", res.Pending, len(res.Replicas))
	}
	if d := res.Drain; o.failIfPending && d != nil && d.Status != simulatev1alpha1.DrainCompletes && d.Status != simulatev1alpha1.DrainWaits {
		return fmt.Errorf("--fail-if-pending: kubectl drain %s would not finish: %s", strings.Join(d.Flags, " "), d.Status)
	}
	return nil
}

// draining: --drain or -l names nodes to drain.
func (o *simulateOptions) draining() bool {
	return len(o.drain.Nodes) > 0 || o.drain.Selector != ""
}

// checkModes refuses flag combinations with no meaning, before anything
// is read.
func (o *simulateOptions) checkModes() error {
	if o.maxReplicasLimit < 0 {
		return fmt.Errorf("--max-replicas-limit %d: want 0 (no limit) or more", o.maxReplicasLimit)
	}
	if !o.draining() && (o.drain.DeleteEmptyDirData || o.drain.Force) {
		return errors.New("--delete-emptydir-data and --force judge a drain: give --drain NODE or -l SELECTOR with them")
	}
	if !o.maxReplicas {
		return nil
	}
	switch {
	case o.file == "":
		return errors.New("--max-replicas: give the workload to replicate with -f")
	case o.draining():
		return errors.New("--max-replicas counts replicas on the cluster as it is (with what-if edits): drop --drain/-l, or run the drain first and --max-replicas on its outcome")
	case o.compareConfig != "" || o.compareProfile != "":
		return errors.New("--max-replicas and --compare-config/--compare-profile: give one of them (compare the counts by running --max-replicas with each --profile or --config)")
	case o.failIfPending:
		return errors.New("--fail-if-pending with --max-replicas: the search always ends on a Pending replica: drop --fail-if-pending")
	}
	return nil
}

// simulated is what a run places and over which cluster, with what was
// done to the snapshot first.
type simulated struct {
	cluster  *explain.Cluster
	replicas []simulate.Replica
	// workload is --max-replicas' one workload, and schedulerName its
	// pods' (which picks the profile, as the first replica's does).
	workload      runtime.Object
	schedulerName string
	drain         *simulatev1alpha1.DrainReport
	edits         []string
	notes         []string
}

// prepare applies the what-if edits and the drain to cluster, and turns
// the workload file (or the cluster's Pending pods) into the replicas to
// place. cluster becomes the run's own: it is changed.
func (o *simulateOptions) prepare(ctx context.Context, cluster *explain.Cluster, src *source, workloads *workloadFile) (*simulated, error) {
	w := &simulated{cluster: cluster}
	var err error
	if !o.edits.Empty() {
		if w.cluster, w.edits, err = o.edits.Apply(w.cluster); err != nil {
			return nil, err
		}
	}
	if o.draining() {
		if w.cluster, w.replicas, w.drain, err = simulate.Drain(w.cluster, o.drain); err != nil {
			return nil, err
		}
	}
	if workloads != nil {
		var objs []runtime.Object
		var n []string
		objs, w.cluster, n = simulate.FileNamespaces(workloads.objs, w.cluster)
		w.notes = append(w.notes, n...)
		if len(objs) == 0 {
			return nil, fmt.Errorf("%s: only namespaces: give a Deployment, StatefulSet, ReplicaSet, Job, DaemonSet or Pod", workloads.source)
		}
		if err := namespacesExist(ctx, w.cluster, src.client, &workloadFile{objs: objs, source: workloads.source}, src.namespace); err != nil {
			return nil, err
		}
		if o.maxReplicas {
			if len(objs) != 1 {
				return nil, fmt.Errorf("%s: --max-replicas replicates one workload, the file has %d: give a file with one", workloads.source, len(objs))
			}
			w.workload = objs[0]
			if _, ok := objs[0].(*appsv1.DaemonSet); ok {
				return nil, fmt.Errorf("%s: --max-replicas: a DaemonSet runs one pod per node, not a replica count: give a Deployment, StatefulSet, ReplicaSet, Job or Pod", workloads.source)
			}
			// Bad input fails here, naming the file, before anything is
			// placed: a trial replica over the cluster's PriorityClasses.
			trial := &explain.Cluster{Others: slices.Clip(w.cluster.Others)}
			replicas, _, err := simulate.Workloads([]runtime.Object{objs[0].DeepCopyObject()}, src.namespace, trial)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", workloads.source, err)
			}
			if len(replicas) > 0 {
				w.schedulerName = replicas[0].Pod.Spec.SchedulerName
			}
			return w, nil
		}
		more, n, err := simulate.Workloads(objs, src.namespace, w.cluster)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", workloads.source, err)
		}
		w.replicas, w.notes = append(w.replicas, more...), append(w.notes, n...)
	}
	if workloads == nil && w.drain == nil {
		w.cluster, w.replicas = simulate.PendingPods(w.cluster)
		if len(w.replicas) == 0 {
			w.notes = append(w.notes, "the cluster has no Pending pods: give -f for a workload or --drain for nodes to empty")
		}
	}
	return w, nil
}

// otherProfile is the profile a comparison runs second: --compare-profile
// of --compare-config (default: the config simulated), else the profile of
// --compare-config picked as the first one was.
func (o *simulateOptions) otherProfile(cfg *judgedWith, first *config.KubeSchedulerProfile, schedName string) (*judgedWith, *config.KubeSchedulerProfile, error) {
	other := cfg
	if o.compareConfig != "" {
		data, err := os.ReadFile(o.compareConfig)
		if err != nil {
			return nil, nil, fmt.Errorf("--compare-config: %w", err)
		}
		c, err := profile.LoadConfig(data, "--compare-config "+o.compareConfig)
		if err != nil {
			return nil, nil, err
		}
		other = &judgedWith{cfg: c, source: "--compare-config " + o.compareConfig}
	}
	name := o.compareProfile
	if name == "" && o.compareConfig != "" {
		name = first.SchedulerName
		if len(other.cfg.Profiles) == 1 {
			name = other.cfg.Profiles[0].SchedulerName
		}
	}
	p, err := explain.PickProfile(other.cfg, name, schedName)
	if err != nil {
		return nil, nil, fmt.Errorf("--compare-profile: %w", err)
	}
	if o.compareConfig == "" && p.SchedulerName == first.SchedulerName {
		return nil, nil, fmt.Errorf("--compare-profile %s is the profile simulated: name another of %s, or give --compare-config", p.SchedulerName, cfg.source)
	}
	return other, p, nil
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

func writeSimulation(w io.Writer, res *simulatev1alpha1.PlacementSimulation, format string) error {
	return writeAs(w, res, format, func() error { return simulate.PrintTable(w, res) })
}

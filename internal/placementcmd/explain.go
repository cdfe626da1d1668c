package placementcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

type explainOptions struct {
	flags              *genericclioptions.ConfigFlags
	streams            genericiooptions.IOStreams
	file               string
	fromFile           []string
	fromDir            string
	config             string
	profile            string
	output             string
	schedulerNamespace string
	// build is the plugin's release, whose archives a skew warning names.
	build BuildInfo
	// newClient builds the client from the kubeconfig flags; tests give a
	// fake one.
	newClient func() (kubernetes.Interface, error)
}

// newExplain is the explain verb; newClient, when not nil, replaces the
// kubeconfig-built client (tests).
func newExplain(streams genericiooptions.IOStreams, build BuildInfo, newClient func() (kubernetes.Interface, error)) *cobra.Command {
	o := &explainOptions{flags: genericclioptions.NewConfigFlags(true), streams: streams, build: build, newClient: newClient}
	if o.newClient == nil {
		o.newClient = o.client
	}
	cmd := &cobra.Command{
		Use:   "explain (POD | -f FILE) [-n NAMESPACE] [--from-file SNAPSHOT | --from-dir DIR] [--config FILE] [-o table|wide|json|yaml]",
		Short: "Why a pod is Pending, or why it landed where it did: per node, per plugin, per term",
		Long: `Runs the scheduler's real framework, built from the placement-scheduler profile,
over the cluster: every filter plugin on every node, every score plugin on the
feasible nodes. Read-only; a pod given with -f is not created.

The profile is --config, else the installed scheduler's ConfigMap (in
--scheduler-namespace), else the shipped default; the output names the one
used and warns on the fallback. The cluster is the live one (kubeconfig
flags), or an offline snapshot: --from-file/--from-dir with the output of e.g.
kubectl get nodes,pods,namespaces,pdb,priorityclasses -A -o yaml.

Live, it needs list on nodes; pods and other namespaced objects are read
across namespaces when allowed, else in -n only, and the output says what it
could not see. For a pod no node fits, it dry-runs preemption: nothing is
evicted or nominated.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args)
		},
	}
	o.flags.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "What-if: a Pod, or a Deployment/ReplicaSet/StatefulSet/DaemonSet/Job whose pod template is explained (- for stdin); not created")
	o.addSourceFlags(cmd, "Profile (schedulerName) to use when the config has several (default: the pod's schedulerName)")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "Output format: table, wide, json or yaml")
	return cmd
}

func (o *explainOptions) run(ctx context.Context, args []string) error {
	switch o.output {
	case "table", "wide", "json", "yaml":
	default:
		return fmt.Errorf("-o %q: want table, wide, json or yaml", o.output)
	}
	if (len(args) == 1) == (o.file != "") {
		return errors.New("name exactly one pod: either POD or -f FILE")
	}
	// Plugins log through the context; the explanation is the output.
	ctx = klog.NewContext(ctx, logr.Discard())
	src, err := o.readCluster(ctx)
	if err != nil {
		return err
	}
	cluster, client, namespace := src.cluster, src.client, src.namespace

	var pod *v1.Pod
	var podNotes []string
	if o.file != "" {
		if pod, err = o.podFromFile(namespace); err == nil {
			podNotes, err = explain.ResolvePriority(pod, cluster)
		}
	} else {
		pod, err = findPod(cluster, namespace, args[0])
	}
	if err != nil {
		return err
	}

	cfg, err := o.loadConfig(ctx, client)
	if err != nil {
		return err
	}
	profile, err := explain.PickProfile(cfg.cfg, o.profile, pod.Spec.SchedulerName)
	if err != nil {
		return err
	}
	res, err := explain.Explain(ctx, pod, cluster, profile)
	if err != nil {
		return fmt.Errorf("explaining %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	res.Config = cfg.source
	res.Warnings = append(res.Warnings, cfg.warnings...)
	res.Notes = append(res.Notes, podNotes...)
	return write(o.streams.Out, res, o.output)
}

// write prints res in the requested format.
func write(w io.Writer, res *explainv1alpha1.PlacementExplanation, format string) error {
	return writeAs(w, res, format, func() error { return explain.PrintTable(w, res, format == "wide") })
}

// writeAs prints obj as -o json or yaml asks, else as table prints it.
func writeAs(w io.Writer, obj runtime.Object, format string, table func() error) error {
	switch format {
	case "json":
		return (&printers.JSONPrinter{}).PrintObj(obj, w)
	case "yaml":
		return (&printers.YAMLPrinter{}).PrintObj(obj, w)
	default:
		return table()
	}
}

func (o *explainOptions) podFromFile(namespace string) (*v1.Pod, error) {
	objs, source, err := o.readFile()
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: want exactly one object (a Pod or a workload), found %d", source, len(objs))
	}
	pod, err := explain.PodOf(objs[0])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if o.flags.Namespace != nil && *o.flags.Namespace != "" || pod.Namespace == "" {
		pod.Namespace = namespace
	}
	if pod.Name == "" {
		pod.Name = "what-if"
	}
	explain.MergeMatchLabelKeys(pod)
	return pod, nil
}

func findPod(c *explain.Cluster, namespace, name string) (*v1.Pod, error) {
	for _, p := range c.Pods {
		if p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("pod %q not found in namespace %q: check the name and -n", name, namespace)
}

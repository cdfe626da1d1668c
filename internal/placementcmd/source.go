package placementcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// In-cluster location of the installed scheduler's configuration: the
// kustomize base's generated ConfigMap (manifests/base/kustomization.yaml), or
// the chart's, which carries the same label and key; the namespace is
// --scheduler-namespace.
const (
	installNamespace = "placement-scheduler"
	installSelector  = "app.kubernetes.io/part-of=placement-scheduler"
	configKey        = "scheduler-config.yaml"
)

// shippedConfig names the config this build ships for its line: the newest
// line's manifests/scheduler-config.yaml, an older line's
// manifests/lines/k8s-<minor>/scheduler-config.yaml.
func shippedConfig() string {
	return "the shipped " + path.Join("manifests", manifests.Base(), configKey)
}

// addSourceFlags adds the flags saying where the cluster and the profile
// come from, which explain and simulate share.
func (o *explainOptions) addSourceFlags(cmd *cobra.Command, profileUsage string) {
	f := cmd.Flags()
	f.StringSliceVar(&o.fromFile, "from-file", nil, "Offline snapshot: YAML/JSON file(s) of nodes, pods, namespaces (and PVCs, StorageClasses, PDBs, PriorityClasses...) instead of the live cluster")
	f.StringVar(&o.fromDir, "from-dir", "", "Offline snapshot: every .yaml, .yml and .json file in this directory")
	f.StringVar(&o.config, "config", "", "KubeSchedulerConfiguration file (default: the installed scheduler's ConfigMap, else the shipped profile)")
	f.StringVar(&o.profile, "profile", "", profileUsage)
	f.StringVar(&o.schedulerNamespace, "scheduler-namespace", installNamespace, "Namespace of the installed scheduler, whose ConfigMap holds its KubeSchedulerConfiguration")
}

// source is where the cluster was read from: the snapshot (client nil)
// or the live cluster, and the namespace commands default to.
type source struct {
	cluster   *explain.Cluster
	client    kubernetes.Interface
	namespace string
	offline   bool
}

// readCluster reads the offline snapshot or the live cluster, read-only.
func (o *explainOptions) readCluster(ctx context.Context) (*source, error) {
	if len(o.fromFile) > 0 && o.fromDir != "" {
		return nil, errors.New("--from-file and --from-dir: give only one")
	}
	src := &source{offline: len(o.fromFile) > 0 || o.fromDir != ""}
	var err error
	if src.namespace, err = o.namespace(src.offline); err != nil {
		return nil, err
	}
	if src.offline {
		src.cluster, err = o.loadSnapshot()
		return src, err
	}
	if src.client, err = o.newClient(); err != nil {
		return nil, err
	}
	if src.cluster, err = liveCluster(ctx, src.client, src.namespace); err != nil {
		return nil, err
	}
	// Only once the cluster answered: an unreachable one gets its own
	// error, not a warning besides.
	warnSkew(o.streams.ErrOut, src.client.Discovery(), o.build)
	return src, nil
}

func (o *explainOptions) client() (kubernetes.Interface, error) {
	rc, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no usable kubeconfig (%v): set --kubeconfig/--context, or use --from-file for a snapshot", err)
	}
	return kubernetes.NewForConfig(rc)
}

// namespace is -n, else the kubeconfig context's namespace (live only),
// else "default".
func (o *explainOptions) namespace(offline bool) (string, error) {
	if o.flags.Namespace != nil && *o.flags.Namespace != "" {
		return *o.flags.Namespace, nil
	}
	if offline {
		return metav1.NamespaceDefault, nil
	}
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("kubeconfig namespace: %w", err)
	}
	return ns, nil
}

// readFile decodes -f (- is stdin), and names it for errors.
func (o *explainOptions) readFile() ([]runtime.Object, string, error) {
	var r io.Reader = o.streams.In
	source := "stdin"
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return nil, "", fmt.Errorf("-f: %w", err)
		}
		defer f.Close()
		r, source = f, o.file
	}
	objs, err := explain.DecodeObjects(r, source)
	return objs, source, err
}

func (o *explainOptions) loadSnapshot() (*explain.Cluster, error) {
	files := o.fromFile
	if o.fromDir != "" {
		entries, err := os.ReadDir(o.fromDir)
		if err != nil {
			return nil, fmt.Errorf("--from-dir: %w", err)
		}
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				files = append(files, filepath.Join(o.fromDir, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("--from-dir %s: no .yaml, .yml or .json files", o.fromDir)
		}
	}
	var all []runtime.Object
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("snapshot: %w", err)
		}
		objs, err := explain.DecodeSnapshot(fh, f)
		fh.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	c := explain.ClusterFrom(all)
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("snapshot %s has no nodes: dump them with kubectl get nodes,pods,namespaces -A -o yaml", strings.Join(files, ", "))
	}
	return c, nil
}

// judgedWith is the configuration explain judges with, where it came
// from, and warnings when that may not be the running scheduler's.
type judgedWith struct {
	cfg      *config.KubeSchedulerConfiguration
	source   string
	warnings []string
}

// loadConfig: --config, else the installed scheduler's ConfigMap (live
// only), else the shipped default, with a warning saying why.
func (o *explainOptions) loadConfig(ctx context.Context, client kubernetes.Interface) (*judgedWith, error) {
	load := func(data []byte, source string, warnings ...string) (*judgedWith, error) {
		cfg, err := profile.LoadConfig(data, source)
		if err != nil {
			return nil, err
		}
		return &judgedWith{cfg: cfg, source: source, warnings: warnings}, nil
	}
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		return load(data, "--config "+o.config)
	}
	why := "an offline snapshot carries none (give --config)"
	if client != nil {
		ns := o.schedulerNamespace
		cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: installSelector})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("reading the installed scheduler's ConfigMap in --scheduler-namespace %s: %w", ns, err)
		}
		switch {
		case apierrors.IsForbidden(err):
			why = fmt.Sprintf("ConfigMaps in namespace %s are not readable; give --config, or --scheduler-namespace if the scheduler runs elsewhere", ns)
		case err != nil:
			why = fmt.Sprintf("no scheduler ConfigMap in namespace %s; give --scheduler-namespace if the scheduler runs elsewhere, or --config", ns)
		default:
			why = fmt.Sprintf("no ConfigMap labelled %s with key %s in namespace %s; give --scheduler-namespace if the scheduler runs elsewhere, or --config", installSelector, configKey, ns)
			// kustomize suffixes the name with a content hash; an upgrade
			// without --prune leaves older ones: the newest is in use.
			items := cms.Items
			sort.Slice(items, func(i, j int) bool {
				return items[j].CreationTimestamp.Before(&items[i].CreationTimestamp)
			})
			for _, cm := range items {
				if data, ok := cm.Data[configKey]; ok {
					return load([]byte(data), fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name))
				}
			}
		}
	}
	return load(manifests.SchedulerConfig(), shippedConfig(),
		"judged with "+shippedConfig()+", which may not be the running scheduler's config: "+why)
}

// Command devcluster is what `make run` and `make demo` run: a local cluster
// that behaves like a real one (etcd, kube-apiserver, kube-controller-manager,
// upstream kube-scheduler and KWOK playing the kubelet for fake nodes, all
// built from our module graph by `make controlplane`) and placement-scheduler
// beside the default scheduler, brought up by test/framework exactly as
// test/examples does. Ctrl-C stops everything. No cluster needed.
//
// With -demo it applies the fleet, asks `kubectl placement simulate` where
// one example's replicas would go before applying anything, applies every
// manifests/examples scenario, waits for what each README promises, prints
// where everything landed, asks docs/simulate.md's what-ifs of the running
// fleet (every mode of simulate) and stops; it fails if any example did not
// do what its README says, the scheduler did not place the simulated
// example where simulate said, or a what-if could not be answered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/examples"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run() error {
	scheduler := flag.String("scheduler", "bin/placement-scheduler", "placement-scheduler binary")
	config := flag.String("config", "", "KubeSchedulerConfiguration to run (default: the shipped manifests/scheduler-config.yaml)")
	dir := flag.String("dir", ".run", "where to write keys, kubeconfig, configs and one log per process")
	demo := flag.Bool("demo", false, "apply the fleet and every manifests/examples scenario, check them, print the placement table and stop")
	enforcerBin := flag.String("enforcer", "", "placement-enforcer binary to run beside the scheduler (empty: none)")
	flag.Parse()
	extraArgs := flag.Args() // passed through to placement-scheduler, after ours

	var cfg []byte // nil: the shipped config
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return fmt.Errorf("-config: %w", err)
		}
		cfg = b
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	fmt.Println("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and KWOK ...")
	env, err := framework.Start(framework.Options{
		Dir:     *dir,
		Binary:  *scheduler,
		Cluster: &framework.ClusterOptions{DefaultScheduler: true, KWOK: true},
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("stopping placement-scheduler, KWOK, kube-scheduler, kube-controller-manager, kube-apiserver and etcd ...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster: stopping:", err)
		}
	}()
	opts := framework.SchedulerOptions{Name: "devcluster", Config: cfg, Args: extraArgs}
	if !*demo {
		opts.Output = os.Stdout
	}
	sched, err := env.LaunchScheduler(opts)
	if err != nil {
		return err
	}
	defer sched.Stop()
	// kubectl placement violations reaches an enforcer that is not a pod
	// at the URL, and verifies its certificate, these name.
	enforcerEnv := ""
	if *enforcerBin != "" {
		enf, err := startEnforcer(*enforcerBin, env, cfg, *dir)
		if err != nil {
			return err
		}
		defer enf.Stop()
		fmt.Printf("placement-enforcer runs beside it (log %s; %s/violations)\n", enf.LogPath(), enf.URL())
		enforcerEnv = fmt.Sprintf(" \\\n        PLACEMENT_ENFORCER_URL=%s PLACEMENT_ENFORCER_CA_FILE=%s", enf.URL(), enf.CAFile())
	}
	if err := publishConfig(ctx, env, cfg); err != nil {
		return err
	}
	fmt.Printf("cluster is up after %s: %s (component logs in %s)\n", time.Since(start).Round(100*time.Millisecond), env.Config.Host, *dir)

	if *demo {
		return runDemo(ctx, env)
	}
	fmt.Printf(`
kube-controller-manager runs the workload, namespace, garbage-collector,
node-lifecycle and taint-eviction controllers; KWOK plays the kubelet for
nodes annotated %s=%s; kube-scheduler places pods that name no scheduler.
placement-scheduler is starting, secure port %d (its output follows; Ctrl-C
stops everything). In another terminal (make controlplane built bin/kubectl):

    export KUBECONFIG=%s%s
    bin/kubectl apply -f manifests/examples/fleet/
    bin/kubectl apply -f manifests/examples/node-selector/
    bin/kubectl get pods -A -o wide

`, framework.KWOKNodeAnnotation, framework.KWOKNodeValue, sched.Port(), env.Kubeconfig, enforcerEnv)

	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-sched.Done():
			if ctx.Err() != nil {
				return nil // a terminal's Ctrl-C reached it too
			}
			// The scheduler exited by itself (bad config, lost lease, ...).
			return fmt.Errorf("placement-scheduler exited: %v", sched.Err())
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := env.Exited(); err != nil {
				return err
			}
		}
	}
}

// publishConfig stores the scheduler config placement-scheduler runs with
// where an install keeps it (manifests/: a ConfigMap labelled
// app.kubernetes.io/part-of=placement-scheduler in namespace
// placement-scheduler), so that `kubectl placement explain` judges with the
// running config, not the shipped default (which it would say, with a
// warning).
func publishConfig(ctx context.Context, env *framework.Env, cfg []byte) error {
	if cfg == nil {
		cfg = manifests.SchedulerConfig()
	}
	client, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	const ns = "placement-scheduler"
	labels := map[string]string{"app.kubernetes.io/part-of": "placement-scheduler"}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s for the scheduler config: %w", ns, err)
	}
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "placement-scheduler-config", Namespace: ns, Labels: labels},
		Data:       map[string]string{"scheduler-config.yaml": string(cfg)},
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing the scheduler config in ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	return nil
}

// runDemo applies the fleet and every example, waits for what each
// promises, prints where everything landed and fails if any example did not
// do what its README says.
func runDemo(ctx context.Context, env *framework.Env) error {
	start := time.Now()
	fsys := manifests.Examples()
	exs, err := examples.Load(fsys)
	if err != nil {
		return err
	}
	r, err := examples.NewRunner(env.Config)
	if err != nil {
		return err
	}
	fmt.Println("applying the fleet (manifests/examples/fleet) and waiting for KWOK to make it Ready ...")
	if err := r.ApplyFleet(ctx, fsys); err != nil {
		return err
	}
	whatIf, err := simulateFirst(ctx, env, fsys, whatIfExample)
	if err != nil {
		return err
	}
	fmt.Printf("\napplying %d examples and waiting for what each README promises ...\n", len(exs))
	results := r.RunAll(ctx, exs)
	rows, err := r.Placements(ctx, exs)
	if err != nil {
		return err
	}
	// The what-if holds the scheduler to its word: where simulate put each
	// replica is where it landed, node for node (the example's constraints
	// leave one node per replica, so no tie-break can differ).
	if got := placed(rows, whatIfExample); !slices.Equal(got, whatIf) {
		err := fmt.Errorf("%s: kubectl placement simulate said %v, the scheduler placed %v", whatIfExample, whatIf, got)
		results[whatIfExample] = errors.Join(results[whatIfExample], err)
	}
	fmt.Println()
	if err := examples.PrintTable(os.Stdout, rows, results); err != nil {
		return err
	}
	whatIfErr := askWhatIfs(ctx, env)
	var failed []error
	for _, ex := range exs {
		if err := results[ex.Name]; err != nil {
			failed = append(failed, err)
		}
	}
	fmt.Printf("\n%d/%d examples placed as their README says (%s after the cluster was up).\n",
		len(exs)-len(failed), len(exs), time.Since(start).Round(100*time.Millisecond))
	return errors.Join(append(failed, whatIfErr)...)
}

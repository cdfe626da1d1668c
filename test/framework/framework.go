// Package framework runs placement-scheduler for real: a local etcd and
// kube-apiserver (controller-runtime's envtest, with the binaries
// `make controlplane` built from our own module graph into bin/), the
// placement-scheduler binary launched with a KubeSchedulerConfiguration, the
// kustomize base installed with kubectl or the Helm chart with helm, and the
// waits a test needs, each polling until a deadline and saying what it
// waited for. With Options.Cluster it is a cluster that behaves like a real
// one (cluster.go): kube-controller-manager, the upstream kube-scheduler and
// KWOK as well.
//
// One Env serves one test binary (Main, from TestMain); each test works in
// its own namespace (NewNamespace) and its helpers remove, in t.Cleanup, only
// what that test created. `make run` (hack/devcluster) brings up the same
// control plane with the same Start.
//
//	var env *framework.Env
//
//	func TestMain(m *testing.M) {
//		os.Exit(framework.Main(m, framework.Options{}, func(e *framework.Env) (func(), error) {
//			env = e
//			return nil, nil
//		}))
//	}
package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Environment variables Start reads when Options leaves a field empty; the
// Makefile sets both.
const (
	// AssetsEnv names the directory holding kube-apiserver, etcd and kubectl,
	// as envtest and setup-envtest spell it.
	AssetsEnv = "KUBEBUILDER_ASSETS"
	// BinaryEnv names the placement-scheduler binary under test.
	BinaryEnv = "PLACEMENT_SCHEDULER_BIN"
)

// What the kustomize base installs and the shipped config leads on, by name.
const (
	// Namespace holds the install and the leader-election lease.
	Namespace = "placement-scheduler"
	// Name is the ServiceAccount, Deployment and Lease name.
	Name = "placement-scheduler"
)

// DefaultTimeout is how long the wait helpers poll unless Options.Timeout
// says otherwise: generous, because the test binary shares a CI machine's
// few cores with etcd and the apiserver.
const DefaultTimeout = 60 * time.Second

const pollInterval = 100 * time.Millisecond

// Options configures Start. The zero value suits `go test` run by make or by
// hand.
type Options struct {
	// Dir is the scratch directory (kubeconfig, scheduler configs and logs).
	// Empty: a temporary directory that Stop removes.
	Dir string
	// AssetsDir holds kube-apiserver, etcd and kubectl. Empty:
	// $KUBEBUILDER_ASSETS, else the module's bin/.
	AssetsDir string
	// Binary is the placement-scheduler under test. Empty:
	// $PLACEMENT_SCHEDULER_BIN, else Start builds ./cmd/scheduler into Dir
	// rather than test something stale.
	Binary string
	// Timeout bounds every wait helper. Zero: DefaultTimeout.
	Timeout time.Duration
	// Cluster, if set, makes it a full cluster (cluster.go):
	// kube-controller-manager, optionally upstream kube-scheduler and KWOK.
	Cluster *ClusterOptions
	// AuditPolicy, if set, is an audit.k8s.io/v1 Policy the apiserver logs
	// requests by, as JSON lines into Env.AuditLog: the apiserver's own
	// record of what clients did (every binding, say), which survives the
	// clients being killed.
	AuditPolicy []byte
}

// Env is a running control plane and what tests need to use it. Its fields
// are set by Start and read-only afterwards.
type Env struct {
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Client is an admin clientset.
	Client kubernetes.Interface
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// Binary is the placement-scheduler under test.
	Binary string
	// Timeout bounds every wait helper.
	Timeout time.Duration
	// AuditLog is the apiserver's audit log (Options.AuditPolicy), or "".
	AuditLog string

	dir       string
	removeDir bool
	assets    string
	testenv   *envtest.Environment
	dynamic   dynamic.Interface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	shared    sharedScheduler
	// Full cluster only (cluster.go).
	serviceAccountKey string
	components        []*process
	// Control-plane processes stopped or restarted in place
	// (controlplane.go), by binary name.
	stopped   map[string]stoppedProcess
	restarted map[string]*process
}

// Start brings up etcd and kube-apiserver and creates the namespace the
// shipped config's leader-election lease lives in (an install creates it;
// here there may be none). Without Options.Cluster the apiserver runs
// without the TaintNodesByCondition admission plugin: there is no node
// lifecycle controller to remove the not-ready taint it puts on every new
// node, so nodes would never be schedulable; and without ServiceAccount
// admission, which would reject every pod: no controller creates each
// namespace's default ServiceAccount here. With Options.Cluster both stay
// on, because those controllers run.
func Start(opts Options) (_ *Env, err error) {
	e := &Env{Binary: opts.Binary, Timeout: opts.Timeout, dir: opts.Dir, assets: opts.AssetsDir,
		stopped: map[string]stoppedProcess{}, restarted: map[string]*process{}}
	if e.Timeout == 0 {
		e.Timeout = DefaultTimeout
	}
	if e.dir == "" {
		if e.dir, err = os.MkdirTemp("", "placement-scheduler-"); err != nil {
			return nil, err
		}
		e.removeDir = true
	} else if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && e.removeDir {
			os.RemoveAll(e.dir)
		}
	}()
	if e.dir, err = filepath.Abs(e.dir); err != nil {
		return nil, err
	}
	if err := e.findAssets(); err != nil {
		return nil, err
	}
	if err := e.findBinary(); err != nil {
		return nil, err
	}

	e.testenv = &envtest.Environment{BinaryAssetsDirectory: e.assets}
	apiserverArgs := e.testenv.ControlPlane.GetAPIServer().Configure()
	if err := e.configureRequestHeader(apiserverArgs); err != nil {
		return nil, err
	}
	if opts.Cluster != nil {
		if err := e.configureAPIServer(apiserverArgs); err != nil {
			return nil, err
		}
	} else {
		apiserverArgs.Set("disable-admission-plugins", "ServiceAccount", "TaintNodesByCondition")
	}
	if opts.AuditPolicy != nil {
		policy := filepath.Join(e.dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, opts.AuditPolicy, 0o644); err != nil {
			return nil, err
		}
		e.AuditLog = filepath.Join(e.dir, "audit.log")
		apiserverArgs.Set("audit-policy-file", policy)
		apiserverArgs.Set("audit-log-path", e.AuditLog)
		// Never rotated (the default rotates at 100 MB): a test reads the
		// whole record from this one file.
		apiserverArgs.Set("audit-log-maxsize", "0")
	}
	if e.Config, err = e.testenv.Start(); err != nil {
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", e.assets, err)
	}
	defer func() {
		if err != nil {
			_ = e.stopComponents()
			_ = e.testenv.Stop()
		}
	}()
	e.Kubeconfig = filepath.Join(e.dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, e.testenv.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	if e.Client, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	if e.dynamic, err = dynamic.NewForConfig(e.Config); err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	e.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := e.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	if opts.Cluster != nil {
		if err := e.startCluster(context.Background(), *opts.Cluster); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Stop stops the shared scheduler, if any, then the full cluster's
// components (KWOK, kube-scheduler, kube-controller-manager), then
// kube-apiserver and etcd (a restarted one in envtest's order), and
// removes the scratch directory if Start made it.
func (e *Env) Stop() error {
	e.StopSharedScheduler()
	err := errors.Join(e.stopComponents(), e.stopRestarted(APIServerProcess), e.testenv.Stop(), e.stopRestarted(EtcdProcess))
	if e.removeDir {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}

// Main is a TestMain's body for a test binary whose tests share one Env:
// it starts the control plane with opts, hands it to setup (which keeps it
// for the tests and may start more on it, returning what stops that, or
// nil), runs the tests, then stops what setup started and the control
// plane. It returns the exit code for os.Exit; a failure to start is
// printed to stderr and exits 1.
func Main(m *testing.M, opts Options, setup func(*Env) (stop func(), err error)) int {
	env, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}()
	stop, err := setup(env)
	if stop != nil {
		defer stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// toolPath is the path of a control-plane tool ("kubectl", "etcd",
// "kube-apiserver") in the assets directory.
func (e *Env) toolPath(name string) string { return filepath.Join(e.assets, name) }

func (e *Env) findAssets() error {
	if e.assets == "" {
		e.assets = os.Getenv(AssetsEnv)
	}
	if e.assets == "" {
		root, err := moduleRoot()
		if err != nil {
			return fmt.Errorf("%s is not set and the module root is unknown (%w): run `make controlplane` and point %s at bin/", AssetsEnv, err, AssetsEnv)
		}
		e.assets = filepath.Join(root, "bin")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(e.assets, bin)); err != nil {
			return fmt.Errorf("control-plane assets %s have no %s: run `make controlplane-envtest` (or set %s): %w", e.assets, bin, AssetsEnv, err)
		}
	}
	return nil
}

func (e *Env) findBinary() error {
	if e.Binary == "" {
		e.Binary = os.Getenv(BinaryEnv)
	}
	if e.Binary != "" {
		if _, err := os.Stat(e.Binary); err != nil {
			return fmt.Errorf("placement-scheduler binary: %w (run `make build` or set %s)", err, BinaryEnv)
		}
		return nil
	}
	e.Binary = filepath.Join(e.dir, "placement-scheduler")
	build := exec.Command("go", "build", "-o", e.Binary, "github.com/placement-scheduler/placement-scheduler/cmd/scheduler")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building placement-scheduler (set %s to use a built one): %w\n%s", BinaryEnv, err, out)
	}
	return nil
}

// moduleRoot is the directory of this module's go.mod, asked of the go
// command, so the answer does not depend on the caller's working directory
// within the module.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

package framework

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// KWOK manages the nodes annotated KWOKNodeAnnotation=KWOKNodeValue and
// leaves every other node alone, so a test may still create API-only nodes
// (SchedulableNode) beside fake ones.
const (
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	KWOKNodeValue      = "fake"
)

// DefaultControllers are the kube-controller-manager controllers a full
// cluster runs: the workload controllers that create pods, the ones that
// keep namespaces, owners and service accounts working, and the node
// lifecycle and taint-eviction controllers that taint NotReady nodes and
// evict pods from NoExecute taints after tolerationSeconds, the
// disruption controller, without which every PodDisruptionBudget answers
// 429 to every eviction, and the volume controllers a pod with a generic
// ephemeral volume needs: the ephemeral-volume controller creates its
// claim, the binder completes the binding the scheduler picks, the
// protection controllers let claims and volumes go once unused.
func DefaultControllers() []string {
	return []string{
		"deployment-controller",
		"replicaset-controller",
		"job-controller",
		"cronjob-controller",
		"statefulset-controller",
		"daemonset-controller",
		"namespace-controller",
		"garbage-collector-controller",
		"node-lifecycle-controller",
		"taint-eviction-controller",
		"disruption-controller",
		"pod-garbage-collector-controller",
		"serviceaccount-controller",
		"serviceaccount-token-controller",
		"root-ca-certificate-publisher-controller",
		"clusterrole-aggregation-controller",
		"ttl-after-finished-controller",
		"ephemeral-volume-controller",
		"persistentvolume-binder-controller",
		"persistentvolumeclaim-protection-controller",
		"persistentvolume-protection-controller",
	}
}

// ClusterOptions (Options.Cluster) turns the control plane into a cluster
// that behaves like a real one: kube-controller-manager always, upstream
// kube-scheduler and KWOK on request. Their binaries come from the assets
// directory (`make controlplane` builds them from go.mod's tool directives).
type ClusterOptions struct {
	// Controllers for kube-controller-manager; empty: DefaultControllers().
	Controllers []string
	// DefaultScheduler runs upstream kube-scheduler, which places every pod
	// whose schedulerName is default-scheduler (the default).
	DefaultScheduler bool
	// KWOK plays the kubelet for nodes annotated KWOKNodeAnnotation: Ready
	// conditions, node leases, bound pods Running, deleted pods gone.
	KWOK bool
}

// configureAPIServer sets the apiserver flags a full cluster needs on top
// of envtest's: every default admission plugin on, and service-account
// tokens signed with a key pair generated here, whose private half
// kube-controller-manager also gets.
func (e *Env) configureAPIServer(args *envtest.Arguments) error {
	key, pub, err := writeServiceAccountKeys(e.dir)
	if err != nil {
		return err
	}
	e.serviceAccountKey = key
	// ServiceAccount admission works (the serviceaccount controller creates
	// default accounts) and TaintNodesByCondition's not-ready taint is lifted
	// by the node lifecycle controller once KWOK reports Ready.
	args.Disable("disable-admission-plugins")
	args.Set("service-account-issuer", "https://kubernetes.default.svc.cluster.local")
	args.Set("service-account-key-file", pub)
	args.Set("service-account-signing-key-file", key)
	return nil
}

// startCluster launches kube-controller-manager (its controllers using
// their own service-account credentials) and what opts asks for, then waits
// until each holds its leader lease and the serviceaccount controller has
// created the default namespace's account.
func (e *Env) startCluster(ctx context.Context, opts ClusterOptions) error {
	bins := []string{"kube-controller-manager"}
	if opts.DefaultScheduler {
		bins = append(bins, "kube-scheduler")
	}
	if opts.KWOK {
		bins = append(bins, "kwok")
	}
	for _, bin := range bins {
		if _, err := os.Stat(e.toolPath(bin)); err != nil {
			return fmt.Errorf("control-plane assets %s have no %s: run `make controlplane-cluster` (or set %s): %w", e.assets, bin, AssetsEnv, err)
		}
	}
	// Each component gets its own client certificate, as kubeadm gives it:
	// the bootstrap RBAC policy grants system:kube-controller-manager and
	// system:kube-scheduler exactly what they need. KWOK has no bootstrap
	// role (kwokctl gives it admin), so it gets system:masters.
	kcmConfig, err := e.userKubeconfig("kube-controller-manager", envtest.User{Name: "system:kube-controller-manager"})
	if err != nil {
		return err
	}
	caFile := filepath.Join(e.dir, "ca.crt")
	if err := os.WriteFile(caFile, e.Config.CAData, 0o644); err != nil {
		return err
	}
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers()
	}
	if err := e.launch("kube-controller-manager",
		"--kubeconfig", kcmConfig,
		"--authentication-kubeconfig", kcmConfig,
		"--authorization-kubeconfig", kcmConfig,
		"--controllers", strings.Join(controllers, ","),
		"--service-account-private-key-file", e.serviceAccountKey,
		"--root-ca-file", caFile,
		"--use-service-account-credentials",
		"--secure-port", "0",
		"--v", "1",
	); err != nil {
		return err
	}
	leases := []string{"kube-controller-manager"}
	if opts.DefaultScheduler {
		schedConfig, err := e.userKubeconfig("kube-scheduler", envtest.User{Name: "system:kube-scheduler"})
		if err != nil {
			return err
		}
		if err := e.launch("kube-scheduler",
			"--kubeconfig", schedConfig,
			"--authentication-kubeconfig", schedConfig,
			"--authorization-kubeconfig", schedConfig,
			"--secure-port", "0",
			"--v", "1",
		); err != nil {
			return err
		}
		leases = append(leases, "kube-scheduler")
	}
	if opts.KWOK {
		cfg, err := writeKWOKConfig(e.dir)
		if err != nil {
			return err
		}
		kwokConfig, err := e.userKubeconfig("kwok", envtest.User{Name: "kwok", Groups: []string{"system:masters"}})
		if err != nil {
			return err
		}
		if err := e.launch("kwok",
			"--kubeconfig", kwokConfig,
			"--config", cfg,
			"--manage-nodes-with-annotation-selector", KWOKNodeAnnotation+"="+KWOKNodeValue,
			"--node-lease-duration-seconds", "40",
		); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	for _, name := range leases {
		if err := e.waitForComponentLease(ctx, name); err != nil {
			return err
		}
	}
	return e.WaitForServiceAccount(ctx, metav1.NamespaceDefault)
}

// userKubeconfig writes <dir>/<name>.kubeconfig with a client certificate
// for user, signed by the control plane's CA.
func (e *Env) userKubeconfig(name string, user envtest.User) (string, error) {
	u, err := e.testenv.AddUser(user, nil)
	if err != nil {
		return "", fmt.Errorf("creating credentials for %s: %w", user.Name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.dir, name+".kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// launch starts an assets binary that Stop stops. Its output goes to
// <dir>/<name>.log.
func (e *Env) launch(name string, args ...string) error {
	p, err := startProcess(processSpec{
		name:     name,
		argv:     append([]string{e.toolPath(name)}, args...),
		logPath:  filepath.Join(e.dir, name+".log"),
		ownGroup: true,
	})
	if err != nil {
		return err
	}
	e.components = append(e.components, p)
	return nil
}

// Exited returns an error naming every full-cluster component that is no
// longer running, with its log; nil if all run (or there are none).
func (e *Env) Exited() error {
	var errs []error
	for _, c := range e.components {
		errs = append(errs, c.exitedError())
	}
	return errors.Join(errs...)
}

// ComponentLogs returns the log paths of the full-cluster components by
// name ("kube-controller-manager", "kube-scheduler", "kwok").
func (e *Env) ComponentLogs() map[string]string {
	out := map[string]string{}
	for _, c := range e.components {
		out[c.name] = c.logPath
	}
	return out
}

// stopComponents stops the components in reverse start order: SIGTERM,
// then SIGKILL after 15s.
func (e *Env) stopComponents() error {
	var errs []error
	for i := len(e.components) - 1; i >= 0; i-- {
		c := e.components[i]
		if c.stop(15 * time.Second) {
			errs = append(errs, fmt.Errorf("%s did not stop on SIGTERM within 15s; killed", c.name))
		}
	}
	e.components = nil
	return errors.Join(errs...)
}

// WaitForServiceAccount polls until namespace has its default
// ServiceAccount: in a full cluster, ServiceAccount admission rejects pods
// until the serviceaccount controller has created it.
func (e *Env) WaitForServiceAccount(ctx context.Context, namespace string) error {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, e.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.Exited(); err != nil {
			return false, err
		}
		_, err := e.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waiting for ServiceAccount %s/default (kube-controller-manager's serviceaccount-controller creates it; log %s): %w",
			namespace, filepath.Join(e.dir, "kube-controller-manager.log"), err)
	}
	return nil
}

// waitForComponentLease polls until the component named name holds its
// leader lease kube-system/<name>, its sign of being up and working.
func (e *Env) waitForComponentLease(ctx context.Context, name string) error {
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if err := e.Exited(); err != nil {
			return false, err
		}
		l, err := e.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to hold its leader lease kube-system/%s (log %s): %w",
			name, name, filepath.Join(e.dir, name+".log"), err)
	}
	return nil
}

// writeServiceAccountKeys generates the RSA key pair the apiserver signs and
// verifies service-account tokens with (kube-controller-manager signs with
// the private half too) and returns the private and public key file paths.
func writeServiceAccountKeys(dir string) (keyPath, pubPath string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generating the service-account signing key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	keyPath, pubPath = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return "", "", err
	}
	return keyPath, pubPath, nil
}

// writeKWOKConfig writes KWOK's stages: kwokctl's defaults (node
// initialize, node heartbeat with lease, pod ready, pod delete) taken from
// the KWOK module the binary is built from, so they match it. kwokctl's
// pod-complete stage is left out on purpose: it would turn Job pods
// Succeeded within milliseconds, and the scheduler ignores finished pods
// for affinity, so a Job's placement would depend on timing. Here pods run
// until deleted, which keeps every placement visible.
func writeKWOKConfig(dir string) (string, error) {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodeheartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodDelete,
	}
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	path := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("writing the KWOK config: %w", err)
	}
	return path, nil
}

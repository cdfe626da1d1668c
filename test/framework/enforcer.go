package framework

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// EnforcerBinaryEnv names the placement-enforcer binary under test.
const EnforcerBinaryEnv = "PLACEMENT_ENFORCER_BIN"

// EnforcerBinary returns the placement-enforcer under test:
// $PLACEMENT_ENFORCER_BIN, else one built from ./cmd/enforcer into the
// scratch directory (rather than test something stale). Call it once,
// before tests run in parallel.
func (e *Env) EnforcerBinary() (string, error) {
	if bin := os.Getenv(EnforcerBinaryEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("placement-enforcer binary: %w (run `make build` or set %s)", err, EnforcerBinaryEnv)
		}
		return bin, nil
	}
	bin := filepath.Join(e.dir, "placement-enforcer")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	build := exec.Command("go", "build", "-o", bin, "github.com/placement-scheduler/placement-scheduler/cmd/enforcer")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building placement-enforcer (set %s to use a built one): %w\n%s", EnforcerBinaryEnv, err, out)
	}
	return bin, nil
}

// EnforcerOptions configures LaunchEnforcer.
type EnforcerOptions struct {
	// Name labels the process's scratch directory.
	Name string
	// Binary is the placement-enforcer to run (EnforcerBinary).
	Binary string
	// Config is the EnforcerConfiguration's body: every field but
	// apiVersion, kind, schedulerConfig and metricsBindAddress, which
	// LaunchEnforcer sets.
	Config string
	// SchedulerConfig is the KubeSchedulerConfiguration the enforcer
	// judges with; nil: the shipped one.
	SchedulerConfig []byte
	// Kubeconfig is the enforcer's identity; empty: the admin one.
	Kubeconfig string
	// MetricsBindAddress is where its endpoints listen; empty: a free port
	// of 127.0.0.1.
	MetricsBindAddress string
}

// Enforcer is one running placement-enforcer process.
type Enforcer struct {
	*process
	addr string
}

// LaunchEnforcer runs placement-enforcer with opts, logs at -v=2 into a
// file. The process dies with the caller; the caller stops it. Tests use
// StartEnforcer, which does.
func (e *Env) LaunchEnforcer(opts EnforcerOptions) (*Enforcer, error) {
	if opts.SchedulerConfig == nil {
		opts.SchedulerConfig = manifests.SchedulerConfig()
	}
	if opts.Kubeconfig == "" {
		opts.Kubeconfig = e.Kubeconfig
	}
	addr := opts.MetricsBindAddress
	if addr == "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	dir, err := os.MkdirTemp(e.dir, "enforcer-"+sanitize(opts.Name)+"-")
	if err != nil {
		return nil, err
	}
	schedPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(schedPath, opts.SchedulerConfig, 0o600); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("apiVersion: enforcer.placement-scheduler.io/v1alpha1\nkind: EnforcerConfiguration\nschedulerConfig: %s\nmetricsBindAddress: %s\n%s\n",
		schedPath, addr, opts.Config)
	cfgPath := filepath.Join(dir, "enforcer-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	proc, err := startProcess(processSpec{
		name:    "placement-enforcer",
		argv:    []string{opts.Binary, "--config", cfgPath, "--kubeconfig", opts.Kubeconfig, "--v=2"},
		logPath: filepath.Join(dir, "enforcer.log"),
		// The informers' and the framework's start-up lines, which every
		// pass repeats, and the placers' node tree, a line per node.
		noise: []string{"reflector.go", "framework.go", "node_tree.go"},
	})
	if err != nil {
		return nil, err
	}
	return &Enforcer{process: proc, addr: addr}, nil
}

// StartEnforcer is LaunchEnforcer for a test: it fails the test if the
// process cannot start, stops it when the test ends and, if the test
// failed, logs the tail of its log.
func (e *Env) StartEnforcer(t testing.TB, opts EnforcerOptions) *Enforcer {
	t.Helper()
	if opts.Name == "" {
		opts.Name = t.Name()
	}
	p, err := e.LaunchEnforcer(opts)
	if err != nil {
		t.Fatal(err)
	}
	p.stopAfter(t, p.Stop, 300)
	return p
}

// Stop sends SIGTERM (a leader releases its Lease) and waits, killing the
// process after 10s.
func (p *Enforcer) Stop() { p.stop(10 * time.Second) }

// EnforcerReport is one line of GET /violations, as its JSON reads.
type EnforcerReport struct {
	Pod    string   `json:"pod"`
	UID    string   `json:"uid"`
	Node   string   `json:"node"`
	Rule   string   `json:"rule"`
	Reason string   `json:"reason"`
	Terms  []string `json:"terms"`
	State  string   `json:"state"`
	Detail string   `json:"detail"`
	Wait   string   `json:"wait"`
	Target string   `json:"target"`
}

// Violations reads GET /violations: the last pass's reports (empty on a
// replica that does not lead).
func (p *Enforcer) Violations() ([]EnforcerReport, error) {
	body, err := p.get("/violations")
	if err != nil {
		return nil, err
	}
	var out []EnforcerReport
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("GET /violations: %w: %s", err, body)
	}
	return out, nil
}

// Healthz reads GET /healthz: nil when it answers 200.
func (p *Enforcer) Healthz() error {
	_, err := p.get("/healthz")
	return err
}

// Metrics reads GET /metrics.
func (p *Enforcer) Metrics() (string, error) {
	body, err := p.get("/metrics")
	return string(body), err
}

func (p *Enforcer) get(path string) ([]byte, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + p.addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}

// EnforcerIdentity creates a ServiceAccount in ns holding exactly what the
// kustomize base grants the enforcer (its ClusterRole, and its lease Role
// moved to ns, where its Lease must then live) and returns the path of a
// kubeconfig that authenticates as it, and its user name.
func (e *Env) EnforcerIdentity(t testing.TB, ns string) (kubeconfig, user string) {
	t.Helper()
	return e.EnforcerIdentityWith(t, ns, "enforcer", nil)
}

// EnforcerIdentityWith is EnforcerIdentity for the ServiceAccount sa, its
// ClusterRole's rules first passed through edit (nil: unchanged): several
// identities in one namespace, some holding less than the shipped role.
func (e *Env) EnforcerIdentityWith(t testing.TB, ns, sa string, edit func([]rbacv1.PolicyRule) []rbacv1.PolicyRule) (kubeconfig, user string) {
	t.Helper()
	data, err := fs.ReadFile(manifests.Files(), "base/enforcer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role *rbacv1.ClusterRole
	var leaseRole *rbacv1.Role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("manifests/base/enforcer.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.Role:
			leaseRole = o
		}
	}
	if role == nil || leaseRole == nil {
		t.Fatal("manifests/base/enforcer.yaml: no ClusterRole or no Role")
	}
	if edit != nil {
		role.Rules = edit(role.Rules)
	}
	role.Name = ns + "-" + sa
	leaseRole.Name += ":" + sa
	leaseRole.Namespace = ns
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	e.Create(t,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}},
		leaseRole,
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: leaseRole.Name, Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaseRole.Name}},
	)
	return e.ServiceAccountKubeconfig(t, ns, sa), "system:serviceaccount:" + ns + ":" + sa
}

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

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
	// apiVersion, kind and schedulerConfig, which LaunchEnforcer sets.
	Config string
	// SchedulerConfig is the KubeSchedulerConfiguration the enforcer
	// judges with; nil: the shipped one.
	SchedulerConfig []byte
	// Kubeconfig is the enforcer's identity, for its own requests and for
	// the delegated authentication and authorization of its endpoints, as
	// in-cluster credentials would be in a Deployment; empty: the admin one.
	Kubeconfig string
	// SecurePort is the port of 127.0.0.1 its HTTPS endpoints listen on;
	// 0: a free one.
	SecurePort int
	// CertDir holds its self-signed serving certificate
	// (placement-enforcer.crt, reused if there); empty: its scratch
	// directory.
	CertDir string
	// Args are extra flags, after the framework's (so they win).
	Args []string
}

// Enforcer is one running placement-enforcer process.
type Enforcer struct {
	*process
	port   int
	caFile string
	admin  *rest.Config
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
	port := opts.SecurePort
	if port == 0 {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	dir, err := os.MkdirTemp(e.dir, "enforcer-"+sanitize(opts.Name)+"-")
	if err != nil {
		return nil, err
	}
	if opts.CertDir == "" {
		opts.CertDir = dir
	}
	schedPath := filepath.Join(dir, "scheduler-config.yaml")
	if err := os.WriteFile(schedPath, opts.SchedulerConfig, 0o600); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("apiVersion: enforcer.placement-scheduler.io/v1alpha1\nkind: EnforcerConfiguration\nschedulerConfig: %s\n%s\n",
		schedPath, opts.Config)
	cfgPath := filepath.Join(dir, "enforcer-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	proc, err := startProcess(processSpec{
		name: "placement-enforcer",
		argv: append([]string{opts.Binary, "--config", cfgPath, "--kubeconfig", opts.Kubeconfig,
			"--secure-port", fmt.Sprint(port),
			"--bind-address", "127.0.0.1",
			"--cert-dir", opts.CertDir,
			"--authentication-kubeconfig", opts.Kubeconfig,
			"--authorization-kubeconfig", opts.Kubeconfig,
			"--v=2"}, opts.Args...),
		logPath: filepath.Join(dir, "enforcer.log"),
		// The informers' and the framework's start-up lines, which every
		// pass repeats, and the placers' node tree, a line per node.
		noise: []string{"reflector.go", "framework.go", "node_tree.go"},
	})
	if err != nil {
		return nil, err
	}
	return &Enforcer{process: proc, port: port, caFile: filepath.Join(opts.CertDir, "placement-enforcer.crt"), admin: e.Config}, nil
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

// URL is where its endpoints are served: https://127.0.0.1:<port>.
func (p *Enforcer) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", p.port) }

// CAFile is the file its self-signed serving certificate is in (with the
// CA that signed it), once it has started.
func (p *Enforcer) CAFile() string { return p.caFile }

// Violations reads GET /violations as the admin: the last pass's reports
// (empty on a replica that does not lead).
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

// Metrics reads GET /metrics as the admin.
func (p *Enforcer) Metrics() (string, error) {
	body, err := p.get("/metrics")
	return string(body), err
}

func (p *Enforcer) get(path string) ([]byte, error) {
	code, body, err := p.GetAs(p.admin, path)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d: %s", path, code, body)
	}
	return body, nil
}

// GetAs GETs path over HTTPS with cfg's credentials (nil: none, an
// anonymous request), verifying the enforcer's certificate, and returns
// the status code and body.
func (p *Enforcer) GetAs(cfg *rest.Config, path string) (int, []byte, error) {
	ec := &rest.Config{}
	if cfg != nil {
		ec = rest.CopyConfig(cfg)
	}
	ec.Host = p.URL()
	ec.TLSClientConfig.CAFile, ec.TLSClientConfig.CAData, ec.TLSClientConfig.ServerName = p.caFile, nil, ""
	tlsConfig, err := rest.TLSConfigFor(ec)
	if err != nil {
		return 0, nil, err
	}
	// No keep-alive: each call is one request and leaves no connection
	// open in the process measured.
	rt, err := rest.HTTPWrappersForConfig(ec, &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true})
	if err != nil {
		return 0, nil, err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: rt}
	resp, err := client.Get(p.URL() + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// EnforcerIdentity creates a ServiceAccount in ns holding exactly what the
// kustomize base grants the enforcer (each of its bindings, to the roles
// the base defines, renamed for ns, or to the cluster's own roles: its
// ClusterRole, its lease Role moved to ns, where its Lease must then live,
// and what delegated authentication and authorization take) and returns
// the path of a kubeconfig that authenticates as it, and its user name.
func (e *Env) EnforcerIdentity(t testing.TB, ns string) (kubeconfig, user string) {
	t.Helper()
	data, err := fs.ReadFile(manifests.Files(), "base/enforcer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const sa = "enforcer"
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	roles := map[string]*rbacv1.Role{}
	var bindings []runtime.Object
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("manifests/base/enforcer.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[o.Name] = o
		case *rbacv1.Role:
			roles[o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, o)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o)
		}
	}
	objs := []runtime.Object{&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}}
	for _, b := range bindings {
		switch b := b.(type) {
		case *rbacv1.ClusterRoleBinding:
			if role := clusterRoles[b.RoleRef.Name]; role != nil {
				role.Name = ns + "-" + role.Name
				b.RoleRef.Name = role.Name
				objs = append(objs, role)
			}
			b.Name, b.Subjects = ns+"-"+b.Name, subjects
			objs = append(objs, b)
		case *rbacv1.RoleBinding:
			if role := roles[b.RoleRef.Name]; role != nil && b.RoleRef.Kind == "Role" {
				role.Namespace, b.Namespace = ns, ns
				objs = append(objs, role)
			} else {
				// A role of the cluster's own (kube-system's
				// extension-apiserver-authentication-reader).
				b.Name = ns + "-" + b.Name
			}
			b.Subjects = subjects
			objs = append(objs, b)
		}
	}
	if len(objs) < 3 {
		t.Fatal("manifests/base/enforcer.yaml: no bindings")
	}
	e.Create(t, objs...)
	return e.ServiceAccountKubeconfig(t, ns, sa), "system:serviceaccount:" + ns + ":" + sa
}

package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
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

// Healthz reads GET /healthz: nil when it answers 200.
func (p *Enforcer) Healthz() error {
	_, err := p.get("/healthz")
	return err
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

// What manifests/base/enforcer.yaml installs the enforcer as.
const (
	// EnforcerName is its ServiceAccount's (and Lease's) name, in Namespace.
	EnforcerName = "placement-scheduler-enforcer"
	// EnforcerUser is that ServiceAccount's user name.
	EnforcerUser = "system:serviceaccount:" + Namespace + ":" + EnforcerName
)

// enforcerObjects are the enforcer's identity as manifests/base ships it:
// its ServiceAccount, its ClusterRoles and Roles and their bindings (to
// those roles or to the cluster's own: delegated authentication and
// authorization), from enforcer.yaml, and the ValidatingAdmissionPolicy and
// binding that check its writes to pods (enforcer-policy.yaml).
type enforcerObjects struct {
	account       *v1.ServiceAccount
	clusterRoles  map[string]*rbacv1.ClusterRole
	roles         map[string]*rbacv1.Role
	bindings      []runtime.Object // ClusterRoleBindings and RoleBindings, in file order
	policy        *admissionregistrationv1.ValidatingAdmissionPolicy
	policyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

func readEnforcerObjects() (*enforcerObjects, error) {
	out := &enforcerObjects{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}}
	for _, file := range []string{"base/enforcer.yaml", "base/enforcer-policy.yaml"} {
		data, err := fs.ReadFile(manifests.Files(), file)
		if err != nil {
			return nil, err
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
			if err != nil {
				return nil, fmt.Errorf("manifests/%s: %w", file, err)
			}
			switch o := obj.(type) {
			case *v1.ServiceAccount:
				out.account = o
			case *rbacv1.ClusterRole:
				out.clusterRoles[o.Name] = o
			case *rbacv1.Role:
				out.roles[o.Name] = o
			case *rbacv1.ClusterRoleBinding, *rbacv1.RoleBinding:
				out.bindings = append(out.bindings, o)
			case *admissionregistrationv1.ValidatingAdmissionPolicy:
				out.policy = o
			case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
				out.policyBinding = o
			}
		}
	}
	if out.account == nil || len(out.clusterRoles) == 0 || len(out.roles) == 0 || len(out.bindings) == 0 || out.policy == nil || out.policyBinding == nil {
		return nil, errors.New("manifests/base: the enforcer's ServiceAccount, a ClusterRole, a Role, a binding, the ValidatingAdmissionPolicy or its binding is missing")
	}
	return out, nil
}

// InstallEnforcerIdentity creates the enforcer's identity exactly as
// manifests/base ships it (its ServiceAccount EnforcerUser in Namespace,
// its roles and bindings, and the ValidatingAdmissionPolicy and binding
// that check its writes to pods), and returns a client config that
// authenticates as that ServiceAccount (a TokenRequest token valid for
// ttl). For a TestMain's setup: what it creates stays until the control
// plane stops.
func (e *Env) InstallEnforcerIdentity(ctx context.Context, ttl time.Duration) (*rest.Config, error) {
	objs, err := readEnforcerObjects()
	if err != nil {
		return nil, err
	}
	all := []runtime.Object{objs.account}
	for _, r := range objs.clusterRoles {
		all = append(all, r)
	}
	for _, r := range objs.roles {
		all = append(all, r)
	}
	all = append(all, objs.bindings...)
	all = append(all, objs.policy, objs.policyBinding)
	for _, obj := range all {
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, err
		}
		ri, err := e.resource(u)
		if err != nil {
			return nil, err
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating %s: %w", ObjectKey(u), err)
		}
	}
	if err := e.waitAuthorized(ctx, objs.account.Namespace, objs.account.Name, leaseRole(objs.roles)); err != nil {
		return nil, err
	}
	token, err := e.serviceAccountToken(ctx, objs.account.Namespace, objs.account.Name, ttl)
	if err != nil {
		return nil, err
	}
	return &rest.Config{Host: e.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: e.Config.CAData}, BearerToken: token}, nil
}

// EnforcerIdentity creates a ServiceAccount in ns holding exactly what the
// kustomize base grants the enforcer (each of its bindings, to the roles
// the base defines, renamed for ns, or to the cluster's own roles: its
// ClusterRole, its lease Role moved to ns, where its Lease must then live,
// and what delegated authentication and authorization take), under a copy
// of the ValidatingAdmissionPolicy that checks its writes to pods (the
// copy's matchCondition names this ServiceAccount), and returns the path of
// a kubeconfig that authenticates as it, and its user name.
func (e *Env) EnforcerIdentity(t testing.TB, ns string) (kubeconfig, user string) {
	t.Helper()
	return e.EnforcerIdentityWith(t, ns, "enforcer", nil)
}

// EnforcerIdentityWith is EnforcerIdentity for the ServiceAccount sa, the
// rules of the enforcer's own ClusterRole first passed through edit (nil:
// unchanged): several identities in one namespace, some holding less than
// the shipped role.
func (e *Env) EnforcerIdentityWith(t testing.TB, ns, sa string, edit func([]rbacv1.PolicyRule) []rbacv1.PolicyRule) (kubeconfig, user string) {
	t.Helper()
	objs, err := readEnforcerObjects()
	if err != nil {
		t.Fatal(err)
	}
	user = "system:serviceaccount:" + ns + ":" + sa
	prefix := ns + "-" + sa + "-"
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	objects := []runtime.Object{&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}}
	for _, b := range objs.bindings {
		switch b := b.(type) {
		case *rbacv1.ClusterRoleBinding:
			if role := objs.clusterRoles[b.RoleRef.Name]; role != nil {
				if edit != nil && role.Name == EnforcerName {
					role.Rules = edit(role.Rules)
				}
				role.Name = prefix + role.Name
				b.RoleRef.Name = role.Name
				objects = append(objects, role)
			}
			b.Name, b.Subjects = prefix+b.Name, subjects
			objects = append(objects, b)
		case *rbacv1.RoleBinding:
			if role := objs.roles[b.RoleRef.Name]; role != nil && b.RoleRef.Kind == "Role" {
				role.Name += ":" + sa
				b.RoleRef.Name = role.Name
				b.Name += ":" + sa
				role.Namespace, b.Namespace = ns, ns
				objects = append(objects, role)
			} else {
				// A role of the cluster's own (kube-system's
				// extension-apiserver-authentication-reader).
				b.Name = prefix + b.Name
			}
			b.Subjects = subjects
			objects = append(objects, b)
		}
	}
	policy := objs.policy
	policy.Name = prefix + policy.Name
	renamed := false
	for i, c := range policy.Spec.MatchConditions {
		if strings.Contains(c.Expression, "'"+EnforcerUser+"'") {
			policy.Spec.MatchConditions[i].Expression = strings.ReplaceAll(c.Expression, "'"+EnforcerUser+"'", "'"+user+"'")
			renamed = true
		}
	}
	if !renamed {
		t.Fatalf("manifests/base/enforcer-policy.yaml: no matchCondition names %s", EnforcerUser)
	}
	objects = append(objects, policy,
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
				ValidationActions: objs.policyBinding.Spec.ValidationActions}})
	e.Create(t, objects...)
	if err := e.waitAuthorized(context.Background(), ns, sa, leaseRole(objs.roles)); err != nil {
		t.Fatal(err)
	}
	return e.ServiceAccountKubeconfig(t, ns, sa), user
}

// waitAuthorized waits until the apiserver's authorizer lets the
// ServiceAccount ns/name patch pods (its ClusterRole) and get its Lease
// (leaseRole, bound in its namespace): bindings just created take a moment
// to be in force, and a request refused meanwhile would count against the
// identity.
func (e *Env) waitAuthorized(ctx context.Context, ns, name string, leaseRole *rbacv1.Role) error {
	var lease string
	for _, r := range leaseRole.Rules {
		if slices.Contains(r.Resources, "leases") && len(r.ResourceNames) > 0 {
			lease = r.ResourceNames[0]
		}
	}
	asks := []authorizationv1.ResourceAttributes{
		{Verb: "patch", Resource: "pods"},
		{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: leaseRole.Namespace, Name: lease},
	}
	user := "system:serviceaccount:" + ns + ":" + name
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	err := wait.PollUntilContextTimeout(ctx, pollInterval, e.Timeout, true, func(ctx context.Context) (bool, error) {
		for _, ask := range asks {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &ask}}
			got, err := e.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
			if err != nil || !got.Status.Allowed {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s's RBAC to be in force: %w", user, err)
	}
	return nil
}

// leaseRole is the Role among roles that grants the Lease.
func leaseRole(roles map[string]*rbacv1.Role) *rbacv1.Role {
	for _, r := range roles {
		for _, rule := range r.Rules {
			if slices.Contains(rule.Resources, "leases") {
				return r
			}
		}
	}
	return nil
}

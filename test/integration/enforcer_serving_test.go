package integration

import (
	"context"
	"encoding/json"
	"io/fs"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The enforcer binary serves nothing unauthenticated: with only the shipped
// RBAC (system:auth-delegator and the extension-apiserver-authentication
// reader), it asks the apiserver about every caller of /metrics and
// /violations. Anonymous callers and a ServiceAccount without the shipped
// reader ClusterRole are refused, a bad token is 401, a ServiceAccount bound
// to the reader ClusterRole and the admin's client certificate (verified
// with the client CA the enforcer reads from the apiserver) get the data;
// the health paths answer anyone. kubectl placement violations, given the
// enforcer's URL and CA, reads it with the user's own credentials, and
// fails in one line naming the grant for an identity without it.
func TestEnforcerEndpointsAuthenticateAndAuthorize(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	kube, _ := env.EnforcerIdentity(t, ns)
	bin, err := env.EnforcerBinary()
	if err != nil {
		t.Fatal(err)
	}
	// A dry run: it must not act on other tests' pods.
	enf := env.StartEnforcer(t, framework.EnforcerOptions{Binary: bin, Kubeconfig: kube,
		Config: "dryRun: true\nleaderElection: {leaseNamespace: " + ns + "}"})

	reader, stranger := "reader", "stranger"
	role := shippedReaderRole(t)
	role.Name = ns + "-" + role.Name
	env.Create(t,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reader, Namespace: ns}},
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: stranger, Namespace: ns}},
		role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: reader, Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}},
	)
	token := func(name string) *rest.Config { return &rest.Config{BearerToken: env.ServiceAccountToken(t, ns, name)} }
	readerCfg, strangerCfg := token(reader), token(stranger)

	// Up once the health path answers an anonymous caller.
	env.Poll(t, "the enforcer's /healthz", func(_ context.Context) (bool, error) {
		code, _, err := enf.GetAs(nil, "/healthz")
		return err == nil && code == 200, nil
	})
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body, err := enf.GetAs(nil, path); err != nil || code != 200 {
			t.Errorf("anonymous GET %s: %d %s %v, want 200", path, code, body, err)
		}
	}
	// The reader's grant reaches the enforcer through the apiserver's
	// authorization cache, and the admin's client certificate is known once
	// the enforcer has read the cluster's client CA (the ConfigMap
	// extension-apiserver-authentication, after it starts serving): poll
	// until both are seen.
	env.Poll(t, "the reader's and the admin's GET /violations", func(_ context.Context) (bool, error) {
		for _, cfg := range []*rest.Config{readerCfg, env.Config} {
			if code, _, err := enf.GetAs(cfg, "/violations"); err != nil || code != 200 {
				return false, nil
			}
		}
		return true, nil
	})
	for _, path := range []string{"/violations", "/metrics"} {
		for who, c := range map[string]struct {
			cfg  *rest.Config
			want []int
		}{
			"anonymous":    {nil, []int{401, 403}},
			"a bad token":  {&rest.Config{BearerToken: "not-a-token"}, []int{401}},
			"the stranger": {strangerCfg, []int{403}},
			"the reader":   {readerCfg, []int{200}},
			"the admin":    {env.Config, []int{200}},
		} {
			code, body, err := enf.GetAs(c.cfg, path)
			if err != nil || !slices.Contains(c.want, code) {
				t.Errorf("GET %s as %s: %d %v, want %v: %s", path, who, code, err, c.want, body)
				continue
			}
			if code != 200 {
				continue
			}
			switch path {
			case "/violations":
				var reports []framework.EnforcerReport
				if err := json.Unmarshal(body, &reports); err != nil || reports == nil {
					t.Errorf("GET /violations as %s: %q is not a JSON list (%v)", who, body, err)
				}
			case "/metrics":
				if !strings.Contains(string(body), "placement_enforcer_leader") {
					t.Errorf("GET /metrics as %s lacks placement_enforcer_leader:\n%s", who, body)
				}
			}
		}
	}

	// kubectl placement violations, as a user would run it against an
	// enforcer that is not a pod (make run's): the environment names it.
	t.Setenv("PLACEMENT_ENFORCER_URL", enf.URL())
	t.Setenv("PLACEMENT_ENFORCER_CA_FILE", enf.CAFile())
	out, errOut, err := kubectlPlacement(t, "violations", "--kubeconfig", env.ServiceAccountKubeconfig(t, ns, reader), "-o", "json")
	if err != nil || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Errorf("kubectl placement violations as the reader: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	out, errOut, err = kubectlPlacement(t, "violations", "--kubeconfig", env.ServiceAccountKubeconfig(t, ns, stranger),
		"--enforcer-url", enf.URL(), "--enforcer-ca-file", enf.CAFile())
	want := `error: kubectl placement violations: forbidden: user "system:serviceaccount:` + ns + `:stranger" may not get /violations of the enforcer (grant the ClusterRole placement-scheduler-enforcer-reader)`
	if err == nil || out != "" || strings.TrimSpace(errOut) != want {
		t.Errorf("kubectl placement violations as the stranger: %v\nstdout: %q\nstderr: %q\nwant stderr: %q", err, out, errOut, want)
	}
}

// shippedReaderRole is the kustomize base's ClusterRole that grants GET on
// the enforcer's /metrics and /violations.
func shippedReaderRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := fs.ReadFile(manifests.Files(), "base/enforcer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := obj.(*rbacv1.ClusterRole); ok && r.Name == "placement-scheduler-enforcer-reader" {
			return r
		}
	}
	t.Fatal("manifests/base/enforcer.yaml has no ClusterRole placement-scheduler-enforcer-reader")
	return nil
}

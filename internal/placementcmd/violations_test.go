package placementcmd

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

const report = `[
 {"pod":"shop/web-1","uid":"u1","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","terms":["term 1: pool In [a]: node has pool=b"],"state":"evicting","target":"n2","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/web-2","uid":"u2","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"no-fit","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/agent","uid":"u3","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"protected","detail":"daemonset","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/db-0","uid":"u4","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"pdb-blocked","detail":"Cannot evict pod as it would violate the pod's disruption budget.","target":"n2","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/web-3","uid":"u5","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"waiting-owner","detail":"ReplicaSet web has the eviction of web-1 in flight","wait":"owner","since":"2026-01-01T00:00:00Z"},
 {"pod":"shop/api-1","uid":"u6","node":"n1","rule":"node-affinity","reason":"node(s) didn't match Pod's node affinity/selector","state":"paced","detail":"limits.perNode (1 evictions in flight on n1)","wait":"limits.perNode","since":"2026-01-01T00:00:00Z"}
]`

func TestViolationsTable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "violations.json")
	if err := os.WriteFile(p, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, "", "violations", "--from-file", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"POD", "COULD GO TO",
		"shop/web-1", "evicting", "n2", "term 1: pool In [a]: node has pool=b",
		"shop/web-2", "no-fit",
		"shop/agent", "protected", "daemonset: node(s) didn't match",
		"shop/db-0", "pdb-blocked", "disruption budget: node(s) didn't match",
		"shop/web-3", "waiting-owner", "ReplicaSet web has the eviction of web-1 in flight",
		"shop/api-1", "paced", "limits.perNode (1 evictions in flight on n1)",
		"Going now: 1. Waiting: 2 (limits.perNode 1, owner 1).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "budget.:") {
		t.Errorf("a refusal's full stop before the colon:\n%s", out)
	}
	if _, err := runCLI(t, "", "violations", "--from-file", p, "-o", "xml"); err == nil || !strings.Contains(err.Error(), `-o "xml"`) {
		t.Errorf("-o xml: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte("{"), 0o644)
	if _, err := runCLI(t, "", "violations", "--from-file", bad); err == nil || !strings.Contains(err.Error(), "not an enforcer /violations report") {
		t.Errorf("bad report: %v", err)
	}
}

// leader follows the Lease to the pod that holds it.
func TestViolationsLeaderFollowsTheLease(t *testing.T) {
	client := fake.NewClientset(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "placement-scheduler-enforcer"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("placement-scheduler-enforcer-7d9f-abcde_1b2c3d")},
	})
	o := &violationsOptions{leaseNamespace: installNamespace, leaseName: "placement-scheduler-enforcer", port: 10261, output: "json"}
	pod, err := o.leader(context.Background(), client)
	if err != nil || pod != "placement-scheduler-enforcer-7d9f-abcde" {
		t.Errorf("leader %q, %v", pod, err)
	}
	empty := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "placement-scheduler-enforcer"}})
	if _, err := o.leader(context.Background(), empty); err == nil || !strings.Contains(err.Error(), "no leader") {
		t.Errorf("no holder: %v", err)
	}
}

// get speaks HTTPS to the enforcer with the kubeconfig's credentials,
// verifies its certificate against --enforcer-ca-file, and turns a 401 or
// a 403 into one sentence naming the identity and the grant.
func TestViolationsGetWithTheUsersCredentials(t *testing.T) {
	var tokens []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens = append(tokens, r.Header.Get("Authorization"))
		switch r.Header.Get("Authorization") {
		case "Bearer reader":
			_, _ = io.WriteString(w, report)
		case "Bearer jane":
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"jane\" cannot get path \"/violations\"","reason":"Forbidden","code":403}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	// The kubeconfig's own CA is the apiserver's, not the enforcer's.
	rc := func(token string) *restclient.Config {
		return &restclient.Config{Host: "https://apiserver.invalid", BearerToken: token,
			TLSClientConfig: restclient.TLSClientConfig{CAData: []byte("not the enforcer's"), ServerName: "apiserver.invalid"}}
	}
	o := &violationsOptions{enforcerURL: srv.URL, caFile: ca, output: "json"}
	data, err := o.fetch(context.Background(), rc("reader"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := o.print(&out, data); err != nil || !strings.Contains(out.String(), `"state": "no-fit"`) {
		t.Errorf("json: %v\n%s", err, out.String())
	}
	_, err = o.fetch(context.Background(), rc("jane"))
	if want := `forbidden: user "jane" may not get /violations of the enforcer (grant the ClusterRole placement-scheduler-enforcer-reader)`; err == nil || err.Error() != want {
		t.Errorf("403: %v, want %s", err, want)
	}
	if _, err = o.fetch(context.Background(), rc("stolen")); err == nil || !strings.HasPrefix(err.Error(), "unauthorized: ") {
		t.Errorf("401: %v", err)
	}
	if want := []string{"Bearer reader", "Bearer jane", "Bearer stolen"}; !slices.Equal(tokens, want) {
		t.Errorf("the enforcer saw %v, want %v", tokens, want)
	}
	// Another CA: the certificate is not trusted, and no token is sent.
	otherCA, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Another file: client-go caches transports by the CA file's name.
	o.caFile = filepath.Join(t.TempDir(), "other-ca.crt")
	if err := os.WriteFile(o.caFile, otherCA, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := o.fetch(context.Background(), rc("reader")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an enforcer the CA does not vouch for: %v", err)
	}
	if len(tokens) != 3 {
		t.Errorf("a token went to an unverified enforcer: %v", tokens)
	}
	o.caFile = ""
	if _, err := o.fetch(context.Background(), rc("reader")); err == nil || !strings.Contains(err.Error(), "needs --enforcer-ca-file") {
		t.Errorf("--enforcer-url without a CA: %v", err)
	}
}

// Nothing to report prints [] with -o json, never null.
func TestViolationsEmptyJSON(t *testing.T) {
	o := &violationsOptions{output: "json"}
	for _, in := range []string{"[]", "null"} {
		var out bytes.Buffer
		if err := o.print(&out, []byte(in)); err != nil || strings.TrimSpace(out.String()) != "[]" {
			t.Errorf("%s: %v %q, want []", in, err, out.String())
		}
	}
}

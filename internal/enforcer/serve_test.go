package enforcer

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2/ktesting"

	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// The endpoints served by the options' defaults, with no kubeconfig to
// delegate with (so every caller is anonymous and nothing is granted):
// HTTPS only, the health paths open, /metrics and /violations refused.
func TestServingDefaults(t *testing.T) {
	o := NewServingOptions()
	if o.SecureServing.BindPort != violationsv1alpha1.DefaultSecurePort || !o.Authentication.TolerateInClusterLookupFailure ||
		!o.Authentication.RemoteKubeConfigFileOptional || !o.Authorization.RemoteKubeConfigFileOptional {
		t.Errorf("defaults: port %d, %+v, %+v", o.SecureServing.BindPort, o.Authentication, o.Authorization)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.SecureServing.Listener = ln
	s, err := o.Apply("")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	_, ctx := ktesting.NewTestContext(t)
	stop, err := s.serve(ctx, r.e, []healthz.HealthChecker{healthz.PingHealthz})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base := "https://" + s.Addr().String()
	// The certificate is self-signed: this test checks the filters, not it.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for path, want := range map[string]int{
		"/healthz": 200, "/livez": 200, "/readyz": 200,
		"/violations": 403, "/metrics": 403,
	} {
		if code, body := get(t, client, base+path, ""); code != want {
			t.Errorf("GET %s without credentials: %d %s, want %d", path, code, body, want)
		}
	}
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + s.Addr().String() + "/violations"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP served /violations: %s", body)
		}
	}
	off := NewServingOptions()
	off.SecureServing.BindPort = 0
	if s, err := off.Apply(""); err != nil || s != nil {
		t.Errorf("--secure-port=0: %v, %v; want nothing served", s, err)
	}
}

// secure authenticates, then authorizes the request as a non-resource GET:
// a bad credential is 401, an identity without the grant 403, the grant
// serves the data; the verb is the request's.
func TestSecureChain(t *testing.T) {
	authn := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		switch req.Header.Get("Authorization") {
		case "":
			return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous}}, true, nil
		case "Bearer reader":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "reader"}}, true, nil
		case "Bearer other":
			return &authenticator.Response{User: &user.DefaultInfo{Name: "other"}}, true, nil
		}
		return nil, false, errors.New("bad token")
	})
	var asked []string
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a.GetUser().GetName()+" "+a.GetVerb()+" "+a.GetPath())
		if a.GetUser().GetName() == "reader" && a.GetVerb() == "get" && !a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	r := newRig(t, nil)
	srv := httptest.NewServer(secure(endpoints(r.e, nil, nil), authn, authz))
	defer srv.Close()
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{"bad", "/violations", 401}, {"bad", "/metrics", 401},
		{"", "/violations", 403}, {"other", "/violations", 403}, {"other", "/metrics", 403},
		{"reader", "/violations", 200}, {"reader", "/metrics", 200},
	} {
		code, body := get(t, srv.Client(), srv.URL+c.path, c.token)
		if code != c.want {
			t.Errorf("GET %s with %q: %d %s, want %d", c.path, c.token, code, body, c.want)
		}
		if c.want == 200 && c.path == "/violations" && strings.TrimSpace(body) != "[]" {
			t.Errorf("GET /violations: %q, want []", body)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/violations", nil)
	req.Header.Set("Authorization", "Bearer reader")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("POST /violations by reader: %d, want 403 (granted get only)", resp.StatusCode)
	}
	if len(asked) == 0 || asked[len(asked)-1] != "reader post /violations" {
		t.Errorf("the authorizer was asked %v", asked)
	}
}

// Every check of the list decides /healthz, /livez and /readyz; /readyz
// also fails once the server is stopping.
func TestHealthChecks(t *testing.T) {
	r := newRig(t, nil)
	failing := healthz.NamedCheck("broken", func(*http.Request) error { return errors.New("stuck") })
	stopping := make(chan struct{})
	h := endpoints(r.e, []healthz.HealthChecker{healthz.PingHealthz, failing}, stopping)
	ok := endpoints(r.e, []healthz.HealthChecker{healthz.PingHealthz}, stopping)
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%s with a failing check: %d %s", path, rec.Code, rec.Body)
		}
		rec = httptest.NewRecorder()
		ok.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	close(stopping)
	rec := httptest.NewRecorder()
	ok.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("/readyz while stopping: %d", rec.Code)
	}
}

// A pass that found nothing serves [], not null.
func TestViolationsEmptyAfterPass(t *testing.T) {
	r := newRig(t, nil)
	r.c.Nodes = []*v1.Node{node("a", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	r.pass()
	rec := httptest.NewRecorder()
	endpoints(r.e, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/violations", nil))
	if got := strings.TrimSpace(rec.Body.String()); got != "[]" {
		t.Errorf("/violations after a pass with nothing to report: %q, want []", got)
	}
}

func get(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

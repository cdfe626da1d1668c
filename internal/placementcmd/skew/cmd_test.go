package skew_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd"
	"github.com/placement-scheduler/placement-scheduler/internal/placementcmd/skew"
)

// The verbs run here through the command tree against a fake apiserver
// over loopback: this package runs on every line, where
// internal/placementcmd's own tests (goldens of the newest line) do not.

var build = placementcmd.BuildInfo{Version: "v0.1.0", GitCommit: "0123456789ab", BuildDate: "2026-01-02T03:04:05Z"}

// fakeAPIServer answers /version with server, and the reads explain,
// simulate and violations make of a one-node cluster; everything else is
// 404, which explain reads as an API that is not served. versionAsked
// counts the /version requests.
func fakeAPIServer(t *testing.T, server apimachineryversion.Info) (kubeconfig string, versionAsked *atomic.Int32) {
	t.Helper()
	versionAsked = &atomic.Int32{}
	node := v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{v1.LabelHostname: "node-1"}},
		Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")},
			Conditions:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}
	node.Status.Capacity = node.Status.Allocatable
	objects := map[string]any{
		"/version":      server,
		"/api/v1/nodes": v1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}, Items: []v1.Node{node}},
		"/api/v1/pods":  v1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}},
		"/api/v1/namespaces": v1.NamespaceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}, Items: []v1.Namespace{{
			ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{v1.LabelMetadataName: "default"}},
		}}},
		"/apis/coordination.k8s.io/v1/namespaces/placement-scheduler/leases/placement-scheduler-enforcer": coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "placement-scheduler", Name: "placement-scheduler-enforcer"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("placement-scheduler-enforcer-abc_1")},
		},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			versionAsked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		obj, ok := objects[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			w.WriteHeader(http.StatusNotFound)
			obj = metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound}
		}
		if err := json.NewEncoder(w).Encode(obj); err != nil {
			t.Errorf("fake apiserver: %v", err)
		}
	}))
	t.Cleanup(srv.Close)
	return writeKubeconfig(t, srv.URL), versionAsked
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPlacement runs `kubectl placement args` as the binary does.
func runPlacement(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := placementcmd.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, build)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// serverAt is a server version offset minors from this build's line.
func serverAt(offset int) apimachineryversion.Info {
	v := utilversion.MustParseMajorMinor(k8sline.Minor).OffsetMinor(offset)
	return apimachineryversion.Info{Major: fmt.Sprint(v.Major()), Minor: fmt.Sprint(v.Minor()), GitVersion: fmt.Sprintf("v%d.%d.3", v.Major(), v.Minor())}
}

func whatIfPod(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.yaml")
	pod := `apiVersion: v1
kind: Pod
metadata: {name: what-if, namespace: default}
spec:
  schedulerName: placement-scheduler
  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]
`
	if err := os.WriteFile(path, []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every verb that reads the cluster prints exactly one warning line on
// stderr against a server one minor older than its line, asks the server's
// version once, and still does its work; against a server of its own line
// it prints nothing on stderr.
func TestVerbsWarnOnceAgainstAnotherMinor(t *testing.T) {
	pod := whatIfPod(t)
	verbs := map[string][]string{
		"version":  {"version"},
		"explain":  {"explain", "-f", pod},
		"simulate": {"simulate", "-f", pod},
	}
	for _, offset := range []int{-1, 0} {
		server := serverAt(offset)
		want := skew.Decide(k8sline.Minor, k8sline.Lines(), &server).Warning(build.Version, runtime.GOOS, runtime.GOARCH)
		if (want == "") != (offset == 0) {
			t.Fatalf("server %s against line %s: warning %q", server.GitVersion, k8sline.Minor, want)
		}
		if want != "" {
			want += "\n"
		}
		for name, args := range verbs {
			t.Run(fmt.Sprintf("%s/%s", name, server.GitVersion), func(t *testing.T) {
				kubeconfig, versionAsked := fakeAPIServer(t, server)
				stdout, stderr, err := runPlacement(t, append(args, "--kubeconfig", kubeconfig)...)
				if err != nil {
					t.Fatalf("%v\nstderr: %s", err, stderr)
				}
				if stderr != want {
					t.Errorf("stderr:\n%q\nwant:\n%q", stderr, want)
				}
				if n := versionAsked.Load(); n != 1 {
					t.Errorf("the server's version was asked %d times, want once", n)
				}
				if name == "version" && !strings.Contains(stdout, "\nserver: Kubernetes "+server.GitVersion+"\n") {
					t.Errorf("version does not print the server's:\n%s", stdout)
				}
				if name != "version" && !strings.Contains(stdout, "what-if") {
					t.Errorf("no result for the pod:\n%s", stdout)
				}
			})
		}
	}
}

// violations warns once as soon as the apiserver has answered (here the
// fake one cannot port-forward, so the verb then fails on its own).
func TestViolationsWarnsOnce(t *testing.T) {
	server := serverAt(-2)
	kubeconfig, _ := fakeAPIServer(t, server)
	_, stderr, err := runPlacement(t, "violations", "--kubeconfig", kubeconfig)
	if err == nil || !strings.Contains(err.Error(), "port-forward") {
		t.Errorf("error %v, want the port-forward's", err)
	}
	want := skew.Decide(k8sline.Minor, k8sline.Lines(), &server).Warning(build.Version, runtime.GOOS, runtime.GOARCH)
	if want == "" || stderr != want+"\n" {
		t.Errorf("stderr:\n%q\nwant:\n%q", stderr, want+"\n")
	}
}

// No server, no warning: an unreachable one (version says so and
// succeeds), --client, and the offline verbs, which ask nothing.
func TestNoWarningWithoutAServer(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	unreachable := writeKubeconfig(t, closed.URL)
	stdout, stderr, err := runPlacement(t, "version", "--kubeconfig", unreachable)
	if err != nil || stderr != "" || !strings.Contains(stdout, "\nserver: not reached: ") {
		t.Errorf("version against an unreachable server: %v, stderr %q, stdout:\n%s", err, stderr, stdout)
	}
	// A server of another minor that is never asked.
	kubeconfig, versionAsked := fakeAPIServer(t, serverAt(-2))
	snapshot := filepath.Join("..", "testdata", "nodeselector-disktype", "cluster.json")
	for _, args := range [][]string{
		{"version", "--client"},
		{"explain", "-f", whatIfPod(t), "--from-file", snapshot},
		{"simulate", "-f", whatIfPod(t), "--from-file", snapshot},
	} {
		_, stderr, err := runPlacement(t, append(args, "--kubeconfig", kubeconfig)...)
		if err != nil || stderr != "" {
			t.Errorf("%v: %v, stderr %q", args, err, stderr)
		}
	}
	if n := versionAsked.Load(); n != 0 {
		t.Errorf("the offline verbs asked the server's version %d times", n)
	}
}

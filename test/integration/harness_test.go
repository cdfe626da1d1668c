package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/controlplane"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Deadlines for polling. Generous: CI shares 2 cores with etcd and the
// apiserver. Nothing sleeps; everything polls until these run out.
const (
	pollInterval  = 100 * time.Millisecond
	scheduleWait  = 60 * time.Second
	schedulerName = testutil.SchedulerName
)

// shippedConfig returns manifests/scheduler-config.yaml as shipped.
func shippedConfig(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.repoRoot, "manifests", "scheduler-config.yaml"))
	if err != nil {
		t.Fatalf("reading shipped config: %v", err)
	}
	return b
}

// schedulerProc is one running placement-scheduler process.
type schedulerProc struct {
	cmd     *exec.Cmd
	logPath string
	port    int
	done    chan struct{}
	waitErr error
}

// startScheduler runs the real binary with config (pointed at the test
// control plane) plus extra flags. It is stopped with SIGTERM when the test
// ends; if the test failed, the tail of its log is printed.
func startScheduler(t testing.TB, config []byte, extraArgs ...string) *schedulerProc {
	t.Helper()
	return startSchedulerAs(t, env.kubeconfig, config, extraArgs...)
}

// startSchedulerAs is startScheduler with every API client of the scheduler
// using kubeconfig's credentials: its own (clientConnection) and the ones its
// HTTPS endpoints delegate authentication and authorization through, as
// in-cluster credentials would be in a Deployment.
func startSchedulerAs(t testing.TB, kubeconfig string, config []byte, extraArgs ...string) *schedulerProc {
	t.Helper()
	p, err := launchScheduler(t.Name(), kubeconfig, config, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("placement-scheduler log tail (%s):\n%s", p.logPath, p.logTail(80))
		}
	})
	return p
}

func launchScheduler(name, kubeconfig string, config []byte, extraArgs ...string) (*schedulerProc, error) {
	dir, err := os.MkdirTemp(env.dir, "sched-"+sanitize(name)+"-")
	if err != nil {
		return nil, err
	}
	cfg, err := controlplane.PointConfigAt(config, kubeconfig)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--config", cfgPath,
		"--secure-port", fmt.Sprint(port),
		"--bind-address", "127.0.0.1",
		"--cert-dir", dir,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"-v", "2",
	}, extraArgs...)
	cmd := exec.Command(env.binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies (e.g. go test's timeout panic), take the
	// scheduler with it rather than leave it running against a dead apiserver.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", env.binary, err)
	}
	p := &schedulerProc{cmd: cmd, logPath: logPath, port: port, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM (the scheduler then releases its lease) and waits.
func (p *schedulerProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill sends SIGKILL, so the process dies without releasing its lease, as
// on a node failure, and waits for it.
func (p *schedulerProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// exited reports whether the process has exited.
func (p *schedulerProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *schedulerProc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *schedulerProc) logTail(n int) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shared is the placement-scheduler process most tests share.
var shared struct {
	mu   sync.Mutex
	proc *schedulerProc
}

// sharedScheduler returns the placement-scheduler process running the
// shipped config, started on first use (and again after
// withoutSharedScheduler) and stopped by TestMain. Most tests only need the
// shipped profile, and one process keeps the suite fast.
func sharedScheduler(t testing.TB) *schedulerProc {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.proc == nil {
		b, err := os.ReadFile(filepath.Join(env.repoRoot, "manifests", "scheduler-config.yaml"))
		if err != nil {
			t.Fatalf("starting shared scheduler: %v", err)
		}
		if shared.proc, err = launchScheduler("shared", env.kubeconfig, b); err != nil {
			t.Fatalf("starting shared scheduler: %v", err)
		}
	}
	p := shared.proc
	if p.exited() {
		t.Fatalf("shared placement-scheduler has exited (%v); log tail:\n%s", p.waitErr, p.logTail(80))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared placement-scheduler log tail (%s):\n%s", p.logPath, p.logTail(80))
		}
	})
	return p
}

// withoutSharedScheduler stops the shared scheduler, if it runs, for tests
// whose own processes must be the only ones contending for the
// placement-scheduler lease and binding placement-scheduler pods. It stops
// with SIGTERM, which releases the lease at once. The next sharedScheduler
// call starts a fresh one.
func withoutSharedScheduler(t testing.TB) {
	t.Helper()
	stopSharedScheduler()
}

func stopSharedScheduler() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.proc != nil {
		shared.proc.stop()
		shared.proc = nil
	}
}

// get does GET https://127.0.0.1:<port><path> on the scheduler's secure
// port, with a bearer token if one is given, and returns the status code. The
// serving certificate is self-signed, so it is not verified, as kubelet does
// not verify it for HTTPS probes.
func (p *schedulerProc) get(path, token string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", p.port, path), nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed, like kubelet probes
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// waitForGet polls path on the scheduler's secure port until it answers want.
func (p *schedulerProc) waitForGet(t testing.TB, path, token string, want int) {
	t.Helper()
	var code int
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		code, lastErr = p.get(path, token)
		return lastErr == nil && code == want, nil
	})
	if err != nil {
		t.Fatalf("GET %s on :%d: want %d, last got %d (err %v)", path, p.port, want, code, lastErr)
	}
}

// serviceAccountToken returns a fresh token of the ServiceAccount ns/name
// from the TokenRequest API, as a pod's projected token would be.
func serviceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	tr, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for %s/%s: %v", ns, name, err)
	}
	return tr.Status.Token
}

// serviceAccountKubeconfig writes a kubeconfig for the control plane that
// authenticates as the ServiceAccount ns/name and returns its path.
func serviceAccountKubeconfig(t testing.TB, ns, name string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: env.cp.Config.Host, CertificateAuthorityData: env.cp.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: serviceAccountToken(t, ns, name)}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig-"+ns+"-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectl runs bin/kubectl (built by `make controlplane`) as admin against
// the control plane.
func kubectl(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	bin := filepath.Join(env.repoRoot, "bin", "kubectl")
	if !fileExists(bin) {
		t.Fatalf("%s is missing: run `make controlplane`", bin)
	}
	var out, errOut strings.Builder
	cmd := exec.Command(bin, append([]string{"--kubeconfig", env.kubeconfig, "--cache-dir", filepath.Join(env.dir, "kubectl-cache")}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9-]+`)

func sanitize(s string) string {
	s = unsafeChars.ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-")
	if len(s) > 40 {
		s = strings.Trim(s[:40], "-")
	}
	return s
}

// newNamespace creates a namespace for the calling test. Its cleanup deletes
// the test's pods first (there is no namespace controller in envtest, so
// deleting the namespace alone would leave them, Pending, for later tests'
// schedulers to pick up) and then the namespace.
func newNamespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	name := sanitize(t.Name())
	if len(name) > 50 {
		name = name[:50]
	}
	name = strings.Trim(name, "-") + "-" + rand.String(5)
	_, err := env.client.CoreV1().Namespaces().Create(context.Background(), testutil.MakeNamespace(name, labels), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		err := env.client.CoreV1().Pods(name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting pods of %s: %v", name, err)
		}
		if err := env.client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// schedulableNode is a node the default plugins accept: Ready, with room for
// pods. Its name is made unique to the test's namespace.
func schedulableNode(ns, name string) *testutil.NodeWrapper {
	return testutil.MakeNode(ns+"-"+name).Capacity("8", "32Gi", 110).Ready()
}

// createNodes creates cluster-scoped nodes and deletes them when the test ends.
func createNodes(t testing.TB, nodes ...*v1.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := env.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", n.Name, err)
		}
		name := n.Name
		t.Cleanup(func() {
			err := env.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
		})
	}
}

// createPod creates a pod through the apiserver (so admission and defaulting,
// e.g. the matchLabelKeys merge, apply) and returns what was stored.
func createPod(t testing.TB, pod *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := env.client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return got
}

// waitForPod polls the pod until cond holds or the deadline passes.
func waitForPod(t testing.TB, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		state := "<not found>"
		if last != nil {
			state = fmt.Sprintf("nodeName=%q conditions=%+v", last.Spec.NodeName, last.Status.Conditions)
		}
		t.Fatalf("pod %s/%s: waiting for %s: %v; last seen: %s", ns, name, what, err, state)
	}
	return last
}

// waitForBound waits until the pod is bound and returns its node name.
func waitForBound(t testing.TB, ns, name string) string {
	t.Helper()
	return waitForPod(t, ns, name, "binding", func(p *v1.Pod) bool { return p.Spec.NodeName != "" }).Spec.NodeName
}

// waitForUnschedulable waits until the scheduler has marked the pod
// PodScheduled=False/Unschedulable and returns the condition's message.
func waitForUnschedulable(t testing.TB, ns, name string) string {
	t.Helper()
	p := waitForPod(t, ns, name, "PodScheduled=False", func(p *v1.Pod) bool {
		c := podScheduledCondition(p)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
	})
	return podScheduledCondition(p).Message
}

func podScheduledCondition(p *v1.Pod) *v1.PodCondition {
	return podCondition(p, v1.PodScheduled)
}

// podCondition returns the pod's condition of type ct, or nil.
func podCondition(p *v1.Pod, ct v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podEvents lists the events recorded for a pod.
func podEvents(t testing.TB, ns, name string) []v1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name}.AsSelector().String()
	list, err := env.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return list.Items
}

// waitForEvent waits for an event with the given reason on the pod whose
// message contains substr, and returns it.
func waitForEvent(t testing.TB, ns, pod, reason, substr string) v1.Event {
	t.Helper()
	var found v1.Event
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, scheduleWait, true, func(ctx context.Context) (bool, error) {
		for _, e := range podEvents(t, ns, pod) {
			if e.Reason == reason && strings.Contains(e.Message, substr) {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event containing %q for pod %s/%s: %v; events: %+v", reason, substr, ns, pod, err, podEvents(t, ns, pod))
	}
	return found
}

// placementPod starts a pod in ns that opts in to placement-scheduler.
func placementPod(ns, name string) *testutil.PodWrapper {
	return testutil.MakePod(ns, name).Placement()
}

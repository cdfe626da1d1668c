package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
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
	p, err := launchScheduler(t.Name(), config, extraArgs...)
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

func launchScheduler(name string, config []byte, extraArgs ...string) (*schedulerProc, error) {
	dir, err := os.MkdirTemp(env.dir, "sched-"+sanitize(name)+"-")
	if err != nil {
		return nil, err
	}
	cfg, err := controlplane.PointConfigAt(config, env.kubeconfig)
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
		"--authentication-kubeconfig", env.kubeconfig,
		"--authorization-kubeconfig", env.kubeconfig,
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

var (
	sharedOnce  sync.Once
	sharedProc  *schedulerProc
	sharedError error
)

// sharedScheduler returns the placement-scheduler process running the
// shipped config, started on first use and stopped by TestMain. Most tests
// only need the shipped profile, and one process keeps the suite fast.
func sharedScheduler(t testing.TB) *schedulerProc {
	t.Helper()
	sharedOnce.Do(func() {
		b, err := os.ReadFile(filepath.Join(env.repoRoot, "manifests", "scheduler-config.yaml"))
		if err != nil {
			sharedError = err
			return
		}
		sharedProc, sharedError = launchScheduler("shared", b)
	})
	if sharedError != nil {
		t.Fatalf("starting shared scheduler: %v", sharedError)
	}
	if sharedProc.exited() {
		t.Fatalf("shared placement-scheduler has exited (%v); log tail:\n%s", sharedProc.waitErr, sharedProc.logTail(80))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared placement-scheduler log tail (%s):\n%s", sharedProc.logPath, sharedProc.logTail(80))
		}
	})
	return sharedProc
}

func stopSharedScheduler() {
	if sharedProc != nil {
		sharedProc.stop()
	}
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
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
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

package framework

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// Scheduler is one running placement-scheduler process.
type Scheduler struct {
	*process
	port    int
	timeout time.Duration
}

// SchedulerOptions configures LaunchScheduler.
type SchedulerOptions struct {
	// Name labels the process's scratch directory.
	Name string
	// Config is the KubeSchedulerConfiguration to run; nil: the shipped one.
	// Its clientConnection.kubeconfig is replaced by Kubeconfig.
	Config []byte
	// Kubeconfig holds the credentials of every API client of the scheduler:
	// its own and the ones its HTTPS endpoints delegate authentication and
	// authorization through, as in-cluster credentials would in a
	// Deployment. Empty: the admin kubeconfig.
	Kubeconfig string
	// Args are extra flags, after the framework's (so they win).
	Args []string
	// Output, if set, also receives the process's output (the log file gets
	// it regardless).
	Output io.Writer
}

// LaunchScheduler starts the binary under test: --config is opts.Config
// pointed at the control plane, the secure port a free one on 127.0.0.1,
// logs at -v=2 into a file. The process dies with the caller (it gets
// SIGKILL if the test binary dies, e.g. on go test's timeout). The caller
// stops it; tests use StartScheduler, which does.
func (e *Env) LaunchScheduler(opts SchedulerOptions) (*Scheduler, error) {
	if opts.Config == nil {
		opts.Config = manifests.SchedulerConfig()
	}
	if opts.Kubeconfig == "" {
		opts.Kubeconfig = e.Kubeconfig
	}
	dir, err := os.MkdirTemp(e.dir, "sched-"+sanitize(opts.Name)+"-")
	if err != nil {
		return nil, err
	}
	cfg, err := PointConfigAt(opts.Config, opts.Kubeconfig)
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
	proc, err := startProcess(processSpec{
		name: "placement-scheduler",
		argv: append([]string{e.Binary,
			"--config", cfgPath,
			"--secure-port", fmt.Sprint(port),
			"--bind-address", "127.0.0.1",
			"--cert-dir", dir,
			"--authentication-kubeconfig", opts.Kubeconfig,
			"--authorization-kubeconfig", opts.Kubeconfig,
			"-v", "2",
		}, opts.Args...),
		logPath: filepath.Join(dir, "scheduler.log"),
		tee:     opts.Output,
	})
	if err != nil {
		return nil, err
	}
	s := &Scheduler{process: proc, port: port, timeout: e.Timeout}
	return s, nil
}

// StartScheduler is LaunchScheduler for a test: it fails the test if the
// process cannot start, stops it with SIGTERM when the test ends and, if the
// test failed, logs the tail of its log.
func (e *Env) StartScheduler(t testing.TB, opts SchedulerOptions) *Scheduler {
	t.Helper()
	if opts.Name == "" {
		opts.Name = t.Name()
	}
	s, err := e.LaunchScheduler(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.stopAfter(t, s.Stop, 80)
	return s
}

// sharedScheduler is the process SharedScheduler hands out.
type sharedScheduler struct {
	mu   sync.Mutex
	proc *Scheduler
}

// SharedScheduler returns a placement-scheduler process running the shipped
// config, started on first use (and again after StopSharedScheduler) and
// stopped by Stop. Most tests only need the shipped profile, and one process
// keeps a suite fast.
func (e *Env) SharedScheduler(t testing.TB) *Scheduler {
	t.Helper()
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.proc == nil {
		p, err := e.LaunchScheduler(SchedulerOptions{Name: "shared"})
		if err != nil {
			t.Fatalf("starting the shared scheduler: %v", err)
		}
		e.shared.proc = p
	}
	p := e.shared.proc
	if p.Exited() {
		t.Fatalf("the shared placement-scheduler has exited (%v); log tail:\n%s", p.Err(), p.LogTail(80))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared placement-scheduler log tail (%s):\n%s", p.logPath, p.LogTail(80))
		}
	})
	return p
}

// StopSharedScheduler stops the shared scheduler if it runs, for tests whose
// own processes must be the only ones contending for the lease and binding
// placement-scheduler pods. SIGTERM releases the lease at once.
func (e *Env) StopSharedScheduler() {
	e.shared.mu.Lock()
	defer e.shared.mu.Unlock()
	if e.shared.proc != nil {
		e.shared.proc.Stop()
		e.shared.proc = nil
	}
}

// Stop sends SIGTERM (the scheduler then releases its lease) and waits,
// killing the process after 20s.
func (s *Scheduler) Stop() { s.stop(20 * time.Second) }

// Port is the secure port (127.0.0.1).
func (s *Scheduler) Port() int { return s.port }

// UnhandledErrors returns the lines of a component's log that
// utilruntime.HandleError wrote ("Unhandled Error"): errors no caller
// handled, which a healthy start must not produce.
func UnhandledErrors(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Unhandled Error") {
			out = append(out, line)
		}
	}
	return out
}

// Get does GET https://127.0.0.1:<port><path> on the secure port, with a
// bearer token if one is given, and returns the status code. The serving
// certificate is self-signed, so it is not verified, as kubelet does not
// verify it for HTTPS probes.
func (s *Scheduler) Get(path, token string) (int, error) {
	code, _, err := s.GetBody(path, token)
	return code, err
}

// GetBody is Get that also returns the response body (/metrics,
// /debug/pprof/...).
func (s *Scheduler) GetBody(path, token string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", s.port, path), nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	// No keep-alive: each call is one request, as a probe is, and must not
	// leave a connection (and its goroutines) open in the process measured.
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, like kubelet probes
			DisableKeepAlives: true,
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// WaitForGet polls path on the secure port until it answers want.
func (s *Scheduler) WaitForGet(t testing.TB, path, token string, want int) {
	t.Helper()
	var code int
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, s.timeout, true, func(context.Context) (bool, error) {
		code, lastErr = s.Get(path, token)
		return lastErr == nil && code == want, nil
	})
	if err != nil {
		t.Fatalf("GET %s on :%d: want %d, last got %d (err %v)", path, s.port, want, code, lastErr)
	}
}

// PointConfigAt returns a copy of a KubeSchedulerConfiguration document with
// clientConnection.kubeconfig set to kubeconfigPath. With --config,
// kube-scheduler ignores --kubeconfig, so running the shipped config outside
// a cluster means rewriting that one field; everything else stays as shipped.
func PointConfigAt(config []byte, kubeconfigPath string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("parsing scheduler config: %w", err)
	}
	cc, _ := doc["clientConnection"].(map[string]any)
	if cc == nil {
		cc = map[string]any{}
	}
	cc["kubeconfig"] = kubeconfigPath
	doc["clientConnection"] = cc
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("writing scheduler config: %w", err)
	}
	return out, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// sanitize makes s usable in a directory or object name.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	return out
}

package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The control-plane processes envtest runs, by the name of their binary,
// for StopControlPlaneProcess and StartControlPlaneProcess.
const (
	APIServerProcess = "kube-apiserver"
	EtcdProcess      = "etcd"
)

// stoppedProcess is an envtest process StopControlPlaneProcess stopped:
// its exact command line, so StartControlPlaneProcess brings back the same
// process on the same ports, certificates and data directory.
type stoppedProcess struct {
	argv []string
}

// StopControlPlaneProcess stops kube-apiserver or etcd (APIServerProcess,
// EtcdProcess), and keeps its command line for StartControlPlaneProcess:
// with SIGTERM, as an operator restarting it would, then SIGKILL if it
// still runs after grace, as kubelet does after a pod's grace period; with
// grace 0, SIGKILL at once, as a crash. (kube-apiserver drains open
// watches on SIGTERM for up to its 60s shutdown timeout.) Everything else keeps
// running: the clients of a stopped apiserver see refused connections, an
// apiserver whose etcd is stopped answers with errors.
//
// envtest gives no handle on its processes, so the process is found among
// this process's children by its binary; envtest's own Stop later finds it
// exited and leaves it alone, and Env.Stop stops the restarted one.
func (e *Env) StopControlPlaneProcess(name string, grace time.Duration) error {
	if _, ok := e.stopped[name]; ok {
		return fmt.Errorf("%s is already stopped", name)
	}
	if c := e.restarted[name]; c != nil {
		// Restarted once already: it is our own child now.
		argv := append([]string{c.cmd.Path}, c.cmd.Args[1:]...)
		if grace == 0 {
			c.Kill()
		} else {
			c.stop(grace)
		}
		delete(e.restarted, name)
		e.stopped[name] = stoppedProcess{argv: argv}
		return nil
	}
	pid, argv, err := findChild(e.toolPath(name))
	if err != nil {
		return err
	}
	sig := syscall.SIGTERM
	if grace == 0 {
		sig = syscall.SIGKILL
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("stopping %s (pid %d): %w", name, pid, err)
	}
	// envtest's goroutine waits for (and so reaps) the process; it is gone
	// from /proc once that happened.
	gone := func(grace time.Duration) bool {
		return wait.PollUntilContextTimeout(context.Background(), pollInterval, grace, true, func(context.Context) (bool, error) {
			_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
			return errors.Is(err, os.ErrNotExist), nil
		}) == nil
	}
	if !gone(max(grace, 10*time.Second)) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !gone(10 * time.Second) {
			return fmt.Errorf("%s (pid %d) still runs after SIGTERM and SIGKILL", name, pid)
		}
	}
	e.stopped[name] = stoppedProcess{argv: argv}
	return nil
}

// StartControlPlaneProcess starts a process StopControlPlaneProcess stopped,
// with the same command line; its output goes to <dir>/<name>-restart.log.
// For the apiserver it then waits until /readyz answers ok (which needs
// etcd); for etcd it returns once the process runs.
func (e *Env) StartControlPlaneProcess(name string) error {
	s, ok := e.stopped[name]
	if !ok {
		return fmt.Errorf("%s is not stopped", name)
	}
	// Its own process group, as the full cluster's components have (a
	// terminal's Ctrl-C reaches only the caller, which stops it in order);
	// the output of all its restarts in one log.
	c, err := startProcess(processSpec{
		name:      "the restarted " + name,
		argv:      s.argv,
		logPath:   filepath.Join(e.dir, name+"-restart.log"),
		appendLog: true,
		ownGroup:  true,
	})
	if err != nil {
		return err
	}
	delete(e.stopped, name)
	e.restarted[name] = c
	if name != APIServerProcess {
		return nil
	}
	return e.WaitForAPIServer(context.Background())
}

// WaitForAPIServer polls the apiserver's /readyz until it answers ok.
func (e *Env) WaitForAPIServer(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, e.Timeout, true, func(ctx context.Context) (bool, error) {
		if c := e.restarted[APIServerProcess]; c != nil {
			if err := c.exitedError(); err != nil {
				return false, err
			}
		}
		_, last = e.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver /readyz: %w (last: %v)", err, last)
	}
	return nil
}

// stopRestarted stops the restarted process name, if any.
func (e *Env) stopRestarted(name string) error {
	c := e.restarted[name]
	if c == nil {
		return nil
	}
	delete(e.restarted, name)
	if c.stop(30 * time.Second) {
		return fmt.Errorf("restarted %s did not stop on SIGTERM within 30s; killed", name)
	}
	return nil
}

// findChild returns the pid and command line of this process's one child
// running binary.
func findChild(binary string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	self := os.Getpid()
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return 0, nil, err
	}
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if ppid, err := parentPID(pid); err != nil || ppid != self {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || exe != want {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			return 0, nil, err
		}
		argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		argv[0] = want
		return pid, argv, nil
	}
	return 0, nil, fmt.Errorf("no child process of pid %d runs %s", self, binary)
}

// parentPID reads the parent pid from /proc/<pid>/stat, whose second field
// (the command name, in parentheses) may itself contain spaces.
func parentPID(pid int) (int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(raw[i+1:]))
	if len(fields) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too short", pid)
	}
	return strconv.Atoi(fields[1])
}

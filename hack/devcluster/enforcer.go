package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// enforcerProcess is placement-enforcer beside the scheduler, as the kustomize
// base runs it: its own Lease, the same scheduler config, its log in dir.
type enforcerProcess struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startEnforcer runs binary against env with the scheduler config sched
// (nil: the shipped one), a 10 s grace period so that changes show quickly,
// and its endpoints on 127.0.0.1:10261.
func startEnforcer(binary string, env *framework.Env, dir string, sched []byte) (*enforcerProcess, error) {
	if sched == nil {
		sched = manifests.SchedulerConfig()
	}
	schedPath := filepath.Join(dir, "enforcer-scheduler-config.yaml")
	if err := os.WriteFile(schedPath, sched, 0o644); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`apiVersion: %s
kind: %s
schedulerConfig: %s
gracePeriod: {nodeAffinity: 10s, podAffinity: 10s, podAntiAffinity: 10s}
metricsBindAddress: 127.0.0.1:10261
`, enforcer.ConfigAPIVersion, enforcer.ConfigKind, schedPath)
	cfgPath := filepath.Join(dir, "enforcer-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	p := &enforcerProcess{log: filepath.Join(dir, "enforcer.log"), done: make(chan struct{})}
	logFile, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(binary, "--config", cfgPath, "--kubeconfig", env.Kubeconfig, "--v=2")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM (the leader releases its Lease) and waits a little.
func (p *enforcerProcess) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

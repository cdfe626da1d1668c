package framework

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is one child process the framework runs: the placement-scheduler
// and placement-enforcer under test, the full cluster's components, and a
// control-plane process restarted in place. Its output goes to a log file,
// and one goroutine waits for it, so that Exited, Err and Stop never block
// on a running process and nothing reaps it twice. Scheduler and Enforcer
// embed it, which gives them its exported methods.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// noise are substrings of log lines LogTail leaves out.
	noise []string
	done  chan struct{}
	err   error
}

// processSpec says how startProcess runs a process.
type processSpec struct {
	// name names the process in errors.
	name string
	argv []string
	// logPath receives the process's output: truncated, or appended to if
	// appendLog (a restarted process keeps its earlier runs' output).
	logPath   string
	appendLog bool
	// tee, if set, also receives the output.
	tee io.Writer
	// ownGroup puts the process in its own process group, so that a
	// terminal's Ctrl-C reaches only the caller, which stops everything in
	// order. Without it the process gets the Ctrl-C too.
	ownGroup bool
	// noise: process.noise.
	noise []string
}

// startProcess starts spec's process. It gets SIGKILL if the caller dies
// (e.g. on go test's timeout), so no test leaves one behind; the caller
// stops it otherwise.
func startProcess(spec processSpec) (*process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if spec.appendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(spec.logPath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	var out io.Writer = logFile
	if spec.tee != nil {
		out = io.MultiWriter(logFile, spec.tee)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: spec.ownGroup, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", spec.name, spec.argv[0], err)
	}
	p := &process{name: spec.name, cmd: cmd, logPath: spec.logPath, noise: spec.noise, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM (a leader then releases its lease) and waits, sending
// SIGKILL after grace; it reports whether it had to. A process that has
// exited already is left alone.
func (p *process) stop(grace time.Duration) (killed bool) {
	if p.Exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
		p.Kill()
		return true
	}
}

// stopAfter has stop (the caller's Stop) run when t ends and, if t failed,
// logs the last n lines of the process's log.
func (p *process) stopAfter(t testing.TB, stop func(), n int) {
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s log tail (%s):\n%s", p.name, p.logPath, p.LogTail(n))
		}
	})
}

// Kill sends SIGKILL, so the process dies without releasing its lease, as
// on a node failure, and waits for it.
func (p *process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Exited reports whether the process has exited.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process exits.
func (p *process) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once it has exited.
func (p *process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// exitedError describes an exited process, nil while it runs.
func (p *process) exitedError() error {
	if !p.Exited() {
		return nil
	}
	return fmt.Errorf("%s exited (%v); see %s", p.name, p.err, p.logPath)
}

// Log returns the process's output so far. Prefer API objects (the Lease,
// pods, events) where one records what a test checks; the log is for what
// only the process knows.
func (p *process) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// LogPath is the file the process's output goes to.
func (p *process) LogPath() string { return p.logPath }

// LogTail returns the last n lines of the log (without the lines the
// process's noise names).
func (p *process) LogTail(n int) string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !p.isNoise(sc.Text()) {
			lines = append(lines, sc.Text())
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (p *process) isNoise(line string) bool {
	for _, s := range p.noise {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// Usage is what a running process has used so far, read from Linux's
// /proc: CPU time in user and system mode, and the peak of its resident
// memory.
type Usage struct {
	CPU     time.Duration
	PeakRSS int64 // bytes
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, which Linux
// fixes at 100 for user space whatever the kernel's own tick.
const userHZ = 100

// Usage reads the process's Usage; an error where there is no /proc or the
// process has exited.
func (p *process) Usage() (Usage, error) {
	pid := p.cmd.Process.Pid
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("%s: %w", p.name, err)
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis, where field 3 (state)
	// starts; utime and stime are fields 14 and 15.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fields) < 13 {
		return Usage{}, fmt.Errorf("%s: /proc/%d/stat: unexpected %q", p.name, pid, stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("%s: /proc/%d/stat: %w", p.name, pid, err)
		}
		ticks += n
	}
	u := Usage{CPU: time.Duration(ticks) * time.Second / userHZ}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("%s: %w", p.name, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return Usage{}, fmt.Errorf("%s: /proc/%d/status VmHWM: %w", p.name, pid, err)
			}
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

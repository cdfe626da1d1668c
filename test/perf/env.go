package perf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModulePath is this repository's module.
const ModulePath = "github.com/placement-scheduler/placement-scheduler"

// RepoRoot walks up from the working directory (the package directory under
// go test) to this module's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isOurModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

func isOurModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == ModulePath
		}
	}
	return false
}

// UpstreamDir returns scheduler_perf's directory in the module cache, for
// the k8s.io/kubernetes version go.mod pins.
func UpstreamDir(repoRoot string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goBin, "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes")
	cmd.Dir = repoRoot
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m k8s.io/kubernetes: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", errors.New("k8s.io/kubernetes is not in the module cache: run `go mod download k8s.io/kubernetes`")
	}
	perfDir := filepath.Join(dir, "test", "integration", "scheduler_perf")
	if _, err := os.Stat(perfDir); err != nil {
		return "", fmt.Errorf("scheduler_perf sources: %w", err)
	}
	return perfDir, nil
}

// EnsureEtcd makes etcd findable on PATH, where scheduler_perf looks for it
// (it starts a fresh etcd per workload). When it is not on PATH already, the
// repository's bin/ (built by `make etcd`) is prepended.
func EnsureEtcd(repoRoot string) (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	bin := filepath.Join(repoRoot, "bin")
	if st, err := os.Stat(filepath.Join(bin, "etcd")); err == nil && !st.IsDir() {
		if err := os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
			return "", err
		}
		return exec.LookPath("etcd")
	}
	return "", fmt.Errorf("etcd is neither on PATH nor at %s: run `make etcd` to build bin/etcd "+
		"(scheduler_perf starts its own etcd for every workload and finds it on PATH)", filepath.Join(bin, "etcd"))
}

// maxSocketDirLen leaves room, under the ~107-byte limit of unix socket
// paths, for the "/integration_test_etcd_dataNNNNNNNNNN/etcd.sock" etcd's
// socket adds to the temp dir.
const maxSocketDirLen = 50

// EnsureShortTempDir points TMPDIR at a short directory when the current one
// is too long for etcd's unix socket. It returns a cleanup func (no-op when
// nothing changed).
func EnsureShortTempDir() (func(), error) {
	if len(os.TempDir()) <= maxSocketDirLen {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("/tmp", "sperf")
	if err != nil {
		return nil, fmt.Errorf("TMPDIR %q is too long for etcd's unix socket and /tmp is not usable: %w", os.TempDir(), err)
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", dir); err != nil {
		return nil, err
	}
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
	}, nil
}

// Package manifests holds what `kubectl apply -k manifests/` installs, and
// hands the same bytes to Go code: the shipped KubeSchedulerConfiguration is
// read here and nowhere else, so `make run`, the tests and the bench can never
// drift from the ConfigMap an install generates.
package manifests

import (
	"embed"
	"errors"
	"io/fs"
	"path"
)

// files is what `kubectl apply -k` reads: the newest line's kustomization
// (this directory's YAML) over base/ (the objects every line installs), the
// older lines' (lines/k8s-<minor>/) over the same base/, and examples/, one
// folder per scenario plus the fleet.
//
//go:embed *.yaml base lines examples
var files embed.FS

// Base returns the folder, within Files(), that installs this build's
// Kubernetes line: "." (the base) for the newest line, lines/k8s-<minor>
// (an overlay with that line's image and profile) for an older one.
func Base() string { return lineBase }

// Read returns the shipped file name (a path within Files()) as this
// build's line has it: an older line's folder overrides a file by holding
// one at the same path (lines/k8s-1.36/scheduler-config.yaml for
// scheduler-config.yaml, lines/k8s-1.36/examples/... for examples/...).
// Only scheduler configs are overridden: the lines differ only where
// upstream's default profile does.
func Read(name string) ([]byte, error) {
	if lineBase != "." {
		b, err := fs.ReadFile(files, path.Join(lineBase, name))
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return fs.ReadFile(files, name)
}

// SchedulerConfig returns this build line's scheduler-config.yaml as
// shipped: the profile its kustomization turns into the scheduler's
// ConfigMap.
func SchedulerConfig() []byte {
	return mustRead("scheduler-config.yaml")
}

// Example returns manifests/examples/<name> as this build's line has it
// (Read), e.g. "profile-pool/scheduler-config.yaml".
func Example(name string) ([]byte, error) {
	return Read("examples/" + name)
}

// Examples returns examples/ as a file system rooted there: one folder per
// placement scenario (README.md, the YAML, then/ and check/expect.yaml) and
// fleet/.
func Examples() fs.FS {
	sub, err := fs.Sub(files, "examples")
	if err != nil {
		// Unreachable: the directory is embedded.
		panic(err)
	}
	return sub
}

// Files returns the kustomize base (kustomization.yaml at its root) and
// examples/ as a read-only file system; os.CopyFS writes it out for
// `kubectl apply -k`.
func Files() fs.FS { return files }

func mustRead(name string) []byte {
	b, err := Read(name)
	if err != nil {
		// Unreachable: go:embed fails the build if the file is missing.
		panic(err)
	}
	return b
}

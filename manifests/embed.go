// Package manifests holds what `kubectl apply -k manifests/` installs, and
// hands the same bytes to Go code: the shipped KubeSchedulerConfiguration is
// read here and nowhere else, so `make run`, the tests and the bench can never
// drift from the ConfigMap an install generates.
package manifests

import (
	"embed"
	"io/fs"
)

// files is the kustomize base (this directory's YAML) and examples/, one
// folder per scenario plus the fleet.
//
//go:embed *.yaml examples
var files embed.FS

// SchedulerConfig returns scheduler-config.yaml as shipped: the profile the
// kustomize base turns into the scheduler's ConfigMap.
func SchedulerConfig() []byte {
	return mustRead("scheduler-config.yaml")
}

// Example returns manifests/examples/<name>, e.g.
// "profile-pool/scheduler-config.yaml".
func Example(name string) ([]byte, error) {
	return fs.ReadFile(files, "examples/"+name)
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
	b, err := fs.ReadFile(files, name)
	if err != nil {
		// Unreachable: go:embed fails the build if the file is missing.
		panic(err)
	}
	return b
}

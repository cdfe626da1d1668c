// Package buildinfo is the release a binary was built as, and the
// build_info gauge each binary exports it with, so that a dashboard or an
// alert can tell which version, commit and Kubernetes line every replica
// runs (during a rolling upgrade, two at once).
package buildinfo

import (
	"runtime"

	"k8s.io/component-base/metrics"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// Info is the release a binary was built as; each cmd gets it from the
// Makefile's -ldflags -X.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	BuildDate string `json:"buildDate"`
}

// Register creates <prefix>_build_info, a gauge whose one series is 1 and
// whose labels say what the binary is: version, git_commit, build_date,
// kubernetes_line (k8sline.Minor) and go_version, as kube's own
// kubernetes_build_info does for the Kubernetes release. register is the
// MustRegister of the registry the binary serves (legacyregistry's for the
// scheduler, the enforcer's own). A component-base metric records nothing
// until registered, so the value is set after register.
func Register(register func(...metrics.Registerable), prefix string, info Info) {
	g := metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      prefix,
		Name:           "build_info",
		Help:           "A metric with a constant '1' value labeled by the version, git commit and build date the binary was built from, the Kubernetes line its plugins mirror, and its Go version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"version", "git_commit", "build_date", "kubernetes_line", "go_version"})
	register(g)
	g.WithLabelValues(info.Version, info.GitCommit, info.BuildDate, k8sline.Minor, runtime.Version()).Set(1)
}

package buildinfo

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// Registered in a registry, the gauge is one series at 1 carrying the
// build's labels and this build's Kubernetes line, under the prefix given.
func TestRegister(t *testing.T) {
	reg := metrics.NewKubeRegistry()
	Register(reg.MustRegister, "placement_enforcer", Info{Version: "v1.2.3", GitCommit: "0123abc", BuildDate: "2026-01-02T03:04:05Z"})
	want := fmt.Sprintf(`# HELP placement_enforcer_build_info [ALPHA] A metric with a constant '1' value labeled by the version, git commit and build date the binary was built from, the Kubernetes line its plugins mirror, and its Go version.
# TYPE placement_enforcer_build_info gauge
placement_enforcer_build_info{build_date="2026-01-02T03:04:05Z",git_commit="0123abc",go_version=%q,kubernetes_line=%q,version="v1.2.3"} 1
`, runtime.Version(), k8sline.Minor)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "placement_enforcer_build_info"); err != nil {
		t.Error(err)
	}
	// Two registries, two binaries' prefixes: nothing is shared.
	other := metrics.NewKubeRegistry()
	Register(other.MustRegister, "placement_scheduler", Info{Version: "v0"})
	families, err := other.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(families) != 1 || families[0].GetName() != "placement_scheduler_build_info" {
		t.Errorf("a second registry gathers %v, want placement_scheduler_build_info alone", families)
	}
}

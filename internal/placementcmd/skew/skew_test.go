package skew

import (
	"fmt"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

var threeLines = []string{"1.35", "1.36", "1.37"}

func gitVersion(v string) *apimachineryversion.Info {
	return &apimachineryversion.Info{GitVersion: v}
}

// A build against servers of every kind: its own minor, one either way,
// two either way, beyond every line, managed clusters' suffixes, and
// versions that say nothing about the minor.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		line    string
		server  *apimachineryversion.Info
		known   bool
		within  bool
		serving string
		warn    bool
	}{
		{"1.37", gitVersion("v1.37.2"), true, true, "1.37", false},
		{"1.37", gitVersion("v1.36.3"), true, true, "1.36", true},
		// One newer than the newest line: served by the newest, as the chart does.
		{"1.37", gitVersion("v1.38.0"), true, true, "1.37", false},
		{"1.36", gitVersion("v1.38.0"), true, false, "1.37", true},
		{"1.37", gitVersion("v1.35.4"), true, false, "1.35", true},
		{"1.37", gitVersion("v1.39.1"), true, false, "", true},
		{"1.35", gitVersion("v1.34.9"), true, true, "", true},
		{"1.35", gitVersion("v1.37.0"), true, false, "1.37", true},
		{"1.37", gitVersion("v1.36.2-gke.1245000"), true, true, "1.36", true},
		{"1.36", gitVersion("v1.36.0-eks-1234abcd"), true, true, "1.36", false},
		// No usable git version: the major and minor, "+" and all.
		{"1.37", &apimachineryversion.Info{Major: "1", Minor: "35+", GitVersion: "custom"}, true, false, "1.35", true},
		{"1.37", gitVersion("v2.37.0"), true, false, "", true},
		// Nothing to judge by: no warning.
		{"1.37", gitVersion("v0.0.0-master+$Format:%H$"), false, false, "", false},
		{"1.37", &apimachineryversion.Info{GitVersion: "unknown", Major: "1", Minor: ""}, false, false, "", false},
		{"1.37", &apimachineryversion.Info{}, false, false, "", false},
		{"1.37", nil, false, false, "", false},
	} {
		d := Decide(tc.line, threeLines, tc.server)
		if d.Known != tc.known || d.WithinSkew != tc.within || d.Serving != tc.serving || d.Warn() != tc.warn {
			t.Errorf("line %s, server %+v: known %v, within skew %v, serving %q, warn %v; want %v, %v, %q, %v",
				tc.line, tc.server, d.Known, d.WithinSkew, d.Serving, d.Warn(), tc.known, tc.within, tc.serving, tc.warn)
		}
		if w := d.Warning("v0.1.0", "linux", "amd64"); (w != "") != tc.warn || strings.Contains(w, "\n") {
			t.Errorf("line %s, server %+v: warning %q, want one line: %v", tc.line, tc.server, w, tc.warn)
		}
	}
}

// This build's own line (k8sline.Minor) against servers around it: the
// expectations follow from the line, so they hold on every line.
func TestDecideThisLine(t *testing.T) {
	line := utilversion.MustParseMajorMinor(k8sline.Minor)
	lines := k8sline.Lines()
	server := func(offset int) *apimachineryversion.Info {
		v := line.OffsetMinor(offset)
		return gitVersion(fmt.Sprintf("v%d.%d.1", v.Major(), v.Minor()))
	}
	if d := Decide(k8sline.Minor, lines, server(0)); !d.Known || !d.WithinSkew || d.Serving != k8sline.Minor || d.Warn() {
		t.Errorf("a server of this line's minor: %+v, want no warning", d)
	}
	for _, offset := range []int{-2, -1, 2} {
		d := Decide(k8sline.Minor, lines, server(offset))
		if !d.Warn() || d.WithinSkew != (offset == -1) {
			t.Errorf("a server %d minor(s) from this line: %+v, want a warning, within skew %v", offset, d, offset == -1)
		}
		w := d.Warning("v0.1.0", "linux", "arm64")
		if !strings.HasPrefix(w, "Warning: kubectl-placement is built for Kubernetes "+k8sline.Minor+" but the server is "+server(offset).GitVersion) {
			t.Errorf("a server %d minor(s) from this line: %q does not name the line and the server", offset, w)
		}
		if d.Serving != "" && !strings.HasSuffix(w, "kubectl-placement_v0.1.0-k8s"+d.Serving+"_linux_arm64.tar.gz") {
			t.Errorf("a server %d minor(s) from this line: %q does not end with the archive of line %s", offset, w, d.Serving)
		}
	}
	// One newer: the newest line serves it, so no warning there; on an
	// older line a warning naming the next line's archive.
	newest := lines[len(lines)-1]
	next := line.AddMinor(1)
	want := fmt.Sprintf("%d.%d", next.Major(), next.Minor())
	if k8sline.Minor == newest {
		want = newest
	}
	if d := Decide(k8sline.Minor, lines, server(1)); d.Serving != want || d.Warn() != (want != k8sline.Minor) {
		t.Errorf("a server one minor newer than this line: %+v, want it served by %s", d, want)
	}
}

// The message says why and what to take instead, in one line.
func TestWarning(t *testing.T) {
	for _, tc := range []struct {
		line, server, goos, want string
	}{
		{"1.37", "v1.36.3", "linux",
			"Warning: kubectl-placement is built for Kubernetes 1.37 but the server is v1.36.3: explain and simulate judge with 1.37's scheduler plugins, the cluster's placement-scheduler with 1.36's; use the 1.36 build, kubectl-placement_v0.1.0-k8s1.36_linux_amd64.tar.gz"},
		{"1.37", "v1.35.4", "windows",
			"Warning: kubectl-placement is built for Kubernetes 1.37 but the server is v1.35.4, outside kubectl's version skew (one minor either way); use the 1.35 build, kubectl-placement_v0.1.0-k8s1.35_windows_amd64.zip"},
		{"1.35", "v1.34.1", "darwin",
			"Warning: kubectl-placement is built for Kubernetes 1.35 but the server is v1.34.1, which no placement-scheduler line supports (1.35, 1.36 and 1.37; 1.38 on the 1.37 line)"},
		{"1.37", "v1.40.0", "linux",
			"Warning: kubectl-placement is built for Kubernetes 1.37 but the server is v1.40.0, outside kubectl's version skew (one minor either way) and every placement-scheduler line (1.35, 1.36 and 1.37; 1.38 on the 1.37 line)"},
		{"1.37", "v1.37.0", "linux", ""},
	} {
		if got := Decide(tc.line, threeLines, gitVersion(tc.server)).Warning("v0.1.0", tc.goos, "amd64"); got != tc.want {
			t.Errorf("line %s, server %s:\n got %q\nwant %q", tc.line, tc.server, got, tc.want)
		}
	}
}

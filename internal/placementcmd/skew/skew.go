// Package skew tells whether kubectl-placement's build line suits the
// cluster it talks to, and words the warning when it does not.
//
// Two things make a build unsuitable. kubectl's version skew policy lets a
// client be one minor older or newer than the apiserver, no more. And
// explain and simulate judge with the in-tree plugins of the build's own
// line, so even within that skew a build of another line than the one that
// serves the cluster may decide otherwise than the cluster's scheduler. The
// line that serves a cluster is picked as the chart picks it: the line of
// the cluster's minor, or the newest line for a cluster one minor newer.
package skew

import (
	"fmt"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Decision is how a build line fits a server.
type Decision struct {
	// Line is the build's line ("1.37"); Lines every supported one.
	Line  string
	Lines []string
	// Server is the server's version as it reports it ("v1.36.2-gke.1").
	Server string
	// Known is false when the server's version says nothing about its
	// minor (unparsable, or a build with none stamped: v0.0.0-master).
	Known bool
	// WithinSkew: the server is at most one minor from Line.
	WithinSkew bool
	// Serving is the line that serves the server's minor, "" when none.
	Serving string
}

// Decide judges server against the build's line, among lines (the
// supported ones, oldest first, each "1.<minor>"). A nil server is not
// known.
func Decide(line string, lines []string, server *apimachineryversion.Info) Decision {
	d := Decision{Line: line, Lines: lines}
	if server == nil {
		return d
	}
	d.Server = server.GitVersion
	sv := parse(server)
	lv, err := utilversion.ParseMajorMinor(line)
	if sv == nil || err != nil {
		return d
	}
	if d.Server == "" {
		d.Server = sv.String()
	}
	d.Known = true
	d.WithinSkew = sv.Major() == lv.Major() && sv.Minor()+1 >= lv.Minor() && sv.Minor() <= lv.Minor()+1
	d.Serving = serving(sv, lines)
	return d
}

// parse reads the server's version from its git version, else from its
// major and minor (managed clusters may report Minor as "36+"); nil when
// neither says anything, or says major 0 (a build with no version stamped).
func parse(info *apimachineryversion.Info) *utilversion.Version {
	v, err := utilversion.ParseGeneric(info.GitVersion)
	if err != nil {
		v, err = utilversion.ParseGeneric(info.Major + "." + strings.TrimRight(info.Minor, "+"))
	}
	if err != nil || v.Major() == 0 {
		return nil
	}
	return v
}

// serving is the line that serves server: its own minor's, else the newest
// when server is one minor newer than it (the skew policy lets a scheduler
// be one minor older than the apiserver), else none.
func serving(server *utilversion.Version, lines []string) string {
	mm := utilversion.MajorMinor(server.Major(), server.Minor())
	for _, l := range lines {
		if v, err := utilversion.ParseMajorMinor(l); err == nil && v.EqualTo(mm) {
			return l
		}
	}
	if len(lines) == 0 {
		return ""
	}
	newest := lines[len(lines)-1]
	if v, err := utilversion.ParseMajorMinor(newest); err == nil && v.AddMinor(1).EqualTo(mm) {
		return newest
	}
	return ""
}

// Warn reports whether the build deserves a warning against the server:
// the server is known and its line is not the build's.
func (d Decision) Warn() bool {
	return d.Known && d.Serving != d.Line
}

// Warning is the one line to print on stderr, "" when d deserves none.
// version, goos and goarch name the archive of the line to use.
func (d Decision) Warning(version, goos, goarch string) string {
	if !d.Warn() {
		return ""
	}
	msg := fmt.Sprintf("Warning: kubectl-placement is built for Kubernetes %s but the server is %s", d.Line, d.Server)
	switch {
	case d.Serving == "" && d.WithinSkew:
		return msg + ", which no placement-scheduler line supports (" + d.supported() + ")"
	case d.Serving == "":
		return msg + ", outside kubectl's version skew (one minor either way) and every placement-scheduler line (" + d.supported() + ")"
	case d.WithinSkew:
		msg += fmt.Sprintf(": explain and simulate judge with %s's scheduler plugins, the cluster's placement-scheduler with %s's", d.Line, d.Serving)
	default:
		msg += ", outside kubectl's version skew (one minor either way)"
	}
	return msg + fmt.Sprintf("; use the %s build, %s", d.Serving, Archive(version, d.Serving, goos, goarch))
}

// supported says which clusters the lines serve: "1.35, 1.36 and 1.37;
// 1.38 on the 1.37 line".
func (d Decision) supported() string {
	n := len(d.Lines)
	if n == 0 {
		return "none"
	}
	list := d.Lines[n-1]
	if n > 1 {
		list = strings.Join(d.Lines[:n-1], ", ") + " and " + list
	}
	newest, err := utilversion.ParseMajorMinor(d.Lines[n-1])
	if err != nil {
		return list
	}
	next := newest.AddMinor(1)
	return fmt.Sprintf("%s; %d.%d on the %s line", list, next.Major(), next.Minor(), d.Lines[n-1])
}

// Archive is the release asset holding kubectl-placement version of line
// for goos/goarch: a .zip on Windows, a .tar.gz elsewhere.
func Archive(version, line, goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("kubectl-placement_%s-k8s%s_%s_%s%s", version, line, goos, goarch, ext)
}

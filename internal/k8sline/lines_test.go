package k8sline

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Lines is the project's list of lines: the Makefile's K8S_LINES, and the
// builds themselves (go.mod's k8s.io/kubernetes minor for the newest, a
// lines/k8s-1.<minor> workspace for every other), with this build's Minor
// among them.
func TestLines(t *testing.T) {
	root := filepath.Join("..", "..")
	lines := Lines()
	if !slices.IsSorted(lines) || len(slices.Compact(slices.Clone(lines))) != len(lines) {
		t.Errorf("Lines() = %v: want each minor once, oldest first", lines)
	}
	if !slices.Contains(lines, Minor) {
		t.Errorf("Lines() = %v lacks this build's Minor %s", lines, Minor)
	}

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^K8S_LINES\s*:=\s*(.+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no K8S_LINES")
	}
	if fromMake := strings.Fields(string(m[1])); !slices.Equal(fromMake, lines) {
		t.Errorf("internal/k8sline Lines() = %v, the Makefile's K8S_LINES = %v: change both", lines, fromMake)
	}

	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	newest := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes v(1\.\d+)\.\d+`).FindSubmatch(gomod)
	if newest == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes release")
	}
	builds := []string{string(newest[1])}
	workspaces, err := filepath.Glob(filepath.Join(root, "lines", "k8s-1.*", "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workspaces {
		builds = append(builds, strings.TrimPrefix(filepath.Base(filepath.Dir(w)), "k8s-"))
	}
	slices.Sort(builds)
	if !slices.Equal(builds, lines) {
		t.Errorf("internal/k8sline Lines() = %v, but the builds (go.mod and lines/k8s-1.*/go.work) are %v", lines, builds)
	}
}

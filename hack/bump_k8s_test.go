// Package hack_test checks hack/bump-k8s.sh (make bump-k8s) on a throwaway
// module shaped like ours: pinned at v1.37.1 with the staging replaces, a
// doc naming the version, a changelog, and tool modules that pin k8s.io
// directly or only indirectly.
package hack_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	fromK8s = "v1.37.1"
	toK8s   = "v1.37.2"
)

// staging lists the staging modules of k8s.io/kubernetes@fromK8s, from its
// go.mod's replace directives.
func staging(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@"+fromK8s)
	cmd.Env = goEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %v\n%s", fromK8s, err, out)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(info.GoMod)
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "=>" && strings.HasPrefix(f[2], "./staging/") {
			mods = append(mods, f[0])
		}
	}
	if len(mods) < 20 {
		t.Fatalf("%s names %d staging modules, want the full list", info.GoMod, len(mods))
	}
	return mods
}

// unpinned is a staging module k8s.io/kubernetes does not require, left out
// of the fixture's replaces: the script must add it.
const unpinned = "k8s.io/sample-controller"

// fixture writes the throwaway repository and returns its root.
func fixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	script, err := os.ReadFile("bump-k8s.sh")
	if err != nil {
		t.Fatal(err)
	}
	var gomod strings.Builder
	gomod.WriteString("module example.com/bumpfixture\n\ngo 1.26.0\n\nrequire (\n")
	gomod.WriteString("\tk8s.io/kubernetes " + fromK8s + "\n\tk8s.io/api v0.37.1\n)\n\nreplace (\n")
	for _, m := range staging(t) {
		if m != unpinned {
			gomod.WriteString("\t" + m + " => " + m + " v0.37.1\n")
		}
	}
	gomod.WriteString(")\n")
	files := map[string]string{
		"hack/bump-k8s.sh": string(script),
		"go.mod":           gomod.String(),
		// names imports nothing: go mod tidy needs Kubernetes' module
		// graph, not its packages.
		"main.go":      "package main\n\nimport (\n\t_ \"k8s.io/api/core/v1\"\n\t_ \"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names\"\n)\n\nfunc main() {}\n",
		"docs/a.md":    "Decides as Kubernetes " + fromK8s + " does; v1.37.1's cache, not v1.37.10.\n",
		"CHANGELOG.md": "- Built on " + fromK8s + ".\n",
		// A tool module whose k8s.io modules are its dependency's choice.
		"tools/indirect/go.mod": "module example.com/indirect\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery v0.37.1 // indirect\n",
		// A tool module that pins a staging module itself.
		"tools/direct/go.mod":  "module example.com/direct\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery v0.37.1\n",
		"tools/direct/main.go": "package main\n\nimport _ \"k8s.io/apimachinery/pkg/types\"\n\nfunc main() {}\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// The script runs go mod tidy in each module, which needs go.sum
	// entries of the starting graph too.
	for _, dir := range []string{".", "tools/direct"} {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = filepath.Join(root, dir)
		cmd.Env = goEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go mod tidy in %s: %v\n%s", dir, err, out)
		}
	}
	return root
}

func goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
}

func runBump(t *testing.T, root, version string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "hack/bump-k8s.sh"), version)
	cmd.Dir = root
	cmd.Env = goEnv()
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func read(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBumpK8sRefusesBadVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs the v1.37 modules from the module cache or proxy")
	}
	root := fixture(t)
	before := read(t, root, "go.mod")
	for _, tc := range []struct{ version, want string }{
		{"", "VERSION must be a Kubernetes release vX.Y.Z"},
		{"1.37.2", "VERSION must be a Kubernetes release vX.Y.Z"},
		{"v1.37", "VERSION must be a Kubernetes release vX.Y.Z"},
		{"v1.37.2; rm -rf /", "VERSION must be a Kubernetes release vX.Y.Z"},
		{"v1.38.0", "another minor"},
		{"v1.37.9999", "k8s.io/kubernetes@v1.37.9999 cannot be downloaded"},
	} {
		_, stderr, err := runBump(t, root, tc.version)
		if err == nil {
			t.Errorf("VERSION=%q: exit 0, want an error", tc.version)
		}
		if lines := strings.Count(strings.TrimRight(stderr, "\n"), "\n") + 1; lines != 1 || !strings.HasPrefix(stderr, "bump-k8s: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("VERSION=%q: stderr %q, want one line \"bump-k8s: ...%s...\"", tc.version, stderr, tc.want)
		}
		if got := read(t, root, "go.mod"); got != before {
			t.Errorf("VERSION=%q: go.mod changed although the bump was refused:\n%s", tc.version, got)
		}
	}
}

func TestBumpK8sMovesPatch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs the v1.37 modules from the module cache or proxy")
	}
	root := fixture(t)
	stdout, stderr, err := runBump(t, root, toK8s)
	if err != nil {
		t.Fatalf("bump to %s: %v\nstdout:\n%s\nstderr:\n%s", toK8s, err, stdout, stderr)
	}

	gomod := read(t, root, "go.mod")
	if !strings.Contains(gomod, "k8s.io/kubernetes "+toK8s) {
		t.Errorf("go.mod does not require k8s.io/kubernetes %s:\n%s", toK8s, gomod)
	}
	// Every staging module of the release, pinned before or not, is
	// replaced at v0.37.2.
	for _, m := range staging(t) {
		if want := m + " => " + m + " v0.37.2"; !strings.Contains(gomod, want) {
			t.Errorf("go.mod lacks %q:\n%s", want, gomod)
		}
	}
	if strings.Contains(gomod, "v0.37.1") || strings.Contains(gomod, fromK8s) {
		t.Errorf("go.mod still names the old release:\n%s", gomod)
	}

	if got, want := read(t, root, "docs/a.md"), "Decides as Kubernetes "+toK8s+" does; "+toK8s+"'s cache, not v1.37.10.\n"; got != want {
		t.Errorf("docs/a.md = %q, want %q (only the exact version moves)", got, want)
	}
	if got := read(t, root, "CHANGELOG.md"); !strings.Contains(got, fromK8s) {
		t.Errorf("CHANGELOG.md history was rewritten: %q", got)
	}
	if got := read(t, root, "tools/indirect/go.mod"); !strings.Contains(got, "k8s.io/apimachinery v0.37.1 // indirect") {
		t.Errorf("tools/indirect/go.mod: an indirect k8s.io module moved:\n%s", got)
	}
	if got := read(t, root, "tools/direct/go.mod"); !strings.Contains(got, "k8s.io/apimachinery v0.37.2") {
		t.Errorf("tools/direct/go.mod: its own k8s.io pin did not move:\n%s", got)
	}

	// A second run has nothing to do and says so.
	stdout, _, err = runBump(t, root, toK8s)
	if err != nil || !strings.Contains(stdout, "already at "+toK8s) {
		t.Errorf("second run: err %v, stdout %q, want \"already at %s\"", err, stdout, toK8s)
	}
}

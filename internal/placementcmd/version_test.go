package placementcmd

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestVersion: the stamped build info in both formats, and -o's choices;
// --client asks no server (internal/placementcmd/skew's tests ask one).
// A test binary's build info lists no modules, so the Kubernetes version
// reads "unknown" here; test/release checks it on the released binary, and
// TestModuleVersion the lookup.
func TestVersion(t *testing.T) {
	build := BuildInfo{Version: "v1.2.3", GitCommit: "0123456789ab", BuildDate: "2026-01-02T03:04:05Z"}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := newVersion(genericiooptions.IOStreams{Out: &out}, build)
		cmd.SetArgs(append(args, "--client"))
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.Execute()
		return out.String(), err
	}
	line, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^kubectl-placement v1\.2\.3 \(Kubernetes 1\.3[0-9] line, commit 0123456789ab, built 2026-01-02T03:04:05Z, Kubernetes \S+, client-go \S+, go\S+ \w+/\w+\)\nserver: not asked \(--client\)\n$`).MatchString(line) {
		t.Errorf("version: %q", line)
	}
	out, err := run("-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var info versionInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, out)
	}
	if info.BuildInfo != build || info.Kubernetes == "" || info.ClientGo == "" || info.Platform == "" || info.ServerVersion != "" {
		t.Errorf("version -o json: %+v", info)
	}
	if _, err := run("-o", "table"); err == nil || !strings.Contains(err.Error(), `-o "table": want json or yaml`) {
		t.Errorf("version -o table: error %v, want one naming -o and the choices", err)
	}
}

// TestModuleVersion: a module's version from build info, the replacement's
// when go.mod replaces it (k8s.io/client-go => v0.37.1 style), "unknown"
// when absent.
func TestModuleVersion(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{
		{Path: "k8s.io/kubernetes", Version: "v1.37.2"},
		{Path: "k8s.io/client-go", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/client-go", Version: "v0.37.1"}},
		{Path: "k8s.io/api", Version: "v0.0.0", Replace: &debug.Module{Path: "../api"}},
	}}
	for path, want := range map[string]string{
		"k8s.io/kubernetes": "v1.37.2",
		"k8s.io/client-go":  "v0.37.1",
		"k8s.io/api":        "v0.0.0", // a directory replacement has no version
		"k8s.io/absent":     "unknown",
	} {
		if got := moduleVersion(bi, path); got != want {
			t.Errorf("moduleVersion(%s) = %q, want %q", path, got, want)
		}
	}
	if got := moduleVersion(nil, "k8s.io/kubernetes"); got != "unknown" {
		t.Errorf("moduleVersion without build info = %q, want unknown", got)
	}
}

// TestKubectlPlacementName: usage and help name the command as typed
// (`kubectl placement`), and cobra's completion answers kubectl's
// __complete requests with every verb.
func TestKubectlPlacementName(t *testing.T) {
	help, err := runCLI(t, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "kubectl placement [command]") || strings.Contains(help, "kubectl-placement") {
		t.Errorf("--help should name `kubectl placement`, not the binary:\n%s", help)
	}
	explain, err := runCLI(t, "", "explain", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(explain, "\n  kubectl placement explain (POD | -f FILE)") {
		t.Errorf("explain --help usage should start with `kubectl placement explain`:\n%s", explain)
	}
	words, err := runCLI(t, "", "__complete", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"explain", "completion"} {
		if !strings.Contains(words, "\n"+verb+"\t") && !strings.HasPrefix(words, verb+"\t") {
			t.Errorf("__complete '': %q lacks %s", words, verb)
		}
	}
	bash, err := runCLI(t, "", "completion", "bash")
	if err != nil || !strings.Contains(bash, "__start_kubectl-placement") {
		t.Errorf("completion bash: %v, script without __start_kubectl-placement", err)
	}
}

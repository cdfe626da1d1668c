package hack_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyGenerated runs hack/verify-generated.sh (make verify-generated)
// on a copy of the API types: the committed deep copies pass, and a type
// changed without make generate fails, naming the stale file and the fix.
func TestVerifyGenerated(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "hack/boilerplate.go.txt"} {
		data, err := os.ReadFile(filepath.Join(repo, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.CopyFS(filepath.Join(root, "apis"), os.DirFS(filepath.Join(repo, "apis"))); err != nil {
		t.Fatal(err)
	}
	verify := func() (string, error) {
		cmd := exec.Command("bash", filepath.Join(repo, "hack/verify-generated.sh"), root)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := verify(); err != nil {
		t.Fatalf("the committed deep copies: %v\n%s", err, out)
	}

	types := filepath.Join(root, "apis/enforcer/v1alpha1/types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Replace(string(src), "type Backoff struct {\n", "type Backoff struct {\n\tSteps []int `json:\"steps,omitempty\"`\n", 1)
	if stale == string(src) {
		t.Fatal("types.go has no Backoff struct to change")
	}
	if err := os.WriteFile(types, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := verify()
	if err == nil {
		t.Fatalf("a field added without make generate passed:\n%s", out)
	}
	if want := "apis/enforcer/v1alpha1/zz_generated.deepcopy.go is stale: run make generate"; !strings.Contains(out, want) {
		t.Fatalf("output %q does not say %q", out, want)
	}
}

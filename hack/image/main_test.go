package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a tiny static linux program for the host's arch.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOFLAGS=")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building a static test binary: %v\n%s", err, b)
	}
	return out
}

// imageFile is one regular file or directory of an image's filesystem.
type imageFile struct {
	mode     int64
	uid, gid int
	dir      bool
	body     []byte
}

func flatten(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]imageFile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files["/"+strings.TrimSuffix(h.Name, "/")] = imageFile{mode: h.Mode, uid: h.Uid, gid: h.Gid, dir: h.Typeflag == tar.TypeDir, body: body}
		}
		rc.Close()
	}
	return files
}

// The tarball `make image` writes holds one image, tagged as asked, whose
// config runs our binary as the non-root user, with the binary owned by root.
func TestImageRunsBinaryAsNonRoot(t *testing.T) {
	bin := staticBinary(t)
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// The same static program stands in for kubectl-placement, under its name.
	tool := filepath.Join(t.TempDir(), "kubectl-placement")
	if err := os.WriteFile(tool, want, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{Binary: bin, Tools: []string{tool}, Arch: runtime.GOARCH, Created: created, Version: "v9.9.9", Revision: "abc123", Source: "https://example.com/src"}
	if err := run("registry.example.com/team/placement-scheduler:v9.9.9", out, opts); err != nil {
		t.Fatal(err)
	}

	tag, _ := name.NewTag("registry.example.com/team/placement-scheduler:v9.9.9")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatalf("reading the tarball back under its tag: %v", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if got := strings.Join(c.Entrypoint, " "); got != EntrypointPath {
		t.Errorf("entrypoint %q, want %q", got, EntrypointPath)
	}
	if len(c.Cmd) != 0 {
		t.Errorf("cmd %q, want none (flags come from the Deployment's args)", c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("created %v, want %v", cf.Created.Time, created)
	}
	if _, ok := c.ExposedPorts["10259/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 10259/tcp", c.ExposedPorts)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  "v9.9.9",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source":   "https://example.com/src",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, c.Labels[k], v)
		}
	}

	files := flatten(t, img)
	entry, ok := files[EntrypointPath]
	if !ok {
		t.Fatalf("no %s in the image; files: %v", EntrypointPath, keys(files))
	}
	if !bytes.Equal(entry.body, want) {
		t.Errorf("%s differs from the binary given", EntrypointPath)
	}
	if entry.uid != 0 || entry.gid != 0 || entry.mode != 0o755 {
		t.Errorf("%s: uid=%d gid=%d mode=%o, want root-owned 0755 (not writable by the user it runs as)", EntrypointPath, entry.uid, entry.gid, entry.mode)
	}
	if got := files["/usr/local/bin/kubectl-placement"]; !bytes.Equal(got.body, want) || got.mode != 0o755 || got.uid != 0 {
		t.Errorf("/usr/local/bin/kubectl-placement: mode %o uid %d, %d bytes; want the given tool, root-owned 0755", got.mode, got.uid, len(got.body))
	}
	if !strings.Contains(string(files["/etc/passwd"].body), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd does not define uid 65532:\n%s", files["/etc/passwd"].body)
	}
	if home := files["/home/nonroot"]; !home.dir || home.uid != NonRootUID {
		t.Errorf("/home/nonroot: %+v, want a directory owned by %d", home, NonRootUID)
	}
	for path, f := range files {
		if !f.dir && f.mode&0o022 != 0 {
			t.Errorf("%s is group/world writable (mode %o)", path, f.mode)
		}
		if !strings.HasPrefix(path, "/home/nonroot") && (f.uid != 0 || f.gid != 0) {
			t.Errorf("%s owned by %d:%d, want root", path, f.uid, f.gid)
		}
	}

	// Reproducible: same inputs, same image.
	again, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds from the same inputs differ: %s vs %s", d1, d2)
	}
}

// A binary that would not start in an image without libc, or one built for
// another architecture, is refused with a reason.
func TestImageRefusesUnusableBinaries(t *testing.T) {
	static := staticBinary(t)
	other := map[string]string{"amd64": "arm64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	cases := []struct {
		name, binary, arch, want string
	}{
		{"wrong arch", static, other, "built for"},
		{"not ELF", writeFile(t, "script", "#!/bin/sh\n"), runtime.GOARCH, "not an ELF"},
	}
	if sh, err := exec.LookPath("sh"); err == nil && isDynamic(sh) {
		cases = append(cases, struct{ name, binary, arch, want string }{"dynamically linked", sh, runtime.GOARCH, "CGO_ENABLED=0"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(Options{Binary: tc.binary, Arch: tc.arch})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build: err=%v, want one containing %q", err, tc.want)
			}
		})
	}
}

func isDynamic(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	err = checkStatic(b, runtime.GOARCH)
	return err != nil && strings.Contains(err.Error(), "dynamically linked")
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func keys(m map[string]imageFile) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

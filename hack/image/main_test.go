package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
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
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// staticBinary builds a tiny static linux program for the host's arch.
func staticBinary(t *testing.T) string {
	t.Helper()
	return staticBinaryFor(t, runtime.GOARCH)
}

// staticBinaryFor builds a tiny static linux program for arch.
func staticBinaryFor(t *testing.T, arch string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
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
		eachTarEntry(t, rc, func(h *tar.Header, body []byte) {
			files["/"+strings.TrimSuffix(h.Name, "/")] = imageFile{mode: h.Mode, uid: h.Uid, gid: h.Gid, dir: h.Typeflag == tar.TypeDir, body: body}
		})
		rc.Close()
	}
	return files
}

// eachTarEntry calls fn with every entry of the tar stream r and its body.
func eachTarEntry(t *testing.T, r io.Reader, fn func(h *tar.Header, body []byte)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		fn(h, body)
	}
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
	opts := Options{Binary: bin, Tools: []string{tool}, Arch: runtime.GOARCH, Meta: Meta{Created: created, Version: "v9.9.9", Revision: "abc123", Source: "https://example.com/src", Licenses: "Apache-2.0"}}
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
		"org.opencontainers.image.licenses": "Apache-2.0",
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

	// Reproducible: same inputs, same image. (Compared as built: a
	// `docker save` tarball keeps no manifest, so the one read back from it
	// is rebuilt with Docker media types and without annotations.)
	first, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
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

// -index writes one tarball holding an OCI image layout whose index.json
// names, by the tag asked for, an OCI image index with one image per
// platform: each entry carries its platform, each image's config agrees,
// and each ships the binary given for that arch, an ELF for that machine.
// Index and manifests carry the OCI annotations.
func TestIndexHoldsOneImagePerPlatform(t *testing.T) {
	bins := map[string]string{"amd64": staticBinaryFor(t, "amd64"), "arm64": staticBinaryFor(t, "arm64")}
	// Each arch's binary stands in for its kubectl-placement too.
	tools := map[string]string{}
	for arch, bin := range bins {
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		tools[arch] = writeFile(t, "kubectl-placement", string(b))
	}
	platforms, err := parsePlatforms("amd64=" + bins["amd64"] + "+" + tools["amd64"] + ",arm64=" + bins["arm64"] + "+" + tools["arm64"])
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta{Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Version: "v9.9.9", Revision: "abc123", Source: "https://example.com/src", Licenses: "Apache-2.0"}
	out := filepath.Join(t.TempDir(), "index.tar")
	const ref = "registry.example.com/team/placement-scheduler:v9.9.9"
	if err := runIndex(ref, out, meta, platforms); err != nil {
		t.Fatal(err)
	}

	idx := readLayoutTarball(t, out, ref)
	wantAnnotations := map[string]string{
		"org.opencontainers.image.version":  "v9.9.9",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source":   "https://example.com/src",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	checkAnnotations(t, "index", im.Annotations, wantAnnotations)

	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	seen := map[string]bool{}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" {
			t.Errorf("manifest %s: platform %+v, want linux/<arch>", d.Digest, d.Platform)
			continue
		}
		arch := d.Platform.Architecture
		seen[arch] = true
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("linux/%s: %v", arch, err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
			t.Errorf("linux/%s: manifest %s config %s, want OCI media types", arch, m.MediaType, m.Config.MediaType)
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayer {
				t.Errorf("linux/%s: layer media type %s, want %s", arch, l.MediaType, types.OCILayer)
			}
		}
		checkAnnotations(t, "linux/"+arch+" manifest", m.Annotations, wantAnnotations)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != arch {
			t.Errorf("index entry linux/%s has config %s/%s", arch, cf.OS, cf.Architecture)
		}
		files := flatten(t, img)
		body := files[EntrypointPath].body
		want, err := os.ReadFile(bins[arch])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want) {
			t.Errorf("linux/%s: %s is not the binary given for %s", arch, EntrypointPath, arch)
		}
		if !bytes.Equal(files["/usr/local/bin/kubectl-placement"].body, want) {
			t.Errorf("linux/%s: /usr/local/bin/kubectl-placement is not the tool given for %s", arch, arch)
		}
		f, err := elf.NewFile(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("linux/%s: %s: %v", arch, EntrypointPath, err)
		}
		if f.Machine != machines[arch] {
			t.Errorf("linux/%s: binary is for %v, want %v", arch, f.Machine, machines[arch])
		}
	}
	if !seen["amd64"] || !seen["arm64"] || len(im.Manifests) != 2 {
		t.Errorf("index lists %d manifests for %v, want linux/amd64 and linux/arm64", len(im.Manifests), seen)
	}

	// Reproducible: the same inputs give the same tarball, byte for byte.
	again := filepath.Join(t.TempDir(), "index.tar")
	if err := runIndex(ref, again, meta, platforms); err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(out)
	b2, _ := os.ReadFile(again)
	if !bytes.Equal(b1, b2) {
		t.Error("two index tarballs from the same inputs differ")
	}
}

// A wrong binary for one platform fails the index, naming the platform; a
// malformed -index is refused with the expected form.
func TestIndexRefusesBadPlatforms(t *testing.T) {
	amd64 := staticBinaryFor(t, "amd64")
	_, err := BuildIndex(Meta{}, []Platform{{Arch: "amd64", Binary: amd64}, {Arch: "arm64", Binary: amd64}})
	if err == nil || !strings.Contains(err.Error(), "linux/arm64") || !strings.Contains(err.Error(), "built for") {
		t.Errorf("an amd64 binary as arm64: err=%v, want one naming linux/arm64 and the machine", err)
	}
	for _, in := range []string{"amd64", "amd64=", "=x", "amd64=a,amd64=b", "amd64=a+", "amd64=+b"} {
		if _, err := parsePlatforms(in); err == nil || !strings.Contains(err.Error(), "-index") {
			t.Errorf("parsePlatforms(%q): err=%v, want an -index error", in, err)
		}
	}
}

// readLayoutTarball untars an OCI layout and returns the index that its
// index.json names ref by.
func readLayoutTarball(t *testing.T, path, ref string) v1.ImageIndex {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	eachTarEntry(t, f, func(h *tar.Header, body []byte) {
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		var err error
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(target, 0o755)
		} else {
			err = os.WriteFile(target, body, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(ref)
	for _, d := range tm.Manifests {
		if d.Annotations["io.containerd.image.name"] == tag.Name() && d.Annotations["org.opencontainers.image.ref.name"] == tag.TagStr() {
			if d.MediaType != types.OCIImageIndex {
				t.Fatalf("%s names a %s, want an image index", ref, d.MediaType)
			}
			idx, err := top.ImageIndex(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return idx
		}
	}
	t.Fatalf("index.json names nothing %s: %+v", ref, tm.Manifests)
	return nil
}

func checkAnnotations(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s annotation %s=%q, want %q", what, k, got[k], v)
		}
	}
}

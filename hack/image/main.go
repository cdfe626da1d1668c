// Command image assembles placement-scheduler's container image from a
// prebuilt static binary, with no Docker engine and no network: one layer on
// an empty base (the binary, plus /etc/passwd and /etc/group naming the
// non-root user it runs as), written as a `docker save` tarball. docker load,
// podman load, crane push, skopeo copy docker-archive: and kind load
// image-archive all read that format.
//
//	go run ./hack/image -binary bin/placement-scheduler -image REPO:TAG -out bin/placement-scheduler-image.tar
//
// `make image` runs it.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Where things go in the image, and who runs it. 65532 is the "nonroot" user
// of distroless images, a convention admission policies and scanners know.
const (
	EntrypointPath = "/usr/local/bin/placement-scheduler"
	NonRootUID     = 65532
	User           = "65532:65532"
	SecurePort     = "10259/tcp"
)

// Options describe one image.
type Options struct {
	Binary string // static linux executable to ship
	// Tools are further static linux executables shipped beside it in
	// /usr/local/bin under their base names (kubectl-placement).
	Tools    []string
	Arch     string    // GOARCH the binary was built for
	Created  time.Time // image and file timestamps: a fixed one makes builds reproducible
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision
	Source   string    // org.opencontainers.image.source
}

func main() {
	var (
		opts    Options
		ref     = flag.String("image", "", "image reference to record in the tarball, e.g. ghcr.io/placement-scheduler/placement-scheduler:v0.1.0")
		out     = flag.String("out", "", "where to write the tarball")
		created = flag.String("created", "1970-01-01T00:00:00Z", "creation time (RFC 3339), e.g. the commit's; fixed by default so builds are reproducible")
	)
	flag.StringVar(&opts.Binary, "binary", "", "static linux binary to put in the image")
	flag.Func("tool", "further static linux binary for /usr/local/bin (repeatable)", func(p string) error {
		opts.Tools = append(opts.Tools, p)
		return nil
	})
	flag.StringVar(&opts.Arch, "arch", runtime.GOARCH, "GOARCH the binary was built for")
	flag.StringVar(&opts.Version, "version", "", "version label")
	flag.StringVar(&opts.Revision, "revision", "", "source revision label")
	flag.StringVar(&opts.Source, "source", "https://github.com/placement-scheduler/placement-scheduler", "source repository label")
	flag.Parse()
	if opts.Binary == "" || *ref == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image -binary PATH -image REPO:TAG -out FILE [-arch GOARCH] [-created RFC3339] [-version V] [-revision SHA]")
		os.Exit(2)
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		fmt.Fprintf(os.Stderr, "-created: %v\n", err)
		os.Exit(2)
	}
	opts.Created = t.UTC()
	if err := run(*ref, *out, opts); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ref, out string, opts Options) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := Build(opts)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s (%s, linux/%s)\n", out, tag, digest, opts.Arch)
	return nil
}

// Build returns the image for opts.
func Build(opts Options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin, opts.Arch); err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Binary, err)
	}
	tools := map[string][]byte{}
	for _, p := range opts.Tools {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if err := checkStatic(b, opts.Arch); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		tools[filepath.Base(p)] = b
	}
	layerTar, err := rootfs(bin, tools, opts.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: opts.Created}, CreatedBy: "hack/image", Comment: "placement-scheduler and its non-root user"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = opts.Arch
	cf.Created = v1.Time{Time: opts.Created}
	cf.Config = v1.Config{
		Entrypoint:   []string{EntrypointPath},
		User:         User,
		WorkingDir:   "/",
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		ExposedPorts: map[string]struct{}{SecurePort: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "placement-scheduler",
			"org.opencontainers.image.description": "kube-scheduler v1.37 with placement-scheduler's plugins, run beside the default scheduler",
			"org.opencontainers.image.source":      opts.Source,
			"org.opencontainers.image.version":     opts.Version,
			"org.opencontainers.image.revision":    opts.Revision,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// checkStatic refuses what would not run in an image with no libc: a binary
// that is not a linux ELF for arch, or one that asks for a dynamic loader
// (built with cgo).
func checkStatic(bin []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	want, ok := map[string]elf.Machine{
		"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
		"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
	}[arch]
	if !ok {
		return fmt.Errorf("unsupported arch %q", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %v, want %v (%s)", f.Machine, want, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it needs a libc the image does not have): build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// rootfs is the image's only layer.
func rootfs(bin []byte, tools map[string][]byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	type entry struct {
		name     string
		mode     int64
		uid      int
		body     []byte
		typeflag byte
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, typeflag: tar.TypeDir},
		// The user exists by name, for tools that look it up.
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "home/nonroot/", mode: 0o700, uid: NonRootUID, typeflag: tar.TypeDir},
		{name: "tmp/", mode: 0o1777, typeflag: tar.TypeDir},
		{name: "usr/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "usr/local/", mode: 0o755, typeflag: tar.TypeDir},
		{name: "usr/local/bin/", mode: 0o755, typeflag: tar.TypeDir},
		// Owned by root and not writable by the user it runs as.
		{name: EntrypointPath[1:], mode: 0o755, body: bin},
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		entries = append(entries, entry{name: "usr/local/bin/" + name, mode: 0o755, body: tools[name]})
	}
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime,
			Typeflag: e.typeflag,
		}
		if e.typeflag == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

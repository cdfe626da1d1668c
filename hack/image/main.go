// Command image assembles placement-scheduler's container image from
// prebuilt static binaries, with no Docker engine and no network: one layer
// on an empty base (the binary, plus /etc/passwd and /etc/group naming the
// non-root user it runs as).
//
// With -binary it writes one image for one architecture as a `docker save`
// tarball (docker load, podman load, crane push, skopeo copy docker-archive:
// and kind load image-archive read it):
//
//	go run ./hack/image -binary bin/placement-scheduler -image REPO:TAG -out bin/placement-scheduler-image.tar
//
// With -index it writes a multi-platform OCI image index, one image per
// ARCH=BINARY[+TOOL...] (the tools as -tool ships them), as an OCI image
// layout in one tarball (skopeo copy oci-archive:, crane push after untar,
// docker load since Docker 25, podman load):
//
//	go run ./hack/image -index amd64=bin/linux-amd64/placement-scheduler+bin/linux-amd64/kubectl-placement,arm64=... -image REPO:TAG -out bin/placement-scheduler-image-index.tar
//
// `make image` and `make image-single` run it.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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
	Tools []string
	Arch  string // GOARCH the binary was built for
	Meta
}

// Meta is what every image of a build shares, recorded as OCI annotations on
// the index and the manifests and as labels in each image's config.
type Meta struct {
	Created  time.Time // image and file timestamps: a fixed one makes builds reproducible
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision
	Source   string    // org.opencontainers.image.source
	Licenses string    // org.opencontainers.image.licenses (SPDX expression)
	// Kubernetes is the release the binaries were built against (each
	// line's image its own), named in the description.
	Kubernetes string
}

// annotations are Meta's pre-defined OCI annotation keys; empty values are left out.
func (m Meta) annotations() map[string]string {
	scheduler := "kube-scheduler"
	if m.Kubernetes != "" {
		scheduler += " " + m.Kubernetes
	}
	a := map[string]string{
		"org.opencontainers.image.title":       "placement-scheduler",
		"org.opencontainers.image.description": scheduler + " with placement-scheduler's plugins, run beside the default scheduler",
		"org.opencontainers.image.created":     m.Created.Format(time.RFC3339),
		"org.opencontainers.image.source":      m.Source,
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.revision":    m.Revision,
		"org.opencontainers.image.licenses":    m.Licenses,
	}
	for k, v := range a {
		if v == "" {
			delete(a, k)
		}
	}
	return a
}

// Platform is one entry of an index: static binaries for linux/Arch, the
// entrypoint and the tools shipped beside it (Options.Tools).
type Platform struct {
	Arch   string
	Binary string
	Tools  []string
}

// parsePlatforms reads -index: ARCH=BINARY[+TOOL...] entries, comma-separated.
func parsePlatforms(s string) ([]Platform, error) {
	var out []Platform
	for _, p := range strings.Split(s, ",") {
		arch, bins, _ := strings.Cut(strings.TrimSpace(p), "=")
		paths := strings.Split(bins, "+")
		if arch == "" || slices.Contains(paths, "") {
			return nil, fmt.Errorf("-index: %q is not ARCH=BINARY[+TOOL...] (e.g. amd64=bin/linux-amd64/placement-scheduler+bin/linux-amd64/kubectl-placement)", p)
		}
		if slices.ContainsFunc(out, func(q Platform) bool { return q.Arch == arch }) {
			return nil, fmt.Errorf("-index: %s given twice", arch)
		}
		out = append(out, Platform{Arch: arch, Binary: paths[0], Tools: paths[1:]})
	}
	return out, nil
}

func main() {
	var (
		opts    Options
		index   = flag.String("index", "", "write a multi-platform OCI index of these ARCH=BINARY[+TOOL...] entries, comma-separated, instead of one -binary image")
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
	flag.StringVar(&opts.Kubernetes, "kubernetes", "", "the Kubernetes release the binaries were built against, e.g. v1.37.2 (named in the description)")
	flag.StringVar(&opts.Licenses, "licenses", "Apache-2.0", "SPDX license expression label")
	flag.Parse()
	if (opts.Binary == "") == (*index == "") || (*index != "" && len(opts.Tools) > 0) || *ref == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: image (-binary PATH [-tool PATH]... [-arch GOARCH] | -index ARCH=PATH[+TOOL...],...) -image REPO:TAG -out FILE [-created RFC3339] [-version V] [-kubernetes V] [-revision SHA] [-licenses SPDX]")
		os.Exit(2)
	}
	t, err := time.Parse(time.RFC3339, *created)
	if err != nil {
		fmt.Fprintf(os.Stderr, "-created: %v\n", err)
		os.Exit(2)
	}
	opts.Created = t.UTC()
	if *index != "" {
		platforms, perr := parsePlatforms(*index)
		if perr != nil {
			fmt.Fprintln(os.Stderr, perr)
			os.Exit(2)
		}
		err = runIndex(*ref, *out, opts.Meta, platforms)
	} else {
		err = run(*ref, *out, opts)
	}
	if err != nil {
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
	// OCI media types throughout, so the same image is valid both in a
	// `docker save` tarball and in an OCI index.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
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
		Labels:       opts.annotations(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, opts.annotations()).(v1.Image), nil
}

// BuildIndex returns the OCI image index of one image per platform, each
// entry carrying its platform so a runtime pulls the one for its node.
func BuildIndex(meta Meta, platforms []Platform) (v1.ImageIndex, error) {
	if len(platforms) == 0 {
		return nil, errors.New("an index needs at least one platform")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := Build(Options{Binary: p.Binary, Tools: p.Tools, Arch: p.Arch, Meta: meta})
		if err != nil {
			return nil, fmt.Errorf("linux/%s: %w", p.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: p.Arch}},
		})
	}
	return mutate.Annotations(idx, meta.annotations()).(v1.ImageIndex), nil
}

func runIndex(ref, out string, meta Meta, platforms []Platform) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	idx, err := BuildIndex(meta, platforms)
	if err != nil {
		return err
	}
	if err := WriteLayoutTarball(out, tag, idx, meta.Created); err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	var archs []string
	for _, p := range platforms {
		archs = append(archs, "linux/"+p.Arch)
	}
	fmt.Printf("wrote %s: %s (%s, index of %s)\n", out, tag, digest, strings.Join(archs, ", "))
	return nil
}

// WriteLayoutTarball writes idx as an OCI image layout, tarred: index.json
// names it by tag the way containerd and skopeo look it up
// (io.containerd.image.name is the full reference, org.opencontainers.image.ref.name
// the tag). Entries are sorted, owned by root and stamped mtime, so the same
// index gives the same bytes.
func WriteLayoutTarball(out string, tag name.Tag, idx v1.ImageIndex, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "oci-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          tag.Name(),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	})); err != nil {
		return err
	}
	var paths []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		paths = append(paths, path)
		return nil
	}); err != nil {
		return err
	}
	slices.Sort(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, path := range paths {
		rel, _ := filepath.Rel(dir, path)
		fi, err := os.Stat(path)
		if err != nil {
			return errors.Join(err, f.Close())
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg, Size: fi.Size()}
		if fi.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag, h.Size = 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return errors.Join(err, f.Close())
		}
		if !fi.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return errors.Join(err, f.Close())
			}
			if _, err := tw.Write(b); err != nil {
				return errors.Join(err, f.Close())
			}
		}
	}
	if err := tw.Close(); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
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

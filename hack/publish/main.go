// Command publish pushes a release's registry artifacts from dist/: each
// line's image index (the OCI layout tarball hack/image writes) to
// <registry>/placement-scheduler:<version>-k8s<minor>, and the Helm chart,
// with helm, to oci://<registry>/charts. It writes every pushed reference
// with its digest, one <ref>@sha256:... a line, to -out (and stdout), for
// the signing step that follows.
//
//	go run ./hack/publish -dist dist -version v0.1.0 -lines "1.35 1.36 1.37" -registry ghcr.io/placement-scheduler -out bin/published.txt
//
// Credentials: images through the docker config (~/.docker/config.json,
// go-containerregistry's default keychain), the chart through helm's own
// registry login. `make publish` runs it.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The repository names under -registry, as the chart's image.repository
// default and docs/install.md spell them.
const (
	imageRepo = "placement-scheduler"
	chartRepo = "charts"
	chartName = "placement-scheduler"
)

// refNameAnnotation is where hack/image records the tag in index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

var (
	versionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
	linePattern    = regexp.MustCompile(`^1\.[0-9]+$`)
	// helm push reports the manifest it pushed as "Digest: sha256:...".
	helmDigest = regexp.MustCompile(`(?m)^Digest:\s*(sha256:[0-9a-f]{64})\s*$`)
)

// options are the flags.
type options struct {
	dist, version, registry, out, helm string
	lines                              []string
	// plainHTTP talks HTTP, not HTTPS, to the registry (a local test
	// registry); helm gets --plain-http.
	plainHTTP bool
}

func main() {
	var o options
	flag.StringVar(&o.dist, "dist", "dist", "the release directory `make release` wrote")
	flag.StringVar(&o.version, "version", "", "the release, vX.Y.Z")
	lines := flag.String("lines", "", "the Kubernetes lines to push, space-separated (the Makefile's K8S_LINES)")
	flag.StringVar(&o.registry, "registry", "", "where to push, host/owner, e.g. ghcr.io/placement-scheduler")
	flag.StringVar(&o.out, "out", "", "file to write the pushed <ref>@<digest> lines to")
	flag.StringVar(&o.helm, "helm", "helm", "the helm binary (Helm 3.8 or later: helm push to oci://)")
	flag.BoolVar(&o.plainHTTP, "plain-http", false, "talk plain HTTP to the registry (a local test registry only)")
	flag.Parse()
	o.lines = strings.Fields(*lines)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
}

// artifact is one file of dist/ to push and where it goes.
type artifact struct {
	file string // in dist/
	ref  string // tag it is pushed to, without a scheme
	line string // the Kubernetes line of an image; "" for the chart
}

// plan checks the options and that dist/ holds every file before anything
// is pushed, so a half-built dist/ publishes nothing.
func plan(o options) ([]artifact, error) {
	switch {
	case !versionPattern.MatchString(o.version):
		return nil, fmt.Errorf("-version %q: want vX.Y.Z, e.g. -version v0.1.0", o.version)
	case o.registry == "" || strings.Contains(o.registry, "://") || strings.HasSuffix(o.registry, "/"):
		return nil, fmt.Errorf("-registry %q: want host/owner without a scheme, e.g. -registry ghcr.io/placement-scheduler", o.registry)
	case len(o.lines) == 0:
		return nil, errors.New(`-lines is empty: name the Kubernetes lines to push, e.g. -lines "1.35 1.36 1.37"`)
	case o.out == "":
		return nil, errors.New("-out is empty: name the file for the pushed references, e.g. -out bin/published.txt")
	}
	// SHA256SUMS covers every file of dist/; a file written there after it
	// would be one the checksums do not name.
	if outDir, err := filepath.Abs(filepath.Dir(o.out)); err != nil {
		return nil, err
	} else if distDir, err := filepath.Abs(o.dist); err != nil {
		return nil, err
	} else if outDir == distDir {
		return nil, fmt.Errorf("-out %s is in %s, which SHA256SUMS covers: write it elsewhere, e.g. -out bin/published.txt", o.out, o.dist)
	}
	var arts []artifact
	for _, line := range o.lines {
		if !linePattern.MatchString(line) {
			return nil, fmt.Errorf("-lines: %q is not a Kubernetes minor like 1.37", line)
		}
		tag := o.version + "-k8s" + line
		arts = append(arts, artifact{
			file: filepath.Join(o.dist, "placement-scheduler-"+tag+"-image-index.tar"),
			ref:  o.registry + "/" + imageRepo + ":" + tag,
			line: line,
		})
	}
	chartVersion := strings.TrimPrefix(o.version, "v")
	arts = append(arts, artifact{
		file: filepath.Join(o.dist, chartName+"-"+chartVersion+".tgz"),
		ref:  o.registry + "/" + chartRepo + "/" + chartName + ":" + chartVersion,
	})
	for _, a := range arts {
		if _, err := os.Stat(a.file); err != nil {
			return nil, fmt.Errorf("%s is missing: build the release first with `make release VERSION=%s`", a.file, o.version)
		}
	}
	return arts, nil
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	arts, err := plan(o)
	if err != nil {
		return err
	}
	for _, a := range arts {
		if a.line != "" {
			if err := checkTag(a); err != nil {
				return err
			}
		}
	}
	var published []string
	for _, a := range arts {
		var digest string
		if a.line != "" {
			digest, err = pushIndex(ctx, a, o.plainHTTP)
		} else {
			digest, err = pushChart(ctx, a, o)
		}
		if err != nil {
			return err
		}
		line := a.ref + "@" + digest
		fmt.Fprintln(stdout, line)
		published = append(published, line)
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, []byte(strings.Join(published, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", o.out, err)
	}
	return nil
}

// checkTag refuses a tarball whose index.json records another tag than
// a.ref's: a file renamed from another line's would go out under the wrong
// line. It reads only index.json, so every tarball is checked before
// anything is pushed.
func checkTag(a artifact) error {
	want := a.ref[strings.LastIndex(a.ref, ":")+1:]
	found, err := walkTar(a.file, func(h *tar.Header, r io.Reader) (bool, error) {
		if h.Name != "index.json" {
			return false, nil
		}
		var index v1.IndexManifest
		if err := json.NewDecoder(r).Decode(&index); err != nil {
			return true, fmt.Errorf("index.json: %w", err)
		}
		if len(index.Manifests) != 1 || index.Manifests[0].Annotations[refNameAnnotation] != want {
			var tags []string
			for _, d := range index.Manifests {
				tags = append(tags, d.Annotations[refNameAnnotation])
			}
			return true, fmt.Errorf("holds the images tagged %q, want only %q: rebuild it with `make release`", tags, want)
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w", a.file, err)
	}
	if !found {
		return fmt.Errorf("%s has no index.json: it is not an OCI layout tarball (hack/image -index writes one)", a.file)
	}
	return nil
}

// pushIndex pushes the one image index of a's layout tarball to a.ref and
// returns its digest.
func pushIndex(ctx context.Context, a artifact, plainHTTP bool) (string, error) {
	var nameOpts []name.Option
	if plainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := name.NewTag(a.ref, nameOpts...)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", a.ref, err)
	}
	dir, err := os.MkdirTemp("", "publish-layout-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := untar(a.file, dir); err != nil {
		return "", fmt.Errorf("%s: %w", a.file, err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return "", fmt.Errorf("%s is not an OCI layout tarball (hack/image -index writes one): %w", a.file, err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.file, err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.file, err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		return "", fmt.Errorf("%s: index.json must name exactly one OCI image index, as hack/image -index writes", a.file)
	}
	desc := m.Manifests[0]
	idx, err := top.ImageIndex(desc.Digest)
	if err != nil {
		return "", fmt.Errorf("%s: %w", a.file, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("pushing %s to %s: %w", a.file, a.ref, err)
	}
	return desc.Digest.String(), nil
}

// pushChart pushes the chart with helm (its registry login holds the
// credentials) and returns the digest helm reports.
func pushChart(ctx context.Context, a artifact, o options) (string, error) {
	repo := "oci://" + a.ref[:strings.LastIndex(a.ref, "/")]
	args := []string{"push", a.file, repo}
	if o.plainHTTP {
		args = append(args, "--plain-http")
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, o.helm, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", o.helm, strings.Join(args, " "), err, out.Bytes())
	}
	m := helmDigest.FindSubmatch(out.Bytes())
	if m == nil {
		return "", fmt.Errorf("%s %s reported no digest:\n%s", o.helm, strings.Join(args, " "), out.Bytes())
	}
	return string(m[1]), nil
}

// walkTar calls fn on each entry of the tarball file, in order, until fn
// says stop or fails; it reports whether fn stopped it.
func walkTar(file string, fn func(h *tar.Header, r io.Reader) (stop bool, err error)) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if stop, err := fn(h, tr); stop || err != nil {
			return stop, err
		}
	}
}

// untar unpacks the regular files and directories of the tarball file
// into dir, refusing entries that would land outside it.
func untar(file, dir string) error {
	_, err := walkTar(file, func(h *tar.Header, r io.Reader) (bool, error) {
		if !filepath.IsLocal(h.Name) {
			return true, fmt.Errorf("entry %q leaves the layout", h.Name)
		}
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			return false, os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return true, err
			}
			w, err := os.Create(path)
			if err != nil {
				return true, err
			}
			if _, err := io.Copy(w, r); err != nil {
				return true, errors.Join(err, w.Close())
			}
			return false, w.Close()
		default:
			return true, fmt.Errorf("entry %q: type %c is not a file or directory", h.Name, h.Typeflag)
		}
	})
	return err
}

package integration

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The image `make image` wrote (make test-integration builds it first and
// names it in these variables) runs the binary this suite tests, statically
// linked, as the non-root user the Deployment expects, and exposes the port
// the Deployment's probes use.
func TestImageShipsTheTestedBinaryAsNonRoot(t *testing.T) {
	path, ref := os.Getenv("PLACEMENT_SCHEDULER_IMAGE_TAR"), os.Getenv("PLACEMENT_SCHEDULER_IMAGE")
	if path == "" || ref == "" {
		t.Skip("PLACEMENT_SCHEDULER_IMAGE_TAR/PLACEMENT_SCHEDULER_IMAGE unset: run `make test-integration` (it runs `make image` first)")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("%s holds no image tagged %s: %v", path, tag, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	const entrypoint = "/usr/local/bin/placement-scheduler"
	if got := strings.Join(cf.Config.Entrypoint, " "); got != entrypoint {
		t.Errorf("entrypoint %q, want %q", got, entrypoint)
	}
	// The Deployment sets runAsNonRoot with runAsUser 65532: the image must
	// agree, and must not need root.
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if _, ok := cf.Config.ExposedPorts["10259/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 10259/tcp (the Deployment's https port)", cf.Config.ExposedPorts)
	}
	if cf.OS != "linux" {
		t.Errorf("os %q, want linux", cf.OS)
	}

	bin := fileInImage(t, img, entrypoint)
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s is not an ELF binary: %v", entrypoint, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked; the image has no libc", entrypoint)
		}
	}
	if cf.Architecture == runtime.GOARCH {
		tested, err := os.ReadFile(env.Binary)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bin, tested) {
			t.Errorf("the image's binary is not %s, the one this suite tested", env.Binary)
		}
	}
}

// fileInImage returns the content of the regular file at path in img's
// flattened filesystem (go-containerregistry's mutate.Extract applies the
// layers, whiteouts included).
func fileInImage(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if "/"+strings.TrimPrefix(h.Name, "./") == path {
			found, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return found
		}
	}
	t.Fatalf("no %s in the image", path)
	return nil
}

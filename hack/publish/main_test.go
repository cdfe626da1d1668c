package main

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlan: what is pushed where, and the one-line refusals that leave the
// registry untouched.
func TestPlan(t *testing.T) {
	dist := t.TempDir()
	for _, f := range []string{
		"placement-scheduler-v1.2.3-k8s1.36-image-index.tar",
		"placement-scheduler-v1.2.3-k8s1.37-image-index.tar",
		"placement-scheduler-1.2.3.tgz",
	} {
		if err := os.WriteFile(filepath.Join(dist, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := options{dist: dist, version: "v1.2.3", registry: "ghcr.io/o", out: filepath.Join(t.TempDir(), "published.txt"), lines: []string{"1.36", "1.37"}}

	arts, err := plan(good)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, a := range arts {
		refs = append(refs, filepath.Base(a.file)+" -> "+a.ref)
	}
	want := []string{
		"placement-scheduler-v1.2.3-k8s1.36-image-index.tar -> ghcr.io/o/placement-scheduler:v1.2.3-k8s1.36",
		"placement-scheduler-v1.2.3-k8s1.37-image-index.tar -> ghcr.io/o/placement-scheduler:v1.2.3-k8s1.37",
		"placement-scheduler-1.2.3.tgz -> ghcr.io/o/charts/placement-scheduler:1.2.3",
	}
	if strings.Join(refs, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(refs, "\n"), strings.Join(want, "\n"))
	}

	for _, c := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"missing line", func(o *options) { o.lines = append(o.lines, "1.35") },
			"placement-scheduler-v1.2.3-k8s1.35-image-index.tar is missing: build the release first with `make release VERSION=v1.2.3`"},
		{"missing chart", func(o *options) { o.version = "v1.2.4" }, "is missing: build the release first with `make release VERSION=v1.2.4`"},
		{"out in dist", func(o *options) { o.out = filepath.Join(dist, "published.txt") }, "which SHA256SUMS covers"},
		{"version", func(o *options) { o.version = "1.2.3" }, `-version "1.2.3": want vX.Y.Z`},
		{"scheme", func(o *options) { o.registry = "oci://ghcr.io/o" }, "-registry \"oci://ghcr.io/o\": want host/owner without a scheme"},
		{"line", func(o *options) { o.lines = []string{"37"} }, `-lines: "37" is not a Kubernetes minor`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := good
			o.lines = append([]string(nil), good.lines...)
			c.edit(&o)
			_, err := plan(o)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("plan: %v, want one line containing %q", err, c.want)
			}
		})
	}
}

// TestCheckTag: a tarball is pushed only under the tag it records.
func TestCheckTag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "index.tar")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	index := []byte(`{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","size":1,` +
		`"digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000",` +
		`"annotations":{"org.opencontainers.image.ref.name":"v1.2.3-k8s1.36"}}]}`)
	if err := tw.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: int64(len(index)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(index); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
	if err := checkTag(artifact{file: file, ref: "127.0.0.1:5000/o/placement-scheduler:v1.2.3-k8s1.36", line: "1.36"}); err != nil {
		t.Errorf("its own tag: %v", err)
	}
	err = checkTag(artifact{file: file, ref: "127.0.0.1:5000/o/placement-scheduler:v1.2.3-k8s1.37", line: "1.37"})
	if err == nil || !strings.Contains(err.Error(), `holds the images tagged ["v1.2.3-k8s1.36"], want only "v1.2.3-k8s1.37"`) {
		t.Errorf("another line's tag: %v, want a refusal naming both tags", err)
	}
}

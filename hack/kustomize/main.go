// Command kustomize renders manifests/ for a release: `kubectl kustomize`
// with the image pointed at the released tag, without needing kubectl.
//
//	go run ./hack/kustomize -dir manifests -image ghcr.io/placement-scheduler/placement-scheduler:v0.1.0 -out dist/placement-scheduler.yaml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/placement-scheduler/placement-scheduler/internal/kustomize"
)

func main() {
	dir := flag.String("dir", "manifests", "kustomization directory")
	image := flag.String("image", "", "image (REPOSITORY:TAG) to set; empty keeps the kustomization's")
	out := flag.String("out", "", "output file (default stdout)")
	flag.Parse()
	b, err := kustomize.Render(*dir, *image)
	if err == nil {
		if *out == "" {
			_, err = os.Stdout.Write(b)
		} else {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize:", err)
		os.Exit(1)
	}
}

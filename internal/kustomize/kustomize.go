// Package kustomize renders a kustomization with the kustomize library
// kubectl itself embeds (sigs.k8s.io/kustomize/api), so rendering needs no
// kubectl binary: `make release` writes the install YAML with it and
// test/chart compares the Helm chart against it.
package kustomize

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Render returns `kubectl kustomize dir` as YAML. With image set (a full
// reference, repo:tag), it renders an overlay of dir that points every image
// dir's kustomization rewrites (its `images:`) at image instead, as
// `kustomize edit set image` on dir would.
func Render(dir, image string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root := abs
	if image != "" {
		overlay, err := os.MkdirTemp("", "kustomize-overlay-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(overlay)
		repo, tag, err := splitImage(image)
		if err != nil {
			return nil, err
		}
		images, err := overlayImages(abs, repo, tag)
		if err != nil {
			return nil, err
		}
		// kustomize takes no absolute resource paths.
		rel, err := filepath.Rel(overlay, abs)
		if err != nil {
			return nil, err
		}
		k, err := yaml.Marshal(map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"resources":  []string{rel},
			"images":     images,
		})
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), k, 0o644); err != nil {
			return nil, err
		}
		root = overlay
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), root)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", dir, err)
	}
	return m.AsYaml()
}

// splitImage splits repo:tag at the tag's colon (a registry may have a port).
func splitImage(ref string) (name, tag string, err error) {
	i := len(ref) - 1
	for ; i >= 0 && ref[i] != ':' && ref[i] != '/'; i-- {
	}
	if i < 0 || ref[i] != ':' || i == len(ref)-1 {
		return "", "", fmt.Errorf("image %q: want REPOSITORY:TAG", ref)
	}
	return ref[:i], ref[i+1:], nil
}

// overlayImages maps each image the base's kustomization rewrites, by the
// name it rewrites it to, to repo:tag.
func overlayImages(base, repo, tag string) ([]map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(base, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", base, err)
	}
	var out []map[string]string
	for _, i := range k.Images {
		out = append(out, map[string]string{"name": cmp.Or(i.NewName, i.Name), "newName": repo, "newTag": tag})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s/kustomization.yaml sets no images: nothing to point at %s:%s", base, repo, tag)
	}
	return out, nil
}

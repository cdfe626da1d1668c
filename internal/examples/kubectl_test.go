package examples

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes/scheme"
)

// notForTheAPIServer are top-level files of an example that
// `kubectl apply -f <folder>/` reads but cannot apply. profile-pool's
// scheduler-config.yaml is placement-scheduler's --config (the Makefile's
// RUN_CONFIG points at this path), not an API object; its README applies
// workload.yaml by name. The test fails if any other file joins it, or if
// this one moves and the entry stays.
var notForTheAPIServer = map[string]bool{"profile-pool/scheduler-config.yaml": true}

// Every folder applies with `kubectl apply -f manifests/examples/<name>/`:
// read the folder the way kubectl does (cli-runtime's resource builder, a
// directory without -R, so subfolders such as check/ and then/ are skipped),
// and every object must be a kind the API server serves (client-go's
// scheme: the examples use built-in kinds only), namespaced objects must
// follow their Namespace in kubectl's order, and the files read must be
// exactly the first step's.
func TestFoldersApplyWithKubectl(t *testing.T) {
	root := filepath.Join("..", "..", "manifests", "examples")
	exs, err := Load(os.DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	firstStep := map[string][]string{FleetDir: {"nodes.yaml"}}
	for _, ex := range exs {
		firstStep[ex.Name] = ex.Spec.Steps[0].Apply
	}
	seenExceptions := map[string]bool{}
	for name, want := range firstStep {
		t.Run(name, func(t *testing.T) {
			infos, err := resource.NewLocalBuilder().Unstructured().
				FilenameParam(false, &resource.FilenameOptions{Filenames: []string{filepath.Join(root, name)}}).
				Flatten().Do().Infos()
			if err != nil {
				t.Fatalf("kubectl apply -f %s/ would fail reading it: %v", name, err)
			}
			var read []string
			namespaces := map[string]bool{"default": true}
			for _, info := range infos {
				file := filepath.Base(info.Source)
				if !slices.Contains(read, file) {
					read = append(read, file)
				}
				if notForTheAPIServer[name+"/"+file] {
					seenExceptions[name+"/"+file] = true
					continue
				}
				gvk := info.Object.GetObjectKind().GroupVersionKind()
				if !scheme.Scheme.Recognizes(gvk) {
					t.Errorf("%s: %s %q is not a kind the API server serves", file, gvk, info.Name)
				}
				if gvk.Group == "" && gvk.Kind == "Namespace" {
					namespaces[info.Name] = true
				}
				if info.Namespace != "" && !namespaces[info.Namespace] {
					t.Errorf("%s: %s %s/%s comes before its Namespace in kubectl's order (files by name, objects in file order)", file, gvk.Kind, info.Namespace, info.Name)
				}
			}
			for f := range notForTheAPIServer {
				if filepath.Dir(f) == name && !slices.Contains(want, filepath.Base(f)) {
					want = append(slices.Clone(want), filepath.Base(f))
				}
			}
			slices.Sort(read)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(read, want) {
				t.Errorf("kubectl apply -f %s/ reads %v, want the first step's files %v", name, read, want)
			}
		})
	}
	for f := range notForTheAPIServer {
		if !seenExceptions[f] {
			t.Errorf("%s is no longer read by kubectl apply -f of its folder: drop it from notForTheAPIServer", f)
		}
	}
}

// Package examples loads the scenario folders under manifests/examples,
// applies them to a cluster and checks the placement each folder's
// check/expect.yaml promises (the same promise its README.md makes in
// words). test/examples asserts every folder with it and `make demo` prints
// what it placed, so the examples are the fixtures and cannot drift.
//
// A folder's layout is what `kubectl apply -f <folder>/` needs: that command
// reads only the folder's own .yaml, .yml and .json files (a directory is
// not recursive without -R), so the top level holds exactly the first
// step's objects, and everything else sits in subfolders it skips:
// check/expect.yaml (the assertions, not a Kubernetes object) and then/
// (the files of later steps, applied one by one as the README says).
package examples

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// FleetDir is the folder under the examples root holding the node fleet
// every example places pods on; it is not a scenario.
const FleetDir = "fleet"

// ExpectFile is where a folder keeps its assertions: in a subfolder, so
// that `kubectl apply -f <folder>/` does not read them.
const ExpectFile = "check/expect.yaml"

// Example is one scenario folder.
type Example struct {
	// Name is the folder's name.
	Name string
	// Dir is the folder's path in FS.
	Dir string
	// FS holds the examples (manifests.Files() under "examples", or
	// os.DirFS of a checkout).
	FS   fs.FS
	Spec Spec
}

// Spec is a folder's ExpectFile.
type Spec struct {
	// Namespace is where Expectation.Pods selects unless it names its own.
	Namespace string `json:"namespace"`
	// Steps run in order: apply the files, then wait for every expectation.
	Steps []Step `json:"steps"`
	// Timeout bounds each expectation's wait; default DefaultTimeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// Step applies files of the folder, then waits for its expectations. Paths
// are relative to the folder: the first step applies its top-level files,
// later steps files in a subfolder (then/).
type Step struct {
	Apply  []string      `json:"apply"`
	Expect []Expectation `json:"expect"`
}

// Expectation is what must become true of the pods Pods selects. Every
// field but Pods (or Evicted) is optional; all given must hold at once.
type Expectation struct {
	// Pods is a label selector over pods in Namespace.
	Pods string `json:"pods,omitempty"`
	// Namespace overrides Spec.Namespace.
	Namespace string `json:"namespace,omitempty"`
	// Count is the exact number of pods selected (terminating pods
	// included: a rollout is done when the old ones are gone).
	Count *int `json:"count,omitempty"`
	// Pending: every selected pod is unschedulable with a PodScheduled
	// message containing this text. Otherwise every selected pod must be
	// bound and Running.
	Pending string `json:"pending,omitempty"`
	// Nodes: every selected pod is on one of these nodes.
	Nodes []string `json:"nodes,omitempty"`
	// NodeLabels: every selected pod's node has these labels.
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// SpreadBy: no two selected pods (in one GroupBy group) share a value of
	// this node label.
	SpreadBy string `json:"spreadBy,omitempty"`
	// GroupBy is a pod label partitioning the pods for SpreadBy.
	GroupBy string `json:"groupBy,omitempty"`
	// SameNodesAs: the selected pods occupy exactly the nodes the pods this
	// selector picks (same namespace) occupy.
	SameNodesAs string `json:"sameNodesAs,omitempty"`
	// ScheduledBy: each pod's Scheduled event was reported by this
	// scheduler (profile) name.
	ScheduledBy string `json:"scheduledBy,omitempty"`
	// Evicted names a pod the taint-eviction controller must evict: an
	// event TaintManagerEviction for it, and the pod gone.
	Evicted string `json:"evicted,omitempty"`
	// Event: every selected pod has an event with this reason, e.g.
	// PlacementNoFit (placement-enforcer kept it: nothing else fits).
	Event string `json:"event,omitempty"`
}

// DefaultTimeout bounds each expectation's wait. Generous: a CI machine
// runs the whole cluster on a few cores, and a NoExecute eviction takes
// tolerationSeconds by design.
const DefaultTimeout = 90 * time.Second

func (s Spec) timeout() time.Duration {
	if s.Timeout == nil {
		return DefaultTimeout
	}
	return s.Timeout.Duration
}

// Load reads every scenario folder at the top of fsys (all but FleetDir),
// sorted by name. A folder without README.md or ExpectFile is an error: an
// example nobody checks, or a check nobody can read, is what this prevents.
func Load(fsys fs.FS) ([]Example, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("reading examples: %w", err)
	}
	var out []Example
	for _, e := range entries {
		if !e.IsDir() || e.Name() == FleetDir {
			continue
		}
		ex, err := LoadOne(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, ex)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, errors.New("no example folders")
	}
	return out, nil
}

// LoadOne reads and validates the folder dir of fsys.
func LoadOne(fsys fs.FS, dir string) (Example, error) {
	ex := Example{Name: path.Base(dir), Dir: dir, FS: fsys}
	if _, err := fs.Stat(fsys, path.Join(dir, "README.md")); err != nil {
		return ex, fmt.Errorf("example %s: no README.md saying what should happen and why: %w", ex.Name, err)
	}
	expectPath := path.Join(dir, ExpectFile)
	b, err := fs.ReadFile(fsys, expectPath)
	if err != nil {
		return ex, fmt.Errorf("example %s: no %s stating what README.md promises: %w", ex.Name, ExpectFile, err)
	}
	if err := yaml.UnmarshalStrict(b, &ex.Spec); err != nil {
		return ex, fmt.Errorf("%s: %w", expectPath, err)
	}
	if err := ex.Spec.validate(fsys, dir); err != nil {
		return ex, fmt.Errorf("%s: %w", expectPath, err)
	}
	return ex, nil
}

func (s Spec) validate(fsys fs.FS, dir string) error {
	if len(s.Steps) == 0 {
		return errors.New("steps: empty; give at least one step with apply and expect")
	}
	for i, st := range s.Steps {
		if len(st.Apply) == 0 {
			return fmt.Errorf("steps[%d].apply: empty; name the folder's YAML files to apply", i)
		}
		for _, f := range st.Apply {
			if _, err := fs.Stat(fsys, path.Join(dir, f)); err != nil {
				return fmt.Errorf("steps[%d].apply: %w", i, err)
			}
			// `kubectl apply -f <folder>/` is the first step: its files at
			// the top, every later one's in a subfolder it does not read.
			if top := !strings.Contains(path.Clean(f), "/"); top != (i == 0) {
				if i == 0 {
					return fmt.Errorf("steps[0].apply: %s is in a subfolder; the first step applies the folder's top-level files (what kubectl apply -f <folder>/ reads)", f)
				}
				return fmt.Errorf("steps[%d].apply: %s is at the folder's top, which kubectl apply -f <folder>/ applies with the first step; move it to then/", i, f)
			}
		}
		if len(st.Expect) == 0 {
			return fmt.Errorf("steps[%d].expect: empty; say what must hold after applying", i)
		}
		for j, e := range st.Expect {
			if err := e.validate(s.Namespace); err != nil {
				return fmt.Errorf("steps[%d].expect[%d]%w", i, j, err)
			}
		}
	}
	return nil
}

func (e Expectation) validate(defaultNS string) error {
	if (e.Pods == "") == (e.Evicted == "") {
		return errors.New(": give exactly one of pods (a label selector) or evicted (a pod name)")
	}
	if e.Namespace == "" && defaultNS == "" {
		return errors.New(".namespace: empty and the file has no top-level namespace")
	}
	for field, sel := range map[string]string{"pods": e.Pods, "sameNodesAs": e.SameNodesAs} {
		if sel == "" {
			continue
		}
		if _, err := labels.Parse(sel); err != nil {
			return fmt.Errorf(".%s: %w", field, err)
		}
	}
	if e.Pending != "" && (len(e.Nodes) > 0 || len(e.NodeLabels) > 0 || e.SpreadBy != "" || e.SameNodesAs != "" || e.ScheduledBy != "") {
		return errors.New(".pending: a pending pod has no node; drop nodes, nodeLabels, spreadBy, sameNodesAs and scheduledBy")
	}
	if e.GroupBy != "" && e.SpreadBy == "" {
		return errors.New(".groupBy: only means something with spreadBy")
	}
	if e.Count != nil && *e.Count < 0 {
		return errors.New(".count: negative")
	}
	return nil
}

func (e Expectation) namespace(defaultNS string) string {
	if e.Namespace != "" {
		return e.Namespace
	}
	return defaultNS
}

// Package pluginbench measures our plugins against the in-tree plugins they
// replace, extension point by extension point, in ONE `go test -bench` run,
// on the cluster shapes of upstream's scheduler_perf workloads (default 5000
// nodes). It measures; it asserts nothing about time. How to run it and how
// to read it: the package's README.md (and `make bench-plugins`).
//
// The shapes are read at run time from the pinned k8s.io/kubernetes module's
// scheduler_perf files (test case params and pod/node templates), never
// copied: LoadShape turns one upstream workload into objects.
package pluginbench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Shape is one upstream scheduler_perf workload as a cluster frozen half-way
// through its measured phase: every node, every init pod, and half of the
// measured pods already bound; Incoming is the next measured pod.
type Shape struct {
	Case, Workload string
	Nodes          []*v1.Node
	Namespaces     []*v1.Namespace
	// Pods are bound (spec.nodeName set), round-robin over Nodes in
	// creation order, as the default scheduler spreads equal pods over
	// equal nodes. Init pods come first, then the measured ones.
	Pods []*v1.Pod
	// InitPods and MeasurePods are the workload's params.
	InitPods, MeasurePods int
	// Incoming is an unbound pod of the measured phase's template.
	Incoming *v1.Pod
	// measured is the measured phase's template, in namespace measuredNS.
	measuredNS string
	measured   *v1.Pod
}

// MeasuredPod returns the i-th extra pod of the measured template (a fresh
// name and UID), bound to node.
func (s *Shape) MeasuredPod(i int, node string) *v1.Pod {
	return podFrom(s.measured, s.measuredNS, fmt.Sprintf("bench-%d", i), node)
}

// upstream test case file, relative to scheduler_perf's directory.
const (
	AffinityConfig = "affinity/performance-config.yaml"
	MiscConfig     = "misc/performance-config.yaml"
)

// LoadShape builds test case tc's workload (e.g. "5000Nodes") from the
// scheduler_perf config file (relative to perfDir). It understands the ops
// the affinity cases and SchedulingBasic use (createNodes with a template
// and labelNodePrepareStrategy, createNamespaces, createPods) and fails on
// anything else rather than guess.
func LoadShape(perfDir, file, tc, workload string) (*Shape, error) {
	path := filepath.Join(perfDir, file)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cases []map[string]any
	if err := yaml.Unmarshal(raw, &cases); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var c map[string]any
	for _, x := range cases {
		if x["name"] == tc {
			c = x
		}
	}
	if c == nil {
		return nil, fmt.Errorf("%s: no test case %s", path, tc)
	}
	var params map[string]any
	for _, w := range list(c["workloads"]) {
		if w["name"] == workload {
			params, _ = w["params"].(map[string]any)
		}
	}
	if params == nil {
		return nil, fmt.Errorf("%s: test case %s has no workload %s", path, tc, workload)
	}
	dir := filepath.Dir(path)
	defaultPod, _ := c["defaultPodTemplatePath"].(string)
	s := &Shape{Case: tc, Workload: workload}
	var podOps []map[string]any
	for i, op := range list(c["workloadTemplate"]) {
		switch op["opcode"] {
		case "createNodes":
			if err := s.createNodes(dir, op, params); err != nil {
				return nil, fmt.Errorf("%s %s op %d: %w", tc, workload, i, err)
			}
		case "createNamespaces":
			prefix, _ := op["prefix"].(string)
			n, err := count(op, params)
			if err != nil {
				return nil, fmt.Errorf("%s %s op %d: %w", tc, workload, i, err)
			}
			for j := range n {
				s.Namespaces = append(s.Namespaces, tu.MakeNamespace(fmt.Sprintf("%s-%d", prefix, j), nil))
			}
		case "createPods":
			podOps = append(podOps, op)
		default:
			return nil, fmt.Errorf("%s %s op %d: opcode %v not understood", tc, workload, i, op["opcode"])
		}
	}
	if len(podOps) != 2 || podOps[1]["collectMetrics"] != true {
		return nil, fmt.Errorf("%s %s: want two createPods ops, the second measured", tc, workload)
	}
	for i, op := range podOps {
		n, err := count(op, params)
		if err != nil {
			return nil, err
		}
		tmplPath := defaultPod
		if p, ok := op["podTemplatePath"].(string); ok {
			tmplPath = p
		}
		tmpl := &v1.Pod{}
		if err := readYAML(filepath.Join(dir, tmplPath), tmpl); err != nil {
			return nil, err
		}
		ns, _ := op["namespace"].(string)
		if ns == "" {
			ns = metav1.NamespaceDefault
			if !s.hasNamespace(ns) {
				s.Namespaces = append(s.Namespaces, tu.MakeNamespace(ns, nil))
			}
		}
		bound := n
		if i == 1 {
			s.InitPods, s.MeasurePods = len(s.Pods), n
			s.measured, s.measuredNS = tmpl, ns
			s.Incoming = podFrom(tmpl, ns, "incoming", "")
			bound = n / 2
		}
		for j := range bound {
			s.Pods = append(s.Pods, podFrom(tmpl, ns, fmt.Sprintf("p%d-%d", i, j), s.Nodes[len(s.Pods)%len(s.Nodes)].Name))
		}
	}
	return s, nil
}

func (s *Shape) hasNamespace(name string) bool {
	for _, ns := range s.Namespaces {
		if ns.Name == name {
			return true
		}
	}
	return false
}

// createNodes follows scheduler_perf: the template (or its default base
// node: 4 CPU, 32Gi, 110 pods, Ready), the hostname label set to the node's
// name, and labelNodePrepareStrategy's label, its values dealt round-robin.
func (s *Shape) createNodes(dir string, op, params map[string]any) error {
	n, err := count(op, params)
	if err != nil {
		return err
	}
	tmpl := tu.MakeNode("").NoLabels().Capacity("4", "32Gi", 110).Ready().Obj()
	if p, ok := op["nodeTemplatePath"].(string); ok {
		tmpl = &v1.Node{}
		if err := readYAML(filepath.Join(dir, p), tmpl); err != nil {
			return err
		}
		// The apiserver does not default allocatable; the node lifecycle
		// does, from capacity, which is what NodeResourcesFit reads.
		if tmpl.Status.Allocatable == nil {
			tmpl.Status.Allocatable = tmpl.Status.Capacity.DeepCopy()
		}
	}
	var key string
	var values []string
	if st, ok := op["labelNodePrepareStrategy"].(map[string]any); ok {
		key, _ = st["labelKey"].(string)
		vs, _ := st["labelValues"].([]any)
		for _, v := range vs {
			values = append(values, fmt.Sprint(v))
		}
	}
	if key != "" && len(values) == 0 {
		return fmt.Errorf("labelNodePrepareStrategy for %s has no labelValues", key)
	}
	for i := range n {
		node := tmpl.DeepCopy()
		node.GenerateName = ""
		node.Name = fmt.Sprintf("node-%05d", len(s.Nodes))
		node.UID = types.UID(node.Name)
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.LabelHostname] = node.Name
		if key != "" {
			node.Labels[key] = values[i%len(values)]
		}
		s.Nodes = append(s.Nodes, node)
	}
	return nil
}

func podFrom(tmpl *v1.Pod, ns, name, node string) *v1.Pod {
	p := tmpl.DeepCopy()
	p.GenerateName = ""
	p.Namespace, p.Name = ns, name
	p.UID = types.UID(ns + "/" + name)
	p.Spec.NodeName = node
	return p
}

// count resolves an op's count or countParam ("$initPods").
func count(op, params map[string]any) (int, error) {
	if c, ok := op["count"]; ok {
		return toInt(c)
	}
	p, _ := op["countParam"].(string)
	v, ok := params[strings.TrimPrefix(p, "$")]
	if !ok {
		return 0, fmt.Errorf("countParam %q not in the workload's params", p)
	}
	return toInt(v)
}

func toInt(v any) (int, error) {
	switch x := v.(type) {
	case float64:
		return int(x), nil
	case int64:
		return int(x), nil
	case int:
		return x, nil
	case string:
		return strconv.Atoi(x)
	}
	return 0, fmt.Errorf("not a count: %v", v)
}

func list(v any) []map[string]any {
	var out []map[string]any
	items, _ := v.([]any)
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func readYAML(path string, into any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// NodesPerCycle is how many nodes a scheduling cycle filters and scores in
// a cluster of n nodes under the default percentageOfNodesToScore (adaptive:
// 50 - n/125 percent, at least 5%, at least 100 nodes): 500 at 5000 nodes.
func NodesPerCycle(n int) int {
	if n < 100 {
		return n
	}
	pct := max(50-n/125, 5)
	return min(n, max(100, n*pct/100))
}

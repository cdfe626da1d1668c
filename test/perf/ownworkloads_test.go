package perf

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// ownCases are the test cases of OwnWorkloadsFile. The tests below check
// our files on every line, from DefaultSources, also where the line's
// scheduler_perf cannot run them (LineSources leaves them out there).
var ownCases = []string{"InterleavedDeployments10", "InterleavedDeployments100", "InterleavedDeployments1000", "ColdStartDeployments100"}

// ownSizes are the workloads every one of our test cases has: the smallest
// (the wiring check's) and the three `make bench` scales.
var ownSizes = []string{"10Nodes", "500Nodes", "5000Nodes", "15000Nodes"}

// Our test cases are prepared like upstream's, with every size, and the
// harness can read how many pods each one measures (the report's share of
// the ceiling needs it).
func TestOwnWorkloadsArePrepared(t *testing.T) {
	setup := prepareForTest(t, DefaultSources)
	var got []string
	for _, c := range setup.Cases {
		if c.Topic != ownTopic {
			continue
		}
		got = append(got, c.Name)
		var sizes []string
		for _, w := range c.Workloads {
			sizes = append(sizes, w.Name)
			if w.MeasuredPods <= 0 {
				t.Errorf("%s/%s: the harness cannot read the measured pod count", c.Name, w.Name)
			}
		}
		if diff := cmp.Diff(ownSizes, sizes); diff != "" {
			t.Errorf("%s: workloads (-want +got):\n%s", c.Name, diff)
		}
		if w := smallestWorkload(c); w != "10Nodes" {
			t.Errorf("%s: smallest integration-test workload = %q, want 10Nodes", c.Name, w)
		}
		configs := map[Profile]string{Ours: setup.OurConfig, Floor: setup.FloorConfig}
		for _, p := range AllProfiles() {
			tc := readCases(t, c.Files[p])[0]
			cfg, has := tc["schedulerConfigPath"]
			if want, derived := configs[p]; derived != has || (has && cfg != want) {
				t.Errorf("%s/%s: schedulerConfigPath = %v, want %q", c.Name, p, cfg, want)
			}
		}
	}
	if diff := cmp.Diff(ownCases, got); diff != "" {
		t.Errorf("our test cases (-want +got):\n%s", diff)
	}
}

// BENCH_SCALE=15000 runs upstream's four inter-pod affinity cases and
// SchedulingBasic, each 5000Nodes x3, and ours.
func TestScaledWorkloads(t *testing.T) {
	setup := prepareForTest(t, DefaultSources)
	runs, _ := Plan(setup.Cases, regexp.MustCompile(".*"), "15000Nodes", 1, AllProfiles())
	var got []string
	for _, r := range runs {
		if !slices.Contains(got, r.Case) {
			got = append(got, r.Case)
		}
	}
	want := append([]string{"SchedulingPodAntiAffinity", "SchedulingPodAffinity", "SchedulingPreferredPodAffinity",
		"SchedulingPreferredPodAntiAffinity", "SchedulingBasic"}, ownCases...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("test cases at 15000Nodes (-want +got):\n%s", diff)
	}
	pods := map[string]int{}
	for _, c := range setup.Cases {
		for _, w := range c.Workloads {
			pods[c.Name+"/"+w.Name] = w.MeasuredPods
		}
	}
	for _, c := range want[:5] {
		if n, n5 := pods[c+"/15000Nodes"], pods[c+"/5000Nodes"]; n != 3*n5 || n == 0 {
			t.Errorf("%s: measures %d pods at 15000Nodes, %d at 5000Nodes: want x3", c, n, n5)
		}
	}
}

func TestAddScaledWorkloadRejects(t *testing.T) {
	sc := Scaling{From: "5000Nodes", Name: "15000Nodes", Factor: 3}
	for name, tc := range map[string]struct {
		workloads []any
		sc        Scaling
		want      string
	}{
		"no source workload": {[]any{map[string]any{"name": "500Nodes"}}, sc, "no workload 5000Nodes"},
		"already there": {[]any{map[string]any{"name": "5000Nodes"}, map[string]any{"name": "15000Nodes"}}, sc,
			"has a workload 15000Nodes already"},
		"not a count": {[]any{map[string]any{"name": "5000Nodes", "params": map[string]any{"duration": "10s"}}}, sc,
			"parameter duration = 10s is not a count"},
		"factor": {[]any{map[string]any{"name": "5000Nodes"}}, Scaling{From: "5000Nodes", Name: "x", Factor: 1}, "factor 1"},
	} {
		err := addScaledWorkload(map[string]any{"workloads": tc.workloads}, tc.sc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	tc := map[string]any{"workloads": []any{map[string]any{"name": "5000Nodes", "threshold": 70.0, "labels": []any{"performance"},
		"params": map[string]any{"initNodes": 5000.0, "measurePods": 1000.0}}}}
	if err := addScaledWorkload(tc, sc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "15000Nodes", "labels": []any{"performance"}, "params": map[string]any{"initNodes": 15000.0, "measurePods": 3000.0}}
	if diff := cmp.Diff(want, tc["workloads"].([]any)[1]); diff != "" {
		t.Errorf("scaled workload (-want +got):\n%s", diff)
	}
}

// renderedOp is one createPods op of a workload with its pods rendered.
type renderedOp struct {
	namespace string
	measured  bool
	pods      []*v1.Pod
}

// Our pod and node templates, rendered at each workload's parameters the
// way scheduler_perf renders them (text/template with .Index, .Count and
// the op's templateParams), decode into valid objects and give each test
// case what the README says it models: N distinct Deployments interleaved,
// with every kind of term, and for the cold start a pre-bound layout that
// satisfies every required term. The 5000- and 15000-node sizes are
// checked by their sizes only (see checkCapacity), to keep this cheap.
func TestOwnWorkloadsRender(t *testing.T) {
	setup := prepareForTest(t, DefaultSources)
	for _, c := range setup.Cases {
		if c.Topic != ownTopic {
			continue
		}
		tc := readCases(t, c.Files[Upstream])[0]
		ops, _ := tc["workloadTemplate"].([]any)
		for _, w := range tc["workloads"].([]any) {
			wl := w.(map[string]any)
			name := c.Name + "/" + wl["name"].(string)
			params := intParams(t, name, wl["params"].(map[string]any))
			t.Run(name, func(t *testing.T) {
				checkCapacity(t, c.Name, params)
				if params["initNodes"] > 500 {
					return
				}
				nodes, rendered := render(t, tc, ops, params)
				checkInterleaved(t, params, rendered)
				if strings.HasPrefix(c.Name, "ColdStart") {
					checkBoundLayout(t, nodes, rendered)
				} else {
					for _, op := range rendered {
						for _, p := range op.pods {
							if p.Spec.NodeName != "" {
								t.Fatalf("%s: pod %s is bound at creation; only the cold start binds", op.namespace, p.GenerateName)
							}
						}
					}
				}
			})
		}
	}
}

func intParams(t *testing.T, name string, raw map[string]any) map[string]int {
	out := map[string]int{}
	for k, v := range raw {
		f, ok := v.(float64)
		if !ok {
			t.Fatalf("%s: parameter %s = %v is not a number", name, k, v)
		}
		out[k] = int(f)
	}
	return out
}

// render renders the workload's nodes and the pods of every createPods op.
func render(t *testing.T, tc map[string]any, ops []any, params map[string]int) (map[string]*v1.Node, []renderedOp) {
	t.Helper()
	funcs := template.FuncMap{
		"Mod":    func(a, b int) int { return a % b },
		"AddInt": func(a, b int) int { return a + b },
	}
	resolve := func(raw map[string]any) map[string]any {
		env := map[string]any{}
		for k, v := range raw {
			if s, ok := v.(string); ok && strings.HasPrefix(s, "$") {
				n, ok := params[s[1:]]
				if !ok {
					t.Fatalf("template parameter %s: no workload parameter %s", k, s)
				}
				env[k] = n
				continue
			}
			if f, ok := v.(float64); ok {
				v = int(f)
			}
			env[k] = v
		}
		return env
	}
	load := func(path string) *template.Template {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return template.Must(template.New(path).Funcs(funcs).Parse(string(raw)))
	}
	each := func(tmpl *template.Template, env map[string]any, count int, obj func() any) {
		for i := range count {
			env["Index"], env["Count"] = i, count
			var b bytes.Buffer
			if err := tmpl.Execute(&b, env); err != nil {
				t.Fatalf("%s, index %d: %v", tmpl.Name(), i, err)
			}
			if err := yaml.UnmarshalStrict(b.Bytes(), obj()); err != nil {
				t.Fatalf("%s, index %d: %v\n%s", tmpl.Name(), i, err, b.String())
			}
		}
	}
	count := func(op map[string]any) int {
		if p, ok := op["countParam"].(string); ok {
			return params[strings.TrimPrefix(p, "$")]
		}
		return int(op["count"].(float64))
	}
	var nodes []*v1.Node
	var out []renderedOp
	for _, o := range ops {
		op := o.(map[string]any)
		switch op["opcode"] {
		case "createNodes":
			each(load(op["nodeTemplatePath"].(string)), map[string]any{}, count(op), func() any {
				n := &v1.Node{}
				nodes = append(nodes, n)
				return n
			})
		case "createPods":
			path, _ := op["podTemplatePath"].(string)
			if path == "" {
				path = tc["defaultPodTemplatePath"].(string)
			}
			tp, _ := op["templateParams"].(map[string]any)
			r := renderedOp{namespace: op["namespace"].(string)}
			r.measured, _ = op["collectMetrics"].(bool)
			each(load(path), resolve(tp), count(op), func() any {
				p := &v1.Pod{}
				r.pods = append(r.pods, p)
				return p
			})
			out = append(out, r)
		}
	}
	byName := map[string]*v1.Node{}
	for _, n := range nodes {
		if n.Name == "" || byName[n.Name] != nil {
			t.Fatalf("node name %q empty or repeated: pods are bound to nodes by name", n.Name)
		}
		byName[n.Name] = n
	}
	return byName, out
}

// checkInterleaved: the measured pods belong to min(deployments, pods)
// distinct Deployments, consecutive pods to different ones, and together
// use every kind of term the README lists.
func checkInterleaved(t *testing.T, params map[string]int, ops []renderedOp) {
	t.Helper()
	var measured *renderedOp
	for i := range ops {
		if ops[i].measured {
			if measured != nil {
				t.Fatal("more than one measured op")
			}
			measured = &ops[i]
		}
	}
	if measured == nil || measured.namespace == ops[0].namespace {
		t.Fatalf("the measured pods need a namespace of their own, apart from the init pods")
	}
	deployments := params["deployments"]
	if deployments == 0 {
		deployments = 100 // the cold start's, fixed in its templateParams
	}
	apps := map[string]bool{}
	kinds := map[string]bool{}
	for i, p := range measured.pods {
		apps[p.Labels["app"]] = true
		if i > 0 && p.Labels["app"] == measured.pods[i-1].Labels["app"] && deployments > 1 {
			t.Fatalf("pods %d and %d are of one Deployment: not interleaved", i-1, i)
		}
		for _, k := range termKinds(p.Spec.Affinity) {
			kinds[k] = true
		}
	}
	if want := min(deployments, len(measured.pods)); len(apps) != want {
		t.Errorf("measured pods belong to %d Deployments, want %d", len(apps), want)
	}
	var got []string
	for k := range kinds {
		got = append(got, k)
	}
	slices.Sort(got)
	want := []string{"anti-affinity", "affinity", "explicit namespaces", "hostname", "matchLabelKeys", "namespaceSelector", "preferred", "required", "zone"}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" && len(measured.pods) >= 4 {
		t.Errorf("kinds of terms among the measured pods (-want +got):\n%s", diff)
	}
}

func termKinds(a *v1.Affinity) []string {
	var out []string
	add := func(kind string, terms []v1.PodAffinityTerm, required bool) {
		for _, term := range terms {
			out = append(out, kind)
			if required {
				out = append(out, "required")
			} else {
				out = append(out, "preferred")
			}
			switch term.TopologyKey {
			case v1.LabelHostname:
				out = append(out, "hostname")
			case v1.LabelTopologyZone:
				out = append(out, "zone")
			}
			if term.NamespaceSelector != nil {
				out = append(out, "namespaceSelector")
			}
			if len(term.Namespaces) > 0 {
				out = append(out, "explicit namespaces")
			}
			if len(term.MatchLabelKeys) > 0 {
				out = append(out, "matchLabelKeys")
			}
		}
	}
	weighted := func(ws []v1.WeightedPodAffinityTerm) []v1.PodAffinityTerm {
		var terms []v1.PodAffinityTerm
		for _, w := range ws {
			terms = append(terms, w.PodAffinityTerm)
		}
		return terms
	}
	if a == nil {
		return nil
	}
	if pa := a.PodAffinity; pa != nil {
		add("affinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, true)
		add("affinity", weighted(pa.PreferredDuringSchedulingIgnoredDuringExecution), false)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		add("anti-affinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, true)
		add("anti-affinity", weighted(pa.PreferredDuringSchedulingIgnoredDuringExecution), false)
	}
	return out
}

// checkBoundLayout: the cold start's init pods are all bound, to nodes that
// exist, in a layout a scheduler could have produced: no two pods that a
// required anti-affinity term keeps apart share its topology domain, and
// each pod with a required affinity term shares its domain with every pod
// the term selects. All init pods are in one namespace, which every term
// selects (explicitly or by the team label).
func checkBoundLayout(t *testing.T, nodes map[string]*v1.Node, ops []renderedOp) {
	t.Helper()
	var init []*v1.Pod
	for _, op := range ops {
		if op.measured {
			for _, p := range op.pods {
				if p.Spec.NodeName != "" {
					t.Fatalf("measured pod %s is bound at creation: the scheduler must place it", p.GenerateName)
				}
			}
			continue
		}
		init = append(init, op.pods...)
	}
	domain := func(p *v1.Pod, key string) string {
		n := nodes[p.Spec.NodeName]
		if n == nil {
			t.Fatalf("pod %s is bound to %q, which is no node of the workload", p.GenerateName, p.Spec.NodeName)
		}
		if key == v1.LabelHostname {
			return n.Name // the harness sets the hostname label to the name
		}
		v, ok := n.Labels[key]
		if !ok {
			t.Fatalf("node %s has no %s label", n.Name, key)
		}
		return v
	}
	// selector is the term's selector with matchLabelKeys merged in, as
	// the API server does at creation.
	selector := func(owner *v1.Pod, term v1.PodAffinityTerm) labels.Selector {
		ls := term.LabelSelector.DeepCopy()
		for _, k := range term.MatchLabelKeys {
			ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{owner.Labels[k]}})
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	type required struct {
		anti bool
		key  string
		sel  labels.Selector
	}
	bound := 0
	for _, p := range init {
		if p.Spec.NodeName == "" {
			t.Fatalf("init pod %s is not bound: the cold start's scheduler would schedule it", p.GenerateName)
		}
		bound++
		var terms []required
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, required{true, term.TopologyKey, selector(p, term)})
			}
		}
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
			for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, required{false, term.TopologyKey, selector(p, term)})
			}
		}
		for _, term := range terms {
			for _, q := range init {
				if q == p || !term.sel.Matches(labels.Set(q.Labels)) {
					continue
				}
				if same := domain(p, term.key) == domain(q, term.key); same == term.anti {
					t.Fatalf("%s on %s and %s on %s: required (anti-affinity: %v) term on %s violated",
						p.GenerateName, p.Spec.NodeName, q.GenerateName, q.Spec.NodeName, term.anti, term.key)
				}
			}
		}
	}
	if bound != len(nodes) {
		t.Errorf("%d init pods on %d nodes: the cold start binds one pod to every node", bound, len(nodes))
	}
}

// checkCapacity: at every size, the pods fit with every required term
// honoured however the scheduler places them: a Deployment with required
// hostname anti-affinity needs a node per replica, and the Deployments
// kept in one zone (shape 2) could all pick the same one, which must hold
// them (40 of the 100m pods per 4-CPU node, 4 zones).
func checkCapacity(t *testing.T, name string, params map[string]int) {
	t.Helper()
	nodes, pods := params["initNodes"], params["initPods"]+params["measurePods"]
	deployments := params["deployments"]
	if strings.HasPrefix(name, "ColdStart") {
		deployments = 100
		if params["initPods"] != nodes {
			t.Errorf("cold start: %d init pods on %d nodes; the bound layout needs one per node", params["initPods"], nodes)
		}
	}
	perDeployment := (pods + deployments - 1) / deployments
	if perDeployment > nodes {
		t.Errorf("%d pods per Deployment, %d nodes: required hostname anti-affinity cannot hold", perDeployment, nodes)
	}
	const zones, podsPerNode = 4, 40
	if shape2 := pods / 4; shape2 > nodes/zones*podsPerNode {
		t.Errorf("up to %d pods kept in one zone of %d nodes", shape2, nodes/zones)
	}
	if pods > nodes*podsPerNode {
		t.Errorf("%d pods on %d nodes of %d pods each", pods, nodes, podsPerNode)
	}
}

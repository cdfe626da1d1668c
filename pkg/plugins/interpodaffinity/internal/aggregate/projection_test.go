package aggregate

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	at "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/affinitytest"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/topology"
)

// checkProjections fails t unless every projection of ct is its classes
// added up: each class projected onto one class of each projection, of
// the class's namespace and labels of the projection's keys, and each
// projected class's references, pods and domains those of the classes
// projected onto it.
func checkProjections(t *testing.T, ct *classTable) {
	t.Helper()
	for j, p := range ct.projs {
		members := map[*podClass]int64{}
		pods := map[*podClass]int64{}
		domains := map[*podClass][]map[topology.Pair]int64{}
		for _, c := range ct.list {
			if len(c.proj) != len(ct.projs) {
				t.Fatalf("class %v is projected onto %d projections, %d kept", c.pod.Labels, len(c.proj), len(ct.projs))
			}
			q := c.proj[j]
			if p.byID[q.id] != q {
				t.Fatalf("projection %v: class %v is projected onto a class it does not hold", p.keys, c.pod.Labels)
			}
			want := map[string]string{}
			for _, k := range p.keys {
				if v, ok := c.pod.Labels[k]; ok {
					want[k] = v
				}
			}
			if q.pod.Namespace != c.pod.Namespace || !maps.Equal(q.pod.Labels, want) {
				t.Fatalf("projection %v: class %s/%v projected onto %s/%v", p.keys, c.pod.Namespace, c.pod.Labels, q.pod.Namespace, q.pod.Labels)
			}
			members[q]++
			pods[q] += c.pods
			for i := range c.domains {
				for len(domains[q]) <= i {
					domains[q] = append(domains[q], map[topology.Pair]int64{})
				}
				for d, n := range c.domains[i].All() {
					domains[q][i][d] += n
				}
			}
		}
		if len(p.list) != len(members) {
			t.Fatalf("projection %v holds %d classes, %d have classes projected onto them", p.keys, len(p.list), len(members))
		}
		for _, q := range p.list {
			if q.refs != members[q] || q.pods != pods[q] {
				t.Fatalf("projection %v: class %v has %d references and %d pods, its classes %d and %d", p.keys, q.pod.Labels, q.refs, q.pods, members[q], pods[q])
			}
			for i := range max(len(q.domains), len(domains[q])) {
				got, want := maps.Collect(q.domainsOf(i).All()), map[topology.Pair]int64(nil)
				if i < len(domains[q]) {
					want = domains[q][i]
				}
				if len(got) != len(want) || (len(got) > 0 && !maps.Equal(got, want)) {
					t.Fatalf("projection %v: class %v key %d domains %v, its classes' %v", p.keys, q.pod.Labels, i, got, want)
				}
			}
		}
	}
}

// TestProjections follows one history: a StatefulSet-like workload whose
// pods each carry a label of their own, queried by selectors on its
// workload label.
func TestProjections(t *testing.T) {
	nodes := []*framework.NodeInfo{}
	for i := range 6 {
		ni := framework.NewNodeInfo()
		ni.SetNode(tu.MakeNode(fmt.Sprint("n", i)).Label(at.Host, fmt.Sprint("n", i)).Label(at.Zone, fmt.Sprint("z", i%2)).Obj())
		nodes = append(nodes, ni)
	}
	made := 0
	place := func(ni *framework.NodeInfo, app string) *v1.Pod {
		made++
		p := at.Placed("default", fmt.Sprint("p", made), ni.Node().Name).Label("app", app).Label("pod-name", fmt.Sprint("p", made)).Obj()
		ni.AddPod(p)
		return p
	}
	for i, ni := range nodes {
		place(ni, "web")
		place(ni, "web")
		if i%3 == 0 {
			place(ni, "db")
		}
	}
	list := func() []fwk.NodeInfo {
		l := make([]fwk.NodeInfo, len(nodes))
		for i, ni := range nodes {
			l[i] = ni
		}
		return l
	}
	webZone := mustTerms(t, tu.AffinityTerm(at.Zone, tu.Selector(map[string]string{"app": "web"})))
	table := &Table{}
	ct := &table.pods.classes
	ask := func(terms []fwk.AffinityTerm) map[string]int64 {
		t.Helper()
		got, ok := table.Incoming(framework.NewCycleState(), list(), nil, IncomingTerms{AntiAffinity: terms})
		if !ok {
			t.Fatal("the table did not answer")
		}
		checkProjections(t, ct)
		out := map[string]int64{}
		for p, n := range got.AntiAffinity.ToMap() {
			out[p.Value] = n
		}
		return out
	}

	if got, want := ask(webZone), map[string]int64{"z0": 6, "z1": 6}; !maps.Equal(got, want) {
		t.Fatalf("first query: %v, want %v", got, want)
	}
	if len(ct.projs) != 0 {
		t.Fatalf("a key set asked for once made a projection: %v", ct.projs[0].keys)
	}
	if got, want := ask(webZone), map[string]int64{"z0": 6, "z1": 6}; !maps.Equal(got, want) {
		t.Fatalf("second query: %v, want %v", got, want)
	}
	if len(ct.projs) != 1 || !slices.Equal(ct.projs[0].keys, []string{"app"}) {
		t.Fatalf("after the second query: projections %d, want one onto [app]", len(ct.projs))
	}
	if n, classes := len(ct.projs[0].list), len(ct.list); n != 2 || classes != 14 {
		t.Fatalf("%d classes projected onto %d, want 14 onto 2 (web and db)", classes, n)
	}

	// Pods go and come: the projection follows the classes.
	for _, p := range slices.Clone(nodes[1].GetPods()) {
		if err := nodes[1].RemovePod(klog.Background(), p.GetPod()); err != nil {
			t.Fatal(err)
		}
	}
	place(nodes[2], "web")
	if got, want := ask(webZone), map[string]int64{"z0": 7, "z1": 4}; !maps.Equal(got, want) {
		t.Fatalf("after the changes: %v, want %v", got, want)
	}
	// Every web pod goes: its projected class with them.
	for _, ni := range nodes {
		for _, p := range slices.Clone(ni.GetPods()) {
			if p.GetPod().Labels["app"] == "web" {
				if err := ni.RemovePod(klog.Background(), p.GetPod()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if got := ask(webZone); len(got) != 0 {
		t.Fatalf("no web pod left, counted %v", got)
	}
	if n := len(ct.projs[0].list); n != 1 {
		t.Fatalf("%d projected classes left, want db's alone", n)
	}

	// One projection kept: another key set asked for twice takes its
	// place, and the first is made again on its second query after.
	ct.maxProjs = 1
	dbTier := mustTerms(t, tu.AffinityTerm(at.Host, tu.Selector(nil, tu.SelectorExpr("tier", metav1.LabelSelectorOpDoesNotExist), tu.SelectorExpr("app", metav1.LabelSelectorOpIn, "db"))))
	want := map[string]int64{"n0": 1, "n3": 1}
	for range 2 {
		if got := ask(dbTier); !maps.Equal(got, want) {
			t.Fatalf("db by host: %v, want %v", got, want)
		}
	}
	if len(ct.projs) != 1 || !slices.Equal(ct.projs[0].keys, []string{"app", "tier"}) {
		t.Fatalf("projections after [app tier] was asked for twice with room for one: %v", ct.projs[0].keys)
	}
	ask(webZone)
	if !slices.Equal(ct.projs[0].keys, []string{"app", "tier"}) {
		t.Fatalf("a key set asked for once evicted a projection")
	}
	ask(webZone)
	if !slices.Equal(ct.projs[0].keys, []string{"app"}) {
		t.Fatalf("[app] asked for twice was not made again: %v", ct.projs[0].keys)
	}

	// Both key sets in every query, room for one: the one kept is not
	// evicted by the other, asked for in the same query.
	both := slices.Concat(webZone, dbTier)
	for range 3 {
		if got := ask(both); !maps.Equal(got, map[string]int64{"n0": 1, "n3": 1}) {
			t.Fatalf("web by zone and db by host: %v", got)
		}
		if len(ct.projs) != 1 || !slices.Equal(ct.projs[0].keys, []string{"app"}) {
			t.Fatalf("a projection asked for in the same query was evicted")
		}
	}
}

// TestProjectionDeclined: a projection that does not halve the classes is
// not kept, and is tried again once the classes have doubled.
func TestProjectionDeclined(t *testing.T) {
	ni := framework.NewNodeInfo()
	ni.SetNode(tu.MakeNode("n0").Label(at.Host, "n0").Obj())
	made := 0
	place := func(lbls ...string) {
		made++
		w := at.Placed("default", fmt.Sprint("p", made), "n0")
		for i := 0; i < len(lbls); i += 2 {
			w.Label(lbls[i], lbls[i+1])
		}
		ni.AddPod(w.Obj())
	}
	// Four Deployments: a class each, and a projection onto app alone
	// has as many.
	for _, app := range []string{"a", "b", "c", "d"} {
		place("app", app, "pod-template-hash", "h"+app)
	}
	terms := mustTerms(t, tu.AffinityTerm(at.Host, tu.Selector(map[string]string{"app": "a"})))
	table := &Table{}
	ct := &table.pods.classes
	ask := func() int64 {
		t.Helper()
		got, ok := table.Incoming(framework.NewCycleState(), []fwk.NodeInfo{ni}, nil, IncomingTerms{AntiAffinity: terms})
		if !ok {
			t.Fatal("the table did not answer")
		}
		checkProjections(t, ct)
		return got.AntiAffinity.ToMap()[topology.Pair{Key: at.Host, Value: "n0"}]
	}
	for i := range 3 {
		if n := ask(); n != 1 {
			t.Fatalf("query %d: %d pods of a on n0, want 1", i, n)
		}
		if len(ct.projs) != 0 {
			t.Fatalf("query %d: a projection onto %v of %d classes was kept", i, ct.projs[0].keys, len(ct.list))
		}
	}
	// Pods of a with a label of their own: the classes double, and the
	// projection now halves them.
	for range 4 {
		place("app", "a", "pod-template-hash", "ha", "pod-name", fmt.Sprint("p", made+1))
	}
	if n := ask(); n != 5 {
		t.Fatalf("%d pods of a on n0, want 5", n)
	}
	if len(ct.projs) != 1 || len(ct.projs[0].list) != 4 {
		t.Fatalf("with %d classes, %d projections kept, want one of 4 classes", len(ct.list), len(ct.projs))
	}
}

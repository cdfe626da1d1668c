package enforcer

import (
	"context"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// ourPlugins is a profile's plugins (at the indentation of its keys): the
// shipped plugin set, ours in place of the in-tree ones, "*" disabled.
const ourPlugins = `
      multiPoint:
        enabled:
          - {name: PrioritySort}
          - {name: PlacementNodeName}
          - {name: PlacementTaintToleration, weight: 3}
          - {name: PlacementNodeAffinity, weight: 2}
          - {name: NodeResourcesFit, weight: 1}
          - {name: PlacementInterPodAffinity, weight: 2}
          - {name: DefaultBinder}
        disabled: [{name: "*"}]`

// testSchedulerConfig has the shipped plugin set in two profiles: ours, and
// "pool-foo", whose addedAffinity confines its pods to pool=foo.
const testSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: placement-scheduler
    plugins: &plugins` + ourPlugins + `
  - schedulerName: pool-foo
    plugins: *plugins
    pluginConfig:
      - name: PlacementNodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions: [{key: pool, operator: In, values: [foo]}]
`

func testConfig(t testing.TB) *config.KubeSchedulerConfiguration {
	t.Helper()
	cfg, err := profile.LoadConfig([]byte(testSchedulerConfig), "test config")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// newTestJudge builds a Judge over nodes and pods with namespaces served by
// a fake clientset's informers.
func newTestJudge(t testing.TB, nodes []*v1.Node, pods []*v1.Pod, namespaces ...*v1.Namespace) *Judge {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	objs := make([]runtime.Object, 0, len(namespaces))
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	j, err := NewJudge(ctx, testConfig(t), factory, nodes, pods)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func rulesOf(vs []Verdict) []enforcerv1alpha1.Rule {
	var out []enforcerv1alpha1.Rule
	for _, v := range vs {
		out = append(out, v.Rule)
	}
	return out
}

func TestJudgeNodeRules(t *testing.T) {
	pool := func(name, p string) *v1.Node { return tu.MakeNode(name).Label("pool", p).Obj() }
	cases := []struct {
		name string
		node *v1.Node
		pod  *tu.PodWrapper
		want []enforcerv1alpha1.Rule
	}{
		{"nodeSelector holds", tu.MakeNode("n").Label("disktype", "ssd").Obj(),
			tu.MakePod("ns", "p").NodeSelector(map[string]string{"disktype": "ssd"}), nil},
		{"nodeSelector alone, label gone", tu.MakeNode("n").Obj(),
			tu.MakePod("ns", "p").NodeSelector(map[string]string{"disktype": "ssd"}), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"terms are ORed: the second still holds", pool("n", "b"),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "a")), tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "b"))), nil},
		{"expressions are ANDed: one fails", pool("n", "b"),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "b"), tu.Expr("gpu", v1.NodeSelectorOpExists))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"NotIn broken by adding a label", tu.MakeNode("n").Label("gpu", "true").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("gpu", v1.NodeSelectorOpNotIn, "true"))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"NotIn holds without the label", tu.MakeNode("n").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("gpu", v1.NodeSelectorOpNotIn, "true"))), nil},
		{"DoesNotExist broken by adding a label", tu.MakeNode("n").Label("spot", "").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("spot", v1.NodeSelectorOpDoesNotExist))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"Gt holds", tu.MakeNode("n").Label("kernel", "6").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("kernel", v1.NodeSelectorOpGt, "5"))), nil},
		{"Gt is strict", tu.MakeNode("n").Label("kernel", "5").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("kernel", v1.NodeSelectorOpGt, "5"))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"Lt on a non-integer label", tu.MakeNode("n").Label("kernel", "x").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.Term(tu.Expr("kernel", v1.NodeSelectorOpLt, "5"))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"nodeSelector and affinity must both hold", pool("n", "a"),
			tu.MakePod("ns", "p").NodeSelector(map[string]string{"disktype": "ssd"}).RequiredNodeTerms(tu.Term(tu.Expr("pool", v1.NodeSelectorOpIn, "a"))), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"matchFields pins another node", tu.MakeNode("n").Obj(),
			tu.MakePod("ns", "p").RequiredNodeTerms(tu.FieldTerm(v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"m"}})), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"addedAffinity of the profile that placed it", pool("n", "bar"),
			tu.MakePod("ns", "p").SchedulerName("pool-foo"), []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity}},
		{"addedAffinity holds", pool("n", "foo"),
			tu.MakePod("ns", "p").SchedulerName("pool-foo"), nil},
		{"another profile's addedAffinity does not apply", pool("n", "bar"),
			tu.MakePod("ns", "p").Placement(), nil},
		{"NoSchedule taint never counts", tu.MakeNode("n").Taint("dedicated", "x", v1.TaintEffectNoSchedule).Obj(),
			tu.MakePod("ns", "p").Placement(), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.UID("uid-p").NodeName("n").Obj()
			if pod.Spec.SchedulerName == "" {
				pod.Spec.SchedulerName = tu.SchedulerName
			}
			j := newTestJudge(t, []*v1.Node{tc.node}, []*v1.Pod{pod})
			got, err := j.Judge(context.Background(), pod, AllRules, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rulesOf(got), tc.want) {
				t.Errorf("verdicts %+v, want rules %v", got, tc.want)
			}
		})
	}
}

func TestJudgeUnknownProfile(t *testing.T) {
	pod := tu.MakePod("ns", "p").SchedulerName("someone-else").NodeName("n").Obj()
	j := newTestJudge(t, []*v1.Node{tu.MakeNode("n").Obj()}, []*v1.Pod{pod})
	if _, err := j.Judge(context.Background(), pod, AllRules, nil); err == nil {
		t.Fatal("want an error for a pod of an unknown profile")
	}
}

func TestJudgePodRules(t *testing.T) {
	zone := func(name, z string) *v1.Node { return tu.MakeNode(name).Label("zone", z).Obj() }
	nodes := []*v1.Node{zone("a1", "a"), zone("a2", "a"), zone("b1", "b")}
	app := func(v string) *metav1.LabelSelector { return tu.Selector(map[string]string{"app": v}) }
	pod := func(name, node, label string) *tu.PodWrapper {
		return tu.MakePod("ns", name).UID("uid-"+name).Placement().NodeName(node).Label("app", label)
	}

	t.Run("affinity partner in the domain", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("db"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p, pod("db", "a2", "db").Obj()})
		expectRules(t, j, p, nil, nil)
	})
	t.Run("affinity partner gone from the domain", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("db"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p, pod("db", "b1", "db").Obj()})
		expectRules(t, j, p, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity})
	})
	t.Run("first-pod rule: it matches its own term and nothing else matches", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("web"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p})
		expectRules(t, j, p, nil, nil)
	})
	t.Run("first-pod rule ends once a match exists elsewhere", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("web"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p, pod("web2", "b1", "web").Obj()})
		expectRules(t, j, p, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity})
	})
	t.Run("anti-affinity: the owner of the term violates, the target does not", func(t *testing.T) {
		owner := pod("owner", "a1", "x").RequiredPodAntiAffinity(tu.AffinityTerm("zone", app("y"))).Obj()
		target := pod("target", "a2", "y").Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{owner, target})
		expectRules(t, j, owner, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAntiAffinity})
		expectRules(t, j, target, nil, nil)
	})
	t.Run("anti-affinity matching only itself is no violation", func(t *testing.T) {
		p := pod("solo", "a1", "x").RequiredPodAntiAffinity(tu.AffinityTerm("zone", app("x"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p})
		expectRules(t, j, p, nil, nil)
	})
	t.Run("mutual anti-affinity: once one is gone the other holds", func(t *testing.T) {
		a := pod("a", "a1", "x").RequiredPodAntiAffinity(tu.AffinityTerm("zone", app("x"))).Obj()
		b := pod("b", "a2", "x").RequiredPodAntiAffinity(tu.AffinityTerm("zone", app("x"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{a, b})
		expectRules(t, j, a, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAntiAffinity})
		expectRules(t, j, b, []*v1.Pod{a}, nil)
	})
	t.Run("only the opted-in kinds are judged", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("db"))).
			RequiredPodAntiAffinity(tu.AffinityTerm("zone", app("cache"))).Obj()
		j := newTestJudge(t, nodes, []*v1.Pod{p, pod("cache", "a2", "cache").Obj()})
		got, err := j.Judge(context.Background(), p, ruleBit(enforcerv1alpha1.PodAntiAffinity), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAntiAffinity}; !reflect.DeepEqual(rulesOf(got), want) {
			t.Errorf("got %v, want %v", rulesOf(got), want)
		}
		expectRules(t, j, p, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity, enforcerv1alpha1.PodAntiAffinity})
	})
	t.Run("namespaceSelector term follows namespace labels", func(t *testing.T) {
		term := tu.WithNamespaceSelector(tu.AffinityTerm("zone", app("db")), tu.Selector(map[string]string{"team": "data"}))
		p := pod("web", "a1", "web").RequiredPodAffinity(term).Obj()
		db := tu.MakePod("other", "db").UID("uid-db").Placement().NodeName("a2").Label("app", "db").Obj()
		pods := []*v1.Pod{p, db}
		j := newTestJudge(t, nodes, pods, tu.MakeNamespace("ns", nil), tu.MakeNamespace("other", map[string]string{"team": "data"}))
		expectRules(t, j, p, nil, nil)
		j = newTestJudge(t, nodes, pods, tu.MakeNamespace("ns", nil), tu.MakeNamespace("other", map[string]string{"team": "web"}))
		expectRules(t, j, p, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity})
	})
	t.Run("terminating pods do not count", func(t *testing.T) {
		p := pod("web", "a1", "web").RequiredPodAffinity(tu.AffinityTerm("zone", app("db"))).Obj()
		db := pod("db", "a2", "db").Obj()
		db.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		j := newTestJudge(t, nodes, []*v1.Pod{p, db, pod("db2", "b1", "db").Obj()})
		expectRules(t, j, p, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity})
	})
}

func expectRules(t *testing.T, j *Judge, p *v1.Pod, gone []*v1.Pod, want []enforcerv1alpha1.Rule) {
	t.Helper()
	got, err := j.Judge(context.Background(), p, AllRules, gone)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rulesOf(got), want) {
		t.Errorf("%s: verdicts %+v, want rules %v", p.Name, got, want)
	}
	// Judging restores the snapshot: a second call agrees.
	again, err := j.Judge(context.Background(), p, AllRules, gone)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rulesOf(again), rulesOf(got)) {
		t.Errorf("%s: second judgement %v differs from the first %v", p.Name, rulesOf(again), rulesOf(got))
	}
}

func TestParseRules(t *testing.T) {
	for in, want := range map[string]RuleSet{"all": AllRules, "none": 0, "node-affinity": 1, " pod-affinity , pod-anti-affinity ": 6} {
		got, err := ParseRules(in)
		if err != nil || got != want {
			t.Errorf("ParseRules(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseRules("node"); err == nil {
		t.Error("ParseRules(node): want an error")
	}
	pod := tu.MakePod("ns", "p").Obj()
	if got, _ := OptIn(pod, AllRules); got != AllRules {
		t.Errorf("no annotation: want the namespace default")
	}
	pod.Annotations = map[string]string{Annotation: "none"}
	if got, _ := OptIn(pod, AllRules); got != 0 {
		t.Errorf("none: want an opt-out")
	}
	pod.Annotations[Annotation] = "bogus"
	if got, err := OptIn(pod, AllRules); got != 0 || err == nil {
		t.Errorf("bogus: want nothing enforced and an error")
	}
}

// partialProfiles has a profile without our pod-affinity filter (a batch
// profile's usual tweak) and one without our node-affinity filter, beside
// the full one.
const partialProfiles = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: placement-scheduler
    plugins:` + ourPlugins + `
  - schedulerName: no-pod-affinity
    plugins:
      multiPoint:
        enabled:
          - {name: PrioritySort}
          - {name: PlacementNodeName}
          - {name: PlacementNodeAffinity}
          - {name: NodeResourcesFit}
          - {name: DefaultBinder}
        disabled: [{name: "*"}]
  - schedulerName: no-node-affinity
    plugins:` + ourPlugins + `
      filter:
        disabled: [{name: PlacementNodeAffinity}]
`

// A pod is judged only by the rules its own profile's Filter applies: its
// scheduler would place a replacement in violation of any other rule again.
func TestJudgeOnlyTheRulesItsProfileRuns(t *testing.T) {
	cfg, err := profile.LoadConfig([]byte(partialProfiles), "partial")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]RuleSet{
		"placement-scheduler": AllRules,
		"no-pod-affinity":     ruleBit(enforcerv1alpha1.NodeAffinity),
		"no-node-affinity":    ruleBit(enforcerv1alpha1.PodAffinity) | ruleBit(enforcerv1alpha1.PodAntiAffinity),
	} {
		for i := range cfg.Profiles {
			if cfg.Profiles[i].SchedulerName == name {
				if got := profileRules(&cfg.Profiles[i]); got != want {
					t.Errorf("profile %s enforces %v, want %v", name, got, want)
				}
			}
		}
	}
	zone := func(name, z string) *v1.Node { return tu.MakeNode(name).Label("zone", z).Obj() }
	nodes := []*v1.Node{zone("a1", "a"), zone("a2", "a")}
	// Breaks both its anti-affinity (x beside it in zone a) and its
	// nodeSelector.
	breaking := func(profile string) *v1.Pod {
		return tu.MakePod("ns", "p-"+profile).UID("uid-"+profile).SchedulerName(profile).NodeName("a1").Label("app", "p").
			NodeSelector(map[string]string{"disk": "ssd"}).
			RequiredPodAntiAffinity(tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "x"}))).Obj()
	}
	x := tu.MakePod("ns", "x").UID("uid-x").Placement().NodeName("a2").Label("app", "x").Obj()
	full, noPods, noNodes := breaking("placement-scheduler"), breaking("no-pod-affinity"), breaking("no-node-affinity")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := NewJudge(ctx, cfg, informers.NewSharedInformerFactory(fake.NewClientset(), 0), nodes, []*v1.Pod{full, noPods, noNodes, x})
	if err != nil {
		t.Fatal(err)
	}
	expectRules(t, j, full, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity, enforcerv1alpha1.PodAntiAffinity})
	expectRules(t, j, noPods, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.NodeAffinity})
	expectRules(t, j, noNodes, nil, []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAntiAffinity})
}

package enforcer

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// randomWorld is a small cluster that random events change: few label
// values, so that domains are shared, terms match and first-pod rules
// flip.
type randomWorld struct {
	rng   *rand.Rand
	nodes map[string]*v1.Node
	pods  map[types.UID]*v1.Pod
	nss   map[string]*v1.Namespace
	seq   int
}

var (
	zones = []string{"z0", "z1", "z2"}
	apps  = []string{"a", "b", "c"}
)

func (w *randomWorld) pick(vals []string) string { return vals[w.rng.IntN(len(vals))] }

func (w *randomWorld) newNode() *v1.Node {
	w.seq++
	name := fmt.Sprintf("n%d", w.seq)
	b := tu.MakeNode(name).Label(v1.LabelHostname, name).Label("zone", w.pick(zones)).Capacity("8", "16Gi", 30).Ready()
	if w.rng.IntN(4) > 0 {
		b = b.Label("pool", "foo")
	}
	if w.rng.IntN(2) == 0 {
		b = b.Label("disk", "ssd")
	}
	return b.Obj()
}

// newPod is a pod on a random node with random terms; most opt in.
func (w *randomWorld) newPod() *v1.Pod {
	w.seq++
	names := slices.Sorted(maps.Keys(w.nodes))
	ns := w.pick([]string{"ns1", "ns2"})
	p := pod(fmt.Sprintf("p%d", w.seq), "rs-"+w.pick(apps), w.pick(names)).Label("app", w.pick(apps))
	p.Namespace = ns
	p.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(w.rng.IntN(1000)) * time.Second))
	if w.rng.IntN(4) == 0 {
		p.Annotations = nil // not opted in: only seen by others' terms
	}
	term := func() v1.PodAffinityTerm {
		t := tu.AffinityTerm(w.pick([]string{"zone", v1.LabelHostname}), tu.Selector(map[string]string{"app": w.pick(apps)}))
		if w.rng.IntN(4) == 0 {
			t = tu.WithNamespaceSelector(t, tu.Selector(map[string]string{"team": "x"}))
		}
		return t
	}
	switch w.rng.IntN(5) {
	case 0:
		p = p.RequiredPodAntiAffinity(term())
	case 1:
		p = p.RequiredPodAffinity(term())
	case 2:
		p = p.NodeSelector(map[string]string{"disk": "ssd"})
	case 3:
		p = p.RequiredPodAffinity(term()).RequiredPodAntiAffinity(term())
	}
	return p.Obj()
}

// step makes one random change and returns the changed object and
// whether it was deleted.
func (w *randomWorld) step() (any, bool) {
	anyNode := func() *v1.Node {
		names := slices.Sorted(maps.Keys(w.nodes))
		return w.nodes[names[w.rng.IntN(len(names))]]
	}
	anyPod := func() *v1.Pod {
		uids := slices.Sorted(maps.Keys(w.pods))
		return w.pods[uids[w.rng.IntN(len(uids))]]
	}
	switch k := w.rng.IntN(9); {
	case k == 0 && len(w.nodes) < 12:
		n := w.newNode()
		w.nodes[n.Name] = n
		return n, false
	case k == 1 && len(w.nodes) > 3:
		n := anyNode()
		delete(w.nodes, n.Name)
		return n, true
	case k <= 3:
		n := anyNode().DeepCopy()
		switch w.rng.IntN(3) {
		case 0:
			n.Labels["zone"] = w.pick(zones)
		case 1:
			if _, ok := n.Labels["disk"]; ok {
				delete(n.Labels, "disk")
			} else {
				n.Labels["disk"] = "ssd"
			}
		default:
			delete(n.Labels, "zone")
		}
		w.nodes[n.Name] = n
		return n, false
	case k == 4 || len(w.pods) < 5:
		p := w.newPod()
		w.pods[p.UID] = p
		return p, false
	case k == 5:
		p := anyPod()
		delete(w.pods, p.UID)
		return p, true
	case k == 6:
		p := anyPod().DeepCopy()
		p.Labels["app"] = w.pick(apps)
		w.pods[p.UID] = p
		return p, false
	case k == 7:
		p := anyPod().DeepCopy()
		p.DeletionTimestamp = &metav1.Time{Time: created}
		w.pods[p.UID] = p
		return p, false
	default:
		ns := w.nss[w.pick([]string{"ns1", "ns2"})].DeepCopy()
		if ns.Labels["team"] == "x" {
			ns.Labels = map[string]string{}
		} else {
			ns.Labels = map[string]string{"team": "x"}
		}
		w.nss[ns.Name] = ns
		return ns, false
	}
}

func (w *randomWorld) cluster() *Cluster {
	c := &Cluster{}
	for _, n := range w.nodes {
		c.Nodes = append(c.Nodes, n)
	}
	for _, p := range w.pods {
		c.Pods = append(c.Pods, p)
	}
	for _, ns := range w.nss {
		c.Namespaces = append(c.Namespaces, ns)
	}
	return c
}

// TestIncrementalMatchesFullRejudge applies random event sequences to the
// incremental state and, after each event, checks that
//   - its snapshot equals one freshly built from the same objects (nodes,
//     their labels, their pods, the affinity lists);
//   - judging only the pods the event can affect leaves every verdict as
//     a full re-judge of every pod gives it (so the affected set, closed
//     over the youngest-first anti-affinity order, is a superset of the
//     pods whose verdict changed), and the reports agree.
//
// Every other sequence evicts at once, so placers reserve nodes on the
// state's snapshot during passes.
func TestIncrementalMatchesFullRejudge(t *testing.T) {
	sequences, steps := 16, 40
	if testing.Short() {
		sequences = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	placed := 0
	for seq := range sequences {
		w := &randomWorld{rng: rand.New(rand.NewPCG(0x1ce, uint64(seq))), nodes: map[string]*v1.Node{}, pods: map[types.UID]*v1.Pod{},
			nss: map[string]*v1.Namespace{"ns1": tu.MakeNamespace("ns1", map[string]string{"team": "x"}), "ns2": tu.MakeNamespace("ns2", nil)}}
		for range 6 {
			n := w.newNode()
			w.nodes[n.Name] = n
		}
		for range 25 {
			p := w.newPod()
			w.pods[p.UID] = p
		}

		// Every other sequence acts at once (no grace): placers reserve
		// on the state's snapshot and evictions are sent, and the
		// snapshot must come out of each pass as it went in. Its reports
		// then differ from a fresh enforcer's (evictions in flight), so
		// only the verdicts are compared.
		acting := seq%2 == 1
		inc := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
			if acting {
				c.GracePeriod.NodeAffinity.Duration, c.GracePeriod.PodAffinity.Duration, c.GracePeriod.PodAntiAffinity.Duration = 0, 0, 0
			}
		})
		client := fake.NewClientset(tu.MakeNamespace("ns1", map[string]string{"team": "x"}), tu.MakeNamespace("ns2", nil))
		factory := informers.NewSharedInformerFactory(client, 0)
		s := newClusterState(ctx)
		ch := newChanges()
		for _, ns := range w.nss {
			ch.record(ns, false)
		}
		for _, n := range w.nodes {
			ch.record(n, false)
		}
		for _, p := range w.pods {
			ch.record(p, false)
		}
		j, err := newJudge(ctx, testConfig(t), factory, s)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := testPlacing(ctx, client, factory)
		if err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			if i > 0 {
				obj, deleted := w.step()
				if ns, ok := obj.(*v1.Namespace); ok {
					setNamespaceLabels(t, ctx, client, factory, ns)
				}
				ch.record(obj, deleted)
			}
			// The full re-judge starts from the same decisions: a younger
			// pod kept (protected, no-fit) is seen by older ones.
			full := newRig(t, nil)
			for uid, tr := range inc.e.tracked {
				full.e.tracked[uid] = &tracked{since: map[enforcerv1alpha1.Rule]time.Time{}, state: tr.state}
			}
			if _, err := inc.e.step(ctx, s, j, pl, ch); err != nil {
				t.Fatal(err)
			}
			full.c = w.cluster()
			full.pass()
			where := fmt.Sprintf("sequence %d step %d", seq, i)
			compareSnapshots(t, where, s.snapshot.Scheduler(), w.cluster())
			if got, want := verdictsOf(inc.e), verdictsOf(full.e); !equalVerdicts(got, want) {
				t.Fatalf("%s: incremental verdicts differ from a full re-judge\n got: %v\nwant: %v", where, got, want)
			}
			for _, r := range inc.e.Reports() {
				if r.Target != "" {
					placed++
				}
			}
			if got, want := reportsOf(inc.e), reportsOf(full.e); !acting && !slices.Equal(got, want) {
				t.Fatalf("%s: reports differ\n got: %v\nwant: %v", where, got, want)
			}
		}
	}
	if placed == 0 {
		t.Fatal("no pass placed a replacement: the placers' use of the snapshot went untested")
	}
}

// setNamespaceLabels writes ns to the fake apiserver and waits until the
// judge's Namespace lister serves it.
func setNamespaceLabels(t *testing.T, ctx context.Context, client *fake.Clientset, factory informers.SharedInformerFactory, ns *v1.Namespace) {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, err := factory.Core().V1().Namespaces().Lister().Get(ns.Name)
		return err == nil && fmt.Sprint(got.Labels) == fmt.Sprint(ns.Labels), nil
	})
	if err != nil {
		t.Fatalf("namespace %s: the lister never served its labels: %v", ns.Name, err)
	}
}

func compareSnapshots(t *testing.T, where string, got *schedcache.Snapshot, c *Cluster) {
	t.Helper()
	known := sets.New[string]()
	for _, n := range c.Nodes {
		known.Insert(n.Name)
	}
	var bound []*v1.Pod
	for _, p := range c.Pods {
		if inCache(p) && known.Has(p.Spec.NodeName) {
			bound = append(bound, p)
		}
	}
	want := schedcache.NewSnapshot(bound, c.Nodes)
	describe := func(s *schedcache.Snapshot) []string {
		var out []string
		list := func(name string, f func() ([]fwk.NodeInfo, error)) {
			nis, err := f()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ni := range nis {
				names = append(names, ni.Node().Name)
			}
			sort.Strings(names)
			out = append(out, fmt.Sprintf("%s: %v", name, names))
		}
		list("nodes", s.NodeInfos().List)
		list("affinity", s.NodeInfos().HavePodsWithAffinityList)
		list("anti-affinity", s.NodeInfos().HavePodsWithRequiredAntiAffinityList)
		nis, _ := s.NodeInfos().List()
		for _, ni := range nis {
			var pods []string
			for _, pi := range ni.GetPods() {
				pods = append(pods, string(pi.GetPod().UID)+"@"+pi.GetPod().Labels["app"])
			}
			sort.Strings(pods)
			out = append(out, fmt.Sprintf("%s %v: %v", ni.Node().Name, ni.Node().Labels, pods))
		}
		sort.Strings(out)
		return out
	}
	if g, w := describe(got), describe(want); !slices.Equal(g, w) {
		t.Fatalf("%s: incremental snapshot differs from a fresh one\n got: %v\nwant: %v", where, g, w)
	}
}

func verdictsOf(e *Enforcer) map[types.UID]string {
	out := map[types.UID]string{}
	for uid, jd := range e.judged {
		if jd.err != nil {
			out[uid] = "error: " + jd.err.Error()
			continue
		}
		var rules []string
		for _, v := range jd.verdicts {
			rules = append(rules, string(v.Rule)+" "+v.Reason)
		}
		out[uid] = fmt.Sprint(rules)
	}
	return out
}

func equalVerdicts(a, b map[types.UID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func reportsOf(e *Enforcer) []string {
	var out []string
	for _, r := range e.Reports() {
		out = append(out, fmt.Sprintf("%s %s %s %s", r.Pod, r.Rule, r.State, r.Detail))
	}
	return out
}

// TestStatusChurnJudgesNothing: an update no verdict or decision reads (a
// container restart count, a node heartbeat) affects no pod, and the
// snapshot still follows it; a pod orphaned by its controller is affected.
func TestStatusChurnJudgesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.FromContext(ctx)
	s := newClusterState(ctx)
	n := node("n1", ssd)
	n.ResourceVersion = "1"
	p := ssdPod("p", "rs", "n1")
	p.ResourceVersion = "1"
	s.setNode(logger, n, n.Name)
	s.setPod(logger, p, p.UID)

	churned := p.DeepCopy()
	churned.ResourceVersion = "2"
	churned.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", RestartCount: 3}}
	if got := s.setPod(logger, churned, p.UID); got.Len() != 0 {
		t.Errorf("a status-only pod update affects %v, want nothing", sets.List(got))
	}
	beat := n.DeepCopy()
	beat.ResourceVersion = "2"
	beat.Status.Conditions = append(beat.Status.Conditions, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse})
	if got := s.setNode(logger, beat, n.Name); got.Len() != 0 {
		t.Errorf("a node heartbeat affects %v, want nothing", sets.List(got))
	}
	if err := s.sync(logger); err != nil {
		t.Fatal(err)
	}
	compareSnapshots(t, "after churn", s.snapshot.Scheduler(), &Cluster{Nodes: []*v1.Node{beat}, Pods: []*v1.Pod{churned}})
	if s.pods[p.UID] != churned || s.nodes[n.Name] != beat {
		t.Error("the state does not hold the latest versions")
	}

	orphan := churned.DeepCopy()
	orphan.ResourceVersion = "3"
	orphan.OwnerReferences = nil
	if got := s.setPod(logger, orphan, p.UID); !got.Has(p.UID) {
		t.Errorf("an orphaned pod affects %v, want itself", sets.List(got))
	}
	if s.owners["uid-rs"].Has(p.UID) {
		t.Error("the orphaned pod still counts for its former owner")
	}
}

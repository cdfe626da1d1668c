package enforcer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	upstreamipa "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/test/equivalence"
)

// TestDifferentialAgainstUpstream judges every pod of randomized clusters
// (the equivalence suite's generator: odd terms, Gt/Lt, NotIn/DoesNotExist,
// namespaceSelectors, addedAffinity) on the node it is bound to, and
// compares with upstream v1.37.2's in-tree NodeAffinity and InterPodAffinity
// run through upstream's framework on a snapshot without that pod:
//   - node-affinity is violated exactly when upstream's NodeAffinity rejects
//     the node (PreFilter, its node narrowing, or Filter);
//   - upstream's InterPodAffinity reports the first failure in the order
//     affinity, anti-affinity, existing pods' anti-affinity, so its verdict
//     on the whole pod fixes ours for pod-affinity always, and for
//     pod-anti-affinity whenever affinity passed; when affinity failed,
//     upstream is asked again for the pod without its required affinity;
//   - a pod upstream cannot parse (PreFilter rejects) is one we refuse to
//     judge.
func TestDifferentialAgainstUpstream(t *testing.T) {
	scenarios := 300
	if testing.Short() {
		scenarios = 60
	}
	ctx := context.Background()
	judged, mismatches := 0, 0
	counts := map[string]int{}
	for i := range scenarios {
		sc := equivalence.Generate(0xe4f0, uint64(i))
		if sc.HasNamelessNode() || len(sc.Nodes) == 0 {
			continue
		}
		pods := scenarioPods(sc)
		nsf := namespaceFactory(ctx, sc)
		ours, err := differentialJudge(ctx, sc, nsf, pods)
		if err != nil {
			continue // args upstream's validation rejects too: no profile to judge with
		}
		for _, p := range pods {
			got, err := ours.Judge(ctx, p, AllRules, nil)
			want, werr := upstreamVerdict(ctx, sc, nsf, pods, p)
			if werr != nil {
				t.Fatalf("scenario %d pod %s: upstream: %v", i, p.Name, werr)
			}
			judged++
			gotNode, gotAff, gotAnti := hasRule(got, enforcerv1alpha1.NodeAffinity), hasRule(got, enforcerv1alpha1.PodAffinity), hasRule(got, enforcerv1alpha1.PodAntiAffinity)
			var msg string
			switch {
			case want.unparsable:
				counts["unparsable"]++
				if err == nil {
					msg = "upstream cannot parse the pod, we judged it"
				}
			case err != nil:
				msg = fmt.Sprintf("we refused to judge: %v", err)
			case gotNode != want.node:
				msg = fmt.Sprintf("node-affinity: ours %v, upstream %v", gotNode, want.node)
			case gotAff != want.affinity:
				msg = fmt.Sprintf("pod-affinity: ours %v, upstream %v", gotAff, want.affinity)
			case gotAnti != want.anti:
				msg = fmt.Sprintf("pod-anti-affinity: ours %v, upstream %v", gotAnti, want.anti)
			}
			for name, on := range map[string]bool{"node": want.node, "affinity": want.affinity, "anti": want.anti} {
				if on {
					counts[name]++
				}
			}
			if msg != "" {
				mismatches++
				if mismatches <= 10 {
					t.Errorf("scenario seed %#x index %d, pod %s/%s on %s: %s", sc.Seed, sc.Index, p.Namespace, p.Name, p.Spec.NodeName, msg)
				}
			}
		}
	}
	t.Logf("%d pods judged, %d mismatches; upstream rejections: %v", judged, mismatches, counts)
	if mismatches > 0 {
		t.Errorf("%d mismatches", mismatches)
	}
	// The generator must exercise every kind of violation, or the test
	// proves little.
	for _, k := range []string{"node", "affinity", "anti"} {
		if counts[k] == 0 {
			t.Errorf("no %s violation in %d scenarios: the comparison is vacuous there", k, scenarios)
		}
	}
}

// TestDifferentialWhateverEnforcementStates runs the enforcer's own
// judging (the pass's youngest-first judgeAll) over the same randomized
// clusters, and as many small dense ones (denseScenario), every pod opted in and given a random enforcement state and
// age, and compares each verdict with upstream's Filter of that pod on its
// node with the pod itself removed: node affinity and pod affinity always
// so, whatever the other pods' states; anti-affinity also without the
// younger pods that violate their own anti-affinity (as upstream judges
// them, youngest first) and are actually leaving (evicting, dry-run), the
// one exception docs/behavior.md §12 makes.
func TestDifferentialWhateverEnforcementStates(t *testing.T) {
	scenarios := 200
	if testing.Short() {
		scenarios = 40
	}
	states := []string{"", violationsv1alpha1.StateGrace, violationsv1alpha1.StateProtected, violationsv1alpha1.StateWaitingOwner, violationsv1alpha1.StatePaced, violationsv1alpha1.StateNoFit, violationsv1alpha1.StatePDBBlocked,
		violationsv1alpha1.StateEvicting, violationsv1alpha1.StateDryRun, violationsv1alpha1.StateError, violationsv1alpha1.StateUnjudged}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.FromContext(ctx)
	judged, mismatches, takenOut := 0, 0, 0
	counts := map[string]int{}
	for i := range scenarios {
		rng := rand.New(rand.NewPCG(0x5747e5, uint64(i)))
		sc := denseScenario(rng)
		if i%2 == 0 {
			sc = equivalence.Generate(0x5747e5, uint64(i))
		}
		if sc.HasNamelessNode() || len(sc.Nodes) == 0 {
			continue
		}
		pods := scenarioPods(sc)
		state := map[types.UID]string{}
		for _, p := range pods {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[Annotation] = "all"
			p.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(rng.IntN(4)) * time.Minute))
			state[p.UID] = states[rng.IntN(len(states))]
		}
		schedCfg := scenarioConfig(sc)
		s := newClusterState(ctx)
		for _, ns := range sc.Namespaces {
			s.setNamespace(ns, ns.Name)
		}
		for _, n := range sc.Nodes {
			s.setNode(logger, n, n.Name)
		}
		for _, p := range pods {
			s.setPod(logger, p, p.UID)
		}
		if err := s.sync(logger); err != nil {
			t.Fatal(err)
		}
		nsf := namespaceFactory(ctx, sc)
		j, err := newJudge(ctx, schedCfg, nsf, s)
		if err != nil {
			continue // args upstream's validation rejects too
		}
		r := newRig(t, nil)
		e := New(r.e.cfg, schedCfg, fake.NewClientset(), r.events, r.clock)
		for uid, st := range state {
			if st != "" {
				e.tracked[uid] = &tracked{since: map[enforcerv1alpha1.Rule]time.Time{}, state: st}
			}
		}
		p := &pass{Enforcer: e, s: s, seen: map[types.UID]bool{}, logger: logger}
		p.judgeAll(ctx, j, sets.KeySet(s.pods))

		order := slices.Clone(pods)
		slices.SortFunc(order, func(a, b *v1.Pod) int {
			if younger(a, b) {
				return -1
			}
			return 1
		})
		var gone []*v1.Pod // younger pods violating their anti-affinity, leaving
		for _, pod := range order {
			want, err := upstreamVerdict(ctx, sc, nsf, pods, pod)
			if err != nil {
				t.Fatalf("scenario %d pod %s: upstream: %v", i, pod.Name, err)
			}
			wantAnti := want.anti
			if len(gone) > 0 && !want.unparsable {
				takenOut++
				without, err := upstreamVerdict(ctx, sc, nsf, pods, pod, gone...)
				if err != nil {
					t.Fatalf("scenario %d pod %s: upstream: %v", i, pod.Name, err)
				}
				wantAnti = without.anti
			}
			if wantAnti && !want.unparsable && (state[pod.UID] == violationsv1alpha1.StateEvicting || state[pod.UID] == violationsv1alpha1.StateDryRun) {
				gone = append(gone, pod)
			}
			judged++
			jd := e.judged[pod.UID]
			var got []Verdict
			if jd != nil {
				got = jd.verdicts
			}
			var msg string
			switch {
			case want.unparsable:
				counts["unparsable"]++
				if jd == nil || jd.err == nil {
					msg = "upstream cannot parse the pod, we judged it"
				}
			case jd != nil && jd.err != nil:
				msg = fmt.Sprintf("we refused to judge: %v", jd.err)
			case hasRule(got, enforcerv1alpha1.NodeAffinity) != want.node:
				msg = fmt.Sprintf("node-affinity: ours %v, upstream %v", hasRule(got, enforcerv1alpha1.NodeAffinity), want.node)
			case hasRule(got, enforcerv1alpha1.PodAffinity) != want.affinity:
				msg = fmt.Sprintf("pod-affinity: ours %v, upstream %v", hasRule(got, enforcerv1alpha1.PodAffinity), want.affinity)
			case hasRule(got, enforcerv1alpha1.PodAntiAffinity) != wantAnti:
				msg = fmt.Sprintf("pod-anti-affinity: ours %v, upstream %v", hasRule(got, enforcerv1alpha1.PodAntiAffinity), wantAnti)
			}
			for name, on := range map[string]bool{"node": want.node, "affinity": want.affinity, "anti": wantAnti} {
				if on {
					counts[name]++
				}
			}
			if msg != "" {
				mismatches++
				if mismatches <= 10 {
					t.Errorf("scenario %d, pod %s/%s on %s (state %q): %s", i, pod.Namespace, pod.Name, pod.Spec.NodeName, state[pod.UID], msg)
				}
			}
		}
	}
	t.Logf("%d pods judged, %d with leaving anti-affinity violators taken out, %d mismatches; upstream rejections: %v", judged, takenOut, mismatches, counts)
	if mismatches > 0 {
		t.Errorf("%d mismatches", mismatches)
	}
	for _, k := range []string{"node", "affinity", "anti"} {
		if counts[k] == 0 {
			t.Errorf("no %s violation in %d scenarios: the comparison is vacuous there", k, scenarios)
		}
	}
	if takenOut == 0 {
		t.Error("no pod was judged with a leaving anti-affinity violator taken out: that rule went untested")
	}
}

// denseScenario is a small cluster whose pods' required pod affinity and
// anti-affinity point at one another's apps, by zone or hostname: pods
// that violate their own anti-affinity and are other pods' affinity
// targets or anti-affinity violators in turn, where enforcement states
// could change a verdict.
func denseScenario(rng *rand.Rand) *equivalence.Scenario {
	sc := &equivalence.Scenario{Namespaces: []*v1.Namespace{tu.MakeNamespace("ns", nil)}}
	nodes := 3 + rng.IntN(4)
	for n := range nodes {
		name := fmt.Sprintf("n%d", n)
		sc.Nodes = append(sc.Nodes, tu.MakeNode(name).Label(v1.LabelHostname, name).Label("zone", fmt.Sprintf("z%d", rng.IntN(2))).
			Capacity("8", "16Gi", 20).Ready().Obj())
	}
	apps := []string{"a", "b", "c"}
	keys := []string{"zone", v1.LabelHostname}
	term := func() v1.PodAffinityTerm {
		return tu.AffinityTerm(keys[rng.IntN(len(keys))], tu.Selector(map[string]string{"app": apps[rng.IntN(len(apps))]}))
	}
	pods := 6 + rng.IntN(8)
	for k := range pods {
		w := tu.MakePod("ns", fmt.Sprintf("p%d", k)).Label("app", apps[rng.IntN(len(apps))]).NodeName(sc.Nodes[rng.IntN(nodes)].Name)
		if rng.IntN(10) < 4 {
			w = w.RequiredPodAffinity(term())
		}
		if rng.IntN(10) < 5 {
			w = w.RequiredPodAntiAffinity(term())
		}
		if rng.IntN(10) == 0 {
			w = w.NodeSelector(map[string]string{"zone": "z0"})
		}
		sc.Pods = append(sc.Pods, w.Obj())
	}
	sc.Pod, sc.Pods = sc.Pods[len(sc.Pods)-1], sc.Pods[:len(sc.Pods)-1]
	return sc
}

// scenarioPods are the scenario's bound pods and its incoming pod bound to a
// node, each with a UID of its own and our schedulerName.
func scenarioPods(sc *equivalence.Scenario) []*v1.Pod {
	var out []*v1.Pod
	all := append(append([]*v1.Pod(nil), sc.Pods...), sc.Pod)
	for i, p := range all {
		p = p.DeepCopy()
		p.UID = types.UID(fmt.Sprintf("uid-%d", i))
		p.Spec.SchedulerName = tu.SchedulerName
		if !slices.ContainsFunc(sc.Nodes, func(n *v1.Node) bool { return n.Name == p.Spec.NodeName }) {
			// The incoming pod: bind it (its nodeName may name no node).
			p.Spec.NodeName = sc.Nodes[int(sc.Index)%len(sc.Nodes)].Name
		}
		out = append(out, p)
	}
	return out
}

func differentialJudge(ctx context.Context, sc *equivalence.Scenario, factory informers.SharedInformerFactory, pods []*v1.Pod) (*Judge, error) {
	return NewJudge(ctx, scenarioConfig(sc), factory, sc.Nodes, pods)
}

// scenarioConfig is one profile, ours, with the scenario's plugin args. Its
// Filter runs our two plugins, so the judge holds its pods to every rule.
func scenarioConfig(sc *equivalence.Scenario) *config.KubeSchedulerConfiguration {
	prof := config.KubeSchedulerProfile{SchedulerName: tu.SchedulerName, Plugins: &config.Plugins{
		Filter: config.PluginSet{Enabled: []config.Plugin{{Name: nodeaffinity.Name}, {Name: interpodaffinity.Name}}},
	}}
	if sc.NodeAffinityArgs != nil {
		prof.PluginConfig = append(prof.PluginConfig, config.PluginConfig{Name: nodeaffinity.Name, Args: tu.ArgsOf(sc.NodeAffinityArgs)})
	}
	if sc.InterPodAffinityArgs != nil {
		prof.PluginConfig = append(prof.PluginConfig, config.PluginConfig{Name: interpodaffinity.Name, Args: tu.ArgsOf(sc.InterPodAffinityArgs)})
	}
	return &config.KubeSchedulerConfiguration{Profiles: []config.KubeSchedulerProfile{prof}}
}

// namespaceFactory is an informer factory over sc's namespaces with its
// namespace informer started and synced, built once per scenario: the
// judges and frameworks built on it then find their caches synced at once.
// (client-go before 0.37 polls WaitForCacheSync every 100 ms; a fresh
// factory per pod made this test take many minutes on the older lines.)
func namespaceFactory(ctx context.Context, sc *equivalence.Scenario) informers.SharedInformerFactory {
	objs := make([]runtime.Object, 0, len(sc.Namespaces))
	for _, ns := range sc.Namespaces {
		objs = append(objs, ns)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	f.Core().V1().Namespaces().Informer()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return f
}

type upstreamResult struct {
	node, affinity, anti, unparsable bool
}

// upstreamVerdict runs upstream's plugins, each in a framework of its own,
// for p on its node over a snapshot of every other pod but those in gone.
func upstreamVerdict(ctx context.Context, sc *equivalence.Scenario, factory informers.SharedInformerFactory, pods []*v1.Pod, p *v1.Pod, gone ...*v1.Pod) (upstreamResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	others := make([]*v1.Pod, 0, len(pods))
	for _, o := range pods {
		if o.UID != p.UID && !slices.ContainsFunc(gone, func(g *v1.Pod) bool { return g.UID == o.UID }) {
			others = append(others, o)
		}
	}
	snapshot := cache.NewSnapshot(others, sc.Nodes)
	ni, err := snapshot.Get(p.Spec.NodeName)
	if err != nil {
		return upstreamResult{}, err
	}
	naArgs, err := setRow(nodeaffinity.Name).InternalArgs(sc.NodeAffinityArgs)
	if err != nil {
		return upstreamResult{}, err
	}
	ipaArgs, err := setRow(interpodaffinity.Name).InternalArgs(sc.InterPodAffinityArgs)
	if err != nil {
		return upstreamResult{}, err
	}
	na, err := upstreamFramework(ctx, names.NodeAffinity, naArgs, factory, snapshot)
	if err != nil {
		return upstreamResult{}, err
	}
	ipa, err := upstreamFramework(ctx, names.InterPodAffinity, ipaArgs, factory, snapshot)
	if err != nil {
		return upstreamResult{}, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	var res upstreamResult
	// NodeAffinity.
	state := schedframework.NewCycleState()
	preRes, st, _ := na.RunPreFilterPlugins(ctx, state, p)
	switch {
	case st.IsRejected():
		res.node = true
	case !st.IsSuccess():
		return res, st.AsError()
	case !preRes.AllNodes() && !preRes.NodeNames.Has(p.Spec.NodeName):
		res.node = true
	default:
		res.node = !na.RunFilterPlugins(ctx, state, p, ni).IsSuccess()
	}
	// InterPodAffinity on the whole pod.
	first, unparsable, err := ipaFirstFailure(ctx, ipa, p, ni)
	if err != nil || unparsable {
		res.unparsable = unparsable
		return res, err
	}
	switch first {
	case upstreamipa.ErrReasonAffinityRulesNotMatch:
		res.affinity = true
		// Anti-affinity was not reached: ask for it alone.
		q := p.DeepCopy()
		q.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		first, _, err = ipaFirstFailure(ctx, ipa, q, ni)
		if err != nil {
			return res, err
		}
		res.anti = first == upstreamipa.ErrReasonAntiAffinityRulesNotMatch
	case upstreamipa.ErrReasonAntiAffinityRulesNotMatch:
		res.anti = true
	}
	return res, nil
}

// ipaFirstFailure is upstream InterPodAffinity's first Filter reason for p
// on ni ("" when it passes), or unparsable when PreFilter rejects p.
func ipaFirstFailure(ctx context.Context, ipa schedframework.Framework, p *v1.Pod, ni fwk.NodeInfo) (string, bool, error) {
	state := schedframework.NewCycleState()
	_, st, _ := ipa.RunPreFilterPlugins(ctx, state, p)
	if st.IsRejected() {
		return "", true, nil
	}
	if !st.IsSuccess() {
		return "", false, st.AsError()
	}
	st = ipa.RunFilterPlugins(ctx, state, p, ni)
	if st.IsSuccess() {
		return "", false, nil
	}
	if !st.IsRejected() {
		return "", false, st.AsError()
	}
	return strings.Join(st.Reasons(), "; "), false, nil
}

// upstreamFramework is upstream's framework with only the in-tree plugin
// name (plus the queue-sort and bind plugins a framework requires).
func upstreamFramework(ctx context.Context, name string, args runtime.Object, factory informers.SharedInformerFactory, snapshot *cache.Snapshot) (schedframework.Framework, error) {
	prof := &config.KubeSchedulerProfile{
		SchedulerName: "upstream",
		Plugins: &config.Plugins{
			QueueSort: config.PluginSet{Enabled: []config.Plugin{{Name: names.PrioritySort}}},
			PreFilter: config.PluginSet{Enabled: []config.Plugin{{Name: name}}},
			Filter:    config.PluginSet{Enabled: []config.Plugin{{Name: name}}},
			Bind:      config.PluginSet{Enabled: []config.Plugin{{Name: names.DefaultBinder}}},
		},
		PluginConfig: []config.PluginConfig{{Name: name, Args: args}},
	}
	return frameworkruntime.NewFramework(ctx, intree.NewInTreeRegistry(), prof,
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot))
}

func hasRule(vs []Verdict, r enforcerv1alpha1.Rule) bool {
	for _, v := range vs {
		if v.Rule == r {
			return true
		}
	}
	return false
}

// setRow is pkg/plugins.Set()'s row of our plugin name.
func setRow(name string) plugins.Plugin {
	for _, p := range plugins.Set() {
		if p.Name == name {
			return p
		}
	}
	panic("no pkg/plugins.Set() row " + name)
}

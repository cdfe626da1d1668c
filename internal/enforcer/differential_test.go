package enforcer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	schedframework "k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	upstreamipa "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

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
		ours, err := differentialJudge(ctx, sc, pods)
		if err != nil {
			continue // args upstream's validation rejects too: no profile to judge with
		}
		for _, p := range pods {
			got, err := ours.Judge(ctx, p, AllRules, nil)
			want, werr := upstreamVerdict(ctx, sc, pods, p)
			if werr != nil {
				t.Fatalf("scenario %d pod %s: upstream: %v", i, p.Name, werr)
			}
			judged++
			gotNode, gotAff, gotAnti := hasRule(got, NodeAffinity), hasRule(got, PodAffinity), hasRule(got, PodAntiAffinity)
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

func differentialJudge(ctx context.Context, sc *equivalence.Scenario, pods []*v1.Pod) (*Judge, error) {
	prof := config.KubeSchedulerProfile{SchedulerName: tu.SchedulerName}
	if sc.NodeAffinityArgs != nil {
		prof.PluginConfig = append(prof.PluginConfig, config.PluginConfig{Name: nodeaffinity.Name, Args: tu.ArgsOf(sc.NodeAffinityArgs)})
	}
	if sc.InterPodAffinityArgs != nil {
		prof.PluginConfig = append(prof.PluginConfig, config.PluginConfig{Name: interpodaffinity.Name, Args: tu.ArgsOf(sc.InterPodAffinityArgs)})
	}
	cfg := &config.KubeSchedulerConfiguration{Profiles: []config.KubeSchedulerProfile{prof}}
	return NewJudge(ctx, cfg, namespaceFactory(sc), sc.Nodes, pods)
}

func namespaceFactory(sc *equivalence.Scenario) informers.SharedInformerFactory {
	objs := make([]runtime.Object, 0, len(sc.Namespaces))
	for _, ns := range sc.Namespaces {
		objs = append(objs, ns)
	}
	return informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
}

type upstreamResult struct {
	node, affinity, anti, unparsable bool
}

// upstreamVerdict runs upstream's plugins, each in a framework of its own,
// for p on its node over a snapshot of every other pod.
func upstreamVerdict(ctx context.Context, sc *equivalence.Scenario, pods []*v1.Pod, p *v1.Pod) (upstreamResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	others := make([]*v1.Pod, 0, len(pods))
	for _, o := range pods {
		if o.UID != p.UID {
			others = append(others, o)
		}
	}
	snapshot := cache.NewSnapshot(others, sc.Nodes)
	ni, err := snapshot.Get(p.Spec.NodeName)
	if err != nil {
		return upstreamResult{}, err
	}
	factory := namespaceFactory(sc)
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

func hasRule(vs []Verdict, r Rule) bool {
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

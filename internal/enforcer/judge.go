package enforcer

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
)

// ErrUnknownProfile is returned for a pod whose schedulerName is not a
// profile of the scheduler configuration: the enforcer cannot know which
// addedAffinity and which filters placed it, so it never judges it.
var ErrUnknownProfile = errors.New("the pod's schedulerName is not a profile of the scheduler configuration")

// Verdict is one rule a pod breaks on the node it runs on.
type Verdict struct {
	Rule enforcerv1alpha1.Rule
	// Reason is the plugin's Filter status message, e.g.
	// "node(s) didn't match Pod's node affinity/selector".
	Reason string
	// Terms says which term, label or pod decided, from the plugin's
	// FilterExplainer; empty when the plugin cannot say more than Reason.
	Terms []string
}

// Judge holds the snapshot the enforcer keeps up to date (clusterState)
// and, for each scheduler profile, our NodeAffinity and InterPodAffinity
// plugins built from that profile's args over that snapshot. It is built
// once and judges pass after pass: the plugins' cross-cycle caches see
// the same NodeInfos, with their generations, as the scheduler would.
type Judge struct {
	state      *clusterState
	snapshot   *cache.Snapshot
	profiles   map[string]*judgeProfile
	namespaces corelisters.NamespaceLister
}

type judgeProfile struct {
	nodeAffinity fwk.FilterPlugin
	podAffinity  fwk.FilterPlugin
	// enforced are the rules the profile's own Filter applies: a rule
	// whose filter the profile does not run is not judged, since its
	// scheduler would place the replacement in violation again.
	enforced RuleSet
}

// newJudge builds the plugins of every profile in cfg over s's snapshot.
func newJudge(ctx context.Context, cfg *config.KubeSchedulerConfiguration, factory informers.SharedInformerFactory, s *clusterState) (*Judge, error) {
	j := &Judge{state: s, snapshot: s.snapshot.Scheduler(), profiles: map[string]*judgeProfile{}, namespaces: factory.Core().V1().Namespaces().Lister()}
	metrics.Register() // the framework's instrumentation needs it (idempotent)
	for i := range cfg.Profiles {
		jp, err := newJudgeProfile(ctx, &cfg.Profiles[i], factory, s.snapshot.Lister())
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", cfg.Profiles[i].SchedulerName, err)
		}
		j.profiles[cfg.Profiles[i].SchedulerName] = jp
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	return j, nil
}

// newJudgeProfile builds a framework with only our NodeAffinity and
// InterPodAffinity (plus the queue-sort and bind plugins a framework
// requires), configured with the profile's own args, and keeps the two
// plugin instances so each can be asked on its own.
func newJudgeProfile(ctx context.Context, prof *config.KubeSchedulerProfile, factory informers.SharedInformerFactory, snapshot fwk.SharedLister) (*judgeProfile, error) {
	reg := intree.NewInTreeRegistry()
	if err := reg.Merge(plugins.Registry()); err != nil {
		return nil, fmt.Errorf("merging pkg/plugins.Registry(): %w", err)
	}
	instances := profile.Record(reg)
	judging := &config.KubeSchedulerProfile{
		SchedulerName: prof.SchedulerName,
		Plugins: &config.Plugins{
			QueueSort: config.PluginSet{Enabled: []config.Plugin{{Name: names.PrioritySort}}},
			PreFilter: config.PluginSet{Enabled: []config.Plugin{{Name: nodeaffinity.Name}, {Name: interpodaffinity.Name}}},
			Filter:    config.PluginSet{Enabled: []config.Plugin{{Name: nodeaffinity.Name}, {Name: interpodaffinity.Name}}},
			Bind:      config.PluginSet{Enabled: []config.Plugin{{Name: names.DefaultBinder}}},
		},
	}
	for _, pc := range prof.PluginConfig {
		if pc.Name == nodeaffinity.Name || pc.Name == interpodaffinity.Name {
			judging.PluginConfig = append(judging.PluginConfig, pc)
		}
	}
	_, err := frameworkruntime.NewFramework(ctx, reg, judging,
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(snapshot),
		frameworkruntime.WithMetricsRecorder(metrics.NewMetricsAsyncRecorder(1000, 1<<62, ctx.Done())),
	)
	if err != nil {
		return nil, err
	}
	jp := &judgeProfile{enforced: profileRules(prof)}
	var ok bool
	if jp.nodeAffinity, ok = instances.Get(nodeaffinity.Name).(fwk.FilterPlugin); !ok {
		return nil, fmt.Errorf("%s: no filter instance", nodeaffinity.Name)
	}
	if jp.podAffinity, ok = instances.Get(interpodaffinity.Name).(fwk.FilterPlugin); !ok {
		return nil, fmt.Errorf("%s: no filter instance", interpodaffinity.Name)
	}
	return jp, nil
}

// Judge returns the rules among rules that pod breaks on its own node,
// judged exactly as the scheduler would judge the pod's placement there if
// it were not running yet, against the cluster as it is: the pod itself
// removed from the snapshot (terminating pods are never in it), and, for
// its anti-affinity only, also every pod in leaving (see
// judgement.asIfGone, the one place that says who counts as gone). Only the
// pod's own terms count: another pod's anti-affinity that rejects this pod
// is that pod's violation, not this one's. A pod whose node is not in the
// snapshot is judged to break nothing (a deleted node's pods are the
// garbage collector's).
//
// The cost follows the pod's domains, not the cluster: PreFilter is given
// the nodes in the pod's node's domain of each of its terms' topology
// keys. Filter on the pod's node reads only the counts of those domains,
// which those nodes alone make up, so the verdict is the one PreFilter over
// every node gives; the one exception is the first-pod-of-a-series rule of
// pod affinity, which asks whether any pod anywhere matches: when it could
// have decided a pass, the pod is judged again over every node.
func (j *Judge) Judge(ctx context.Context, pod *v1.Pod, rules RuleSet, leaving []*v1.Pod) ([]Verdict, error) {
	jp, ok := j.profiles[schedulerName(pod)]
	if !ok {
		return nil, fmt.Errorf("pod %s/%s, schedulerName %q: %w", pod.Namespace, pod.Name, schedulerName(pod), ErrUnknownProfile)
	}
	rules &= jp.enforced
	nodeName := pod.Spec.NodeName
	ni, err := j.snapshot.Get(nodeName)
	if err != nil {
		return nil, nil
	}
	// The scheduler could not have placed a pod whose pod (anti)-affinity
	// terms do not parse (InterPodAffinity's PreFilter rejects it): there
	// is no verdict to give on those rules.
	var pi fwk.PodInfo
	if rules.Has(enforcerv1alpha1.PodAffinity) || rules.Has(enforcerv1alpha1.PodAntiAffinity) {
		if pi, err = framework.NewPodInfo(pod); err != nil {
			return nil, fmt.Errorf("pod %s/%s: its pod (anti-)affinity terms do not parse: %w", pod.Namespace, pod.Name, err)
		}
	}
	// The pod is taken out the way preemption takes out victims:
	// PreFilter runs on the shared snapshot, the plugin's own RemovePod
	// then uncounts it from its state, and Filter sees a copy of the
	// pod's node without it. Nothing is copied but that one node.
	self, err := j.without(ctx, ni, []*v1.Pod{pod})
	if err != nil {
		return nil, err
	}

	var out []Verdict
	if rules.Has(enforcerv1alpha1.NodeAffinity) {
		// NodeAffinity's PreFilter reads no node: the pod's node is list
		// enough.
		v, err := judgeNode(ctx, jp.nodeAffinity, onlyNodeTerms(pod), self.node, []fwk.NodeInfo{ni})
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	for _, r := range []enforcerv1alpha1.Rule{enforcerv1alpha1.PodAffinity, enforcerv1alpha1.PodAntiAffinity} {
		if !rules.Has(r) {
			continue
		}
		terms := pi.GetRequiredAntiAffinityTerms()
		if r == enforcerv1alpha1.PodAffinity {
			terms = pi.GetRequiredAffinityTerms()
		}
		if len(terms) == 0 {
			continue // nothing of its own to break (PreFilter would agree)
		}
		view := self
		if r == enforcerv1alpha1.PodAntiAffinity && len(leaving) > 0 {
			if view, err = j.without(ctx, ni, append([]*v1.Pod{pod}, leaving...)); err != nil {
				return nil, err
			}
		}
		keys := sets.New[string]()
		for _, t := range terms {
			keys.Insert(t.TopologyKey)
		}
		near := j.state.domainNodes(ni.Node(), keys)
		list := make([]fwk.NodeInfo, 0, near.Len())
		for name := range near {
			if n, err := j.snapshot.Get(name); err == nil {
				list = append(list, n)
			}
		}
		var nearRemoved []removal
		for _, rm := range view.removed {
			if near.Has(rm.node.Node().Name) {
				nearRemoved = append(nearRemoved, rm)
			}
		}
		one := onlyPodTerms(pod, r)
		v, err := judgePods(ctx, jp.podAffinity, r, one, view.node, list, nearRemoved)
		if err != nil {
			return nil, err
		}
		if r == enforcerv1alpha1.PodAffinity && len(v) == 0 && j.firstPodMayDecide(pod, terms, ni.Node(), view.removed) {
			all, err := j.snapshot.NodeInfos().List()
			if err != nil {
				return nil, err
			}
			if v, err = judgePods(ctx, jp.podAffinity, r, one, view.node, all, view.removed); err != nil {
				return nil, err
			}
		}
		out = append(out, v...)
	}
	return out, nil
}

// judgedView is the cluster a rule is judged against: the pods taken out
// (for the plugin's RemovePod) and a copy of the judged pod's node without
// those of them that ran there.
type judgedView struct {
	removed []removal
	node    *framework.NodeInfo
}

// without is the view of ni's node with pods taken out of the cluster; a
// pod the snapshot does not hold (terminating) is out already.
func (j *Judge) without(ctx context.Context, ni fwk.NodeInfo, pods []*v1.Pod) (judgedView, error) {
	view := judgedView{node: ni.Snapshot().(*framework.NodeInfo)}
	for _, p := range pods {
		pni, err := j.snapshot.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		pi := podInfoOf(pni, p)
		if pi == nil {
			continue
		}
		view.removed = append(view.removed, removal{pi, pni})
		if p.Spec.NodeName == ni.Node().Name {
			if err := view.node.RemovePod(klog.FromContext(ctx), p); err != nil {
				return view, err
			}
		}
	}
	return view, nil
}

// firstPodMayDecide reports whether a pass of pod's affinity terms on node
// may rest on the first-pod-of-a-series rule: the pod matches all its own
// terms, and for some term no pod left in the snapshot (removed ones
// aside) that matches all the terms runs in node's domain of that term's
// key. Otherwise each term has such a pod in its domain, the domain's
// counts (which the nearby nodes make up entirely) satisfied Filter, and
// no other node could change that.
func (j *Judge) firstPodMayDecide(pod *v1.Pod, terms []fwk.AffinityTerm, node *v1.Node, removed []removal) bool {
	matchesAll := func(p *v1.Pod) bool {
		var nsLabels labels.Set
		if ns, err := j.namespaces.Get(p.Namespace); err == nil {
			nsLabels = ns.Labels
		}
		return podaffinity.MatchesAll(terms, p, nsLabels)
	}
	if !matchesAll(pod) {
		return false
	}
	out := sets.New[types.UID]()
	for _, rm := range removed {
		out.Insert(rm.pod.GetPod().UID)
	}
	for _, t := range terms {
		v, ok := node.Labels[t.TopologyKey]
		if !ok {
			return true
		}
		found := false
		for name := range j.state.domains[t.TopologyKey][v] {
			ni, err := j.snapshot.Get(name)
			if err != nil {
				continue
			}
			for _, e := range ni.GetPods() {
				if p := e.GetPod(); !out.Has(p.UID) && matchesAll(p) {
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// asPreFilter is pl as the PreFilter plugin the judges run first: both
// judged plugins have one, and a Filter without its PreFilter's state would
// judge nothing.
func asPreFilter(pl fwk.FilterPlugin) (fwk.PreFilterPlugin, error) {
	pre, ok := pl.(fwk.PreFilterPlugin)
	if !ok {
		return nil, fmt.Errorf("%s is not a PreFilter plugin", pl.Name())
	}
	return pre, nil
}

// judgeNode runs NodeAffinity's PreFilter and Filter for pod on ni: the pod's
// nodeSelector, its required node affinity and the profile's addedAffinity.
func judgeNode(ctx context.Context, pl fwk.FilterPlugin, pod *v1.Pod, ni fwk.NodeInfo, all []fwk.NodeInfo) ([]Verdict, error) {
	pre, err := asPreFilter(pl)
	if err != nil {
		return nil, err
	}
	state := framework.NewCycleState()
	res, st := pre.PreFilter(ctx, state, pod, all)
	switch {
	case st.IsSkip():
		return nil, nil
	case st.IsRejected():
		return []Verdict{{Rule: enforcerv1alpha1.NodeAffinity, Reason: st.Message()}}, nil
	case !st.IsSuccess():
		return nil, fmt.Errorf("%s PreFilter: %w", pl.Name(), st.AsError())
	}
	if !res.AllNodes() && !res.NodeNames.Has(ni.Node().Name) {
		return []Verdict{{Rule: enforcerv1alpha1.NodeAffinity, Reason: fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s]", pl.Name())}}, nil
	}
	st = pl.Filter(ctx, state, pod, ni)
	if st.IsSuccess() {
		return nil, nil
	}
	if !st.IsRejected() {
		return nil, fmt.Errorf("%s Filter: %w", pl.Name(), st.AsError())
	}
	return []Verdict{{Rule: enforcerv1alpha1.NodeAffinity, Reason: st.Message(), Terms: causes(ctx, pl, state, pod, ni)}}, nil
}

// judgePods runs InterPodAffinity's PreFilter and Filter for pod (which holds
// only its required terms of kind r) on ni. Filter checks the pod's affinity,
// then its anti-affinity, then other pods' anti-affinity, and reports the
// first failure only; with one kind of the pod's own terms left, a failure of
// that kind is the pod's own violation and the other pods' verdict is not
// ours to act on.
func judgePods(ctx context.Context, pl fwk.FilterPlugin, r enforcerv1alpha1.Rule, pod *v1.Pod, ni fwk.NodeInfo, all []fwk.NodeInfo, removed []removal) ([]Verdict, error) {
	pre, err := asPreFilter(pl)
	if err != nil {
		return nil, err
	}
	state := framework.NewCycleState()
	_, st := pre.PreFilter(ctx, state, pod, all)
	switch {
	case st.IsSkip():
		return nil, nil
	case !st.IsSuccess():
		// A term that does not parse: the scheduler could not have placed
		// the pod with it, and there is no honest verdict to give.
		return nil, fmt.Errorf("%s PreFilter: %s", pl.Name(), st.Message())
	}
	for _, rm := range removed {
		if st := pre.PreFilterExtensions().RemovePod(ctx, state, pod, rm.pod, rm.node); !st.IsSuccess() {
			return nil, fmt.Errorf("%s RemovePod: %w", pl.Name(), st.AsError())
		}
	}
	st = pl.Filter(ctx, state, pod, ni)
	if st.IsSuccess() {
		return nil, nil
	}
	if !st.IsRejected() {
		return nil, fmt.Errorf("%s Filter: %w", pl.Name(), st.AsError())
	}
	want := interpodaffinity.ErrReasonAffinityRulesNotMatch
	if r == enforcerv1alpha1.PodAntiAffinity {
		want = interpodaffinity.ErrReasonAntiAffinityRulesNotMatch
	}
	for _, reason := range st.Reasons() {
		if reason == want {
			return []Verdict{{Rule: r, Reason: reason, Terms: causes(ctx, pl, state, pod, ni)}}, nil
		}
	}
	return nil, nil
}

// removal is a pod to take out of a judgement, as the snapshot holds it,
// and its node.
type removal struct {
	pod  fwk.PodInfo
	node fwk.NodeInfo
}

// podInfoOf is the snapshot's PodInfo of pod on ni (what PreFilter
// counted), or nil.
func podInfoOf(ni fwk.NodeInfo, pod *v1.Pod) fwk.PodInfo {
	for _, pi := range ni.GetPods() {
		if pi.GetPod().UID == pod.UID {
			return pi
		}
	}
	return nil
}

// causes asks the plugin which terms decided, when it can say.
func causes(ctx context.Context, pl fwk.FilterPlugin, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) []string {
	ex, ok := pl.(explanation.FilterExplainer)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range ex.ExplainFilter(ctx, state, pod, ni) {
		out = append(out, c.Message)
	}
	return out
}

// onlyNodeTerms is pod with its pod (anti-)affinity dropped, so
// InterPodAffinity's verdicts cannot mask or be confused with its node rule.
func onlyNodeTerms(pod *v1.Pod) *v1.Pod {
	if pod.Spec.Affinity == nil {
		return pod
	}
	out := pod.DeepCopy()
	out.Spec.Affinity.PodAffinity = nil
	out.Spec.Affinity.PodAntiAffinity = nil
	return out
}

// onlyPodTerms is pod with only its required pod terms of kind r kept.
// Node rules are judged separately; the pod's labels (what other pods' terms
// and its own first-pod rule match) are unchanged.
func onlyPodTerms(pod *v1.Pod, r enforcerv1alpha1.Rule) *v1.Pod {
	out := pod.DeepCopy()
	out.Spec.NodeSelector = nil
	a := out.Spec.Affinity
	if a == nil {
		return out
	}
	a.NodeAffinity = nil
	if r == enforcerv1alpha1.PodAffinity {
		a.PodAntiAffinity = nil
		if a.PodAffinity != nil {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	} else {
		a.PodAffinity = nil
		if a.PodAntiAffinity != nil {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	return out
}

// schedulerName is the pod's schedulerName as the apiserver defaults it.
func schedulerName(pod *v1.Pod) string {
	if pod.Spec.SchedulerName == "" {
		return v1.DefaultSchedulerName
	}
	return pod.Spec.SchedulerName
}

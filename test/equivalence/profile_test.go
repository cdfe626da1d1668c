package equivalence

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	intree "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Whole-profile comparison: upstream's default profile (derived from the
// v1 defaulting code) against our shipped profile
// (manifests/scheduler-config.yaml: the in-tree four replaced by ours in the
// same slots with the same weights), both run through the real framework runtime on the same
// snapshot, nominator and namespace informer. The cycle mirrors
// schedulePod: RunPreFilterPlugins, RunFilterPluginsWithNominatedPods per
// node, RunPreScorePlugins and RunScorePlugins on the feasible nodes (when
// there are at least two), plus a preemption dry-run
// (RemovePod/AddPod extensions on a cloned state, then RunFilterPlugins).

var defaultProfile = sync.OnceValue(func() *config.KubeSchedulerProfile {
	cfg, err := latest.Default()
	if err != nil {
		panic(err)
	}
	return &cfg.Profiles[0]
})

// profileRegistry is what a profile's framework is built from.
type profileRegistry struct {
	registry frameworkruntime.Registry
	// renames maps the in-tree name to the name used in this profile.
	renames map[string]string
	// viaPluginsRegistry lists the kinds taken from pkg/plugins.Registry()
	// (as shipped) rather than from the package factories directly.
	viaPluginsRegistry []string
}

// upstreamRegistry: in-tree registry, with the four bound to the scenario's
// gates (the in-tree registry itself reads the global gates).
func upstreamRegistry(sc *Scenario) profileRegistry {
	reg := intree.NewInTreeRegistry()
	fts := featuresFor(sc)
	for _, k := range kinds {
		reg[k.Name] = func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return k.Upstream(ctx, sc, h, fts)
		}
	}
	return profileRegistry{registry: reg, renames: map[string]string{}}
}

// oursRegistry: in-tree registry merged with pkg/plugins.Registry(). When the
// scenario's gates differ from the process-wide gates that Registry() reads,
// our factories are called directly with the scenario's gates instead.
func oursRegistry(sc *Scenario) profileRegistry {
	reg := intree.NewInTreeRegistry()
	shipped := plugins.Registry()
	globalGates := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	scenarioGates := featuresFor(sc)
	sameGates := globalGates == scenarioGates
	pr := profileRegistry{registry: reg, renames: map[string]string{}}
	for _, k := range kinds {
		pr.renames[k.Name] = k.OursName
		if f, ok := shipped[k.OursName]; ok && sameGates {
			reg[k.OursName] = f
			pr.viaPluginsRegistry = append(pr.viaPluginsRegistry, k.Name)
			continue
		}
		// Wrapped as Registry wraps ours, so that every whole-profile
		// comparison also proves the panic-containment wrapper invisible.
		reg[k.OursName] = func(ctx context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := k.OursNew(ctx, obj, h, scenarioGates)
			if err != nil {
				return nil, err
			}
			return plugins.Contain(p)
		}
	}
	return pr
}

// shippedProfile is the profile of manifests/scheduler-config.yaml, decoded
// (and defaulted) the way kube-scheduler loads --config.
var shippedProfile = sync.OnceValues(func() (*config.KubeSchedulerProfile, error) {
	data := manifests.SchedulerConfig()
	obj, _, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", "manifests/scheduler-config.yaml", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) != 1 {
		return nil, fmt.Errorf("%s: want one KubeSchedulerConfiguration profile, got %T", "manifests/scheduler-config.yaml", obj)
	}
	return &cfg.Profiles[0], nil
})

// buildProfile returns upstream's default profile, or (upstream=false) our
// shipped profile, with the scenario's NodeAffinity/InterPodAffinity args.
func buildProfile(sc *Scenario, pr profileRegistry, upstream bool) (*config.KubeSchedulerProfile, error) {
	var prof *config.KubeSchedulerProfile
	if upstream {
		prof = defaultProfile().DeepCopy()
	} else {
		shipped, err := shippedProfile()
		if err != nil {
			return nil, err
		}
		prof = shipped.DeepCopy()
	}
	// The plugins that take args: the scenario's (or their defaults)
	// replace the profile's pluginConfig entry for them.
	withArgs := map[string]*kind{}
	argNames := map[string]bool{}
	for _, k := range kinds {
		if k.row.Args == nil {
			continue
		}
		withArgs[k.Name] = k
		argNames[k.Name] = true
		if ourName, ok := pr.renames[k.Name]; ok {
			argNames[ourName] = true
		}
	}
	var pcs []config.PluginConfig
	for _, pc := range prof.PluginConfig {
		if !argNames[pc.Name] {
			pcs = append(pcs, pc)
		}
	}
	for _, k := range kinds {
		if withArgs[k.Name] == nil {
			continue
		}
		if ourName, ok := pr.renames[k.Name]; ok && !upstream {
			if a := oursArgs(k.Name, sc); a != nil {
				pcs = append(pcs, config.PluginConfig{Name: ourName, Args: a})
			}
			continue
		}
		args, err := k.row.InternalArgs(sc.versionedArgs(k.Name))
		if err != nil {
			return nil, err
		}
		pcs = append(pcs, config.PluginConfig{Name: k.Name, Args: args})
	}
	prof.PluginConfig = pcs
	return prof, nil
}

func newProfileFramework(ctx context.Context, sc *Scenario, pr profileRegistry, upstream bool, opts []frameworkruntime.Option) (framework.Framework, error) {
	prof, err := buildProfile(sc, pr, upstream)
	if err != nil {
		return nil, err
	}
	// DynamicResources registers a pod-informer indexer named after the
	// profile, so two frameworks sharing an informer factory need distinct
	// profile names (ours is "placement-scheduler").
	if !upstream && prof.SchedulerName == defaultProfile().SchedulerName {
		prof.SchedulerName = "placement-scheduler"
	}
	return frameworkruntime.NewFramework(ctx, pr.registry, prof, opts...)
}

// nameNormalizer maps our plugin names back to the in-tree ones in
// framework-built text ("plugin(s) [A B]", `running "X" filter plugin`, the
// status's plugin), re-sorting bracketed name lists.
type nameNormalizer struct {
	replacer *strings.Replacer
}

var bracketList = regexp.MustCompile(`\[([A-Za-z]+(?: [A-Za-z]+)*)\]`)

func newNameNormalizer(renames map[string]string) nameNormalizer {
	var pairs []string
	for up, ours := range renames {
		pairs = append(pairs, ours, up)
	}
	return nameNormalizer{replacer: strings.NewReplacer(pairs...)}
}

// invalidScore: the framework validates normalized scores for all nodes in
// parallel and reports whichever offender it meets first, so the number is
// not deterministic even upstream (plugin-level checks compare the scores).
var invalidScore = regexp.MustCompile(`returns an invalid score -?[0-9]+,`)

func (n nameNormalizer) norm(s string) string {
	s = n.replacer.Replace(s)
	s = invalidScore.ReplaceAllString(s, "returns an invalid score <some node's>,")
	return bracketList.ReplaceAllStringFunc(s, func(m string) string {
		names := strings.Fields(m[1 : len(m)-1])
		sort.Strings(names)
		return "[" + strings.Join(names, " ") + "]"
	})
}

func (n nameNormalizer) status(s *fwk.Status) string { return n.norm(statusString(s)) }

// profileCounters show how far whole-profile comparisons got.
var profileCounters struct {
	built, filtered, scored atomic.Uint64
}

// profileSide is one framework under comparison, the snapshot it serves and
// the normalizer for the names it embeds in text.
type profileSide struct {
	fw   framework.Framework
	norm nameNormalizer
	snap *cache.Snapshot
}

// newProfilePair builds upstream's default profile and our shipped profile
// for sc, on the listers/informers of their own handles' options. ok is false
// when there is nothing more to compare.
func newProfilePair(r *recorder, ctx context.Context, sc *Scenario, optsA, optsB []frameworkruntime.Option) (a, b profileSide, ok bool) {
	prA := upstreamRegistry(sc)
	prB := oursRegistry(sc)
	a.norm, b.norm = newNameNormalizer(prA.renames), newNameNormalizer(prB.renames)
	var errA, errB error
	outA := protect(func() string { a.fw, errA = newProfileFramework(ctx, sc, prA, true, optsA); return errString(errA) })
	outB := protect(func() string { b.fw, errB = newProfileFramework(ctx, sc, prB, false, optsB); return errString(errB) })
	if (errA == nil) != (errB == nil) || strings.HasPrefix(outA, "PANIC") || strings.HasPrefix(outB, "PANIC") {
		r.eq("NewFramework", "", a.norm.norm(outA), b.norm.norm(outB))
		return a, b, false
	}
	if errA != nil {
		return a, b, false // both reject the args; plugin-level checks compare the text
	}
	profileCounters.built.Add(1)
	return a, b, true
}

func compareProfile(e *env, sc *Scenario) []mismatch {
	r := &recorder{plugin: "Profile"}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	// A fresh (never started) informer factory per scenario, shared by both
	// frameworks: plugins add indexers at construction, which an informer
	// accepts only once per name.
	inf := newInf()
	nsStore := inf.Core().V1().Namespaces().Informer().GetIndexer()
	for _, ns := range sc.Namespaces {
		if err := nsStore.Add(ns); err != nil {
			panic(err)
		}
	}
	opts := []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(e.lister),
		frameworkruntime.WithInformerFactory(inf),
		frameworkruntime.WithSharedDRAManager(e.draManager),
		frameworkruntime.WithPodNominator(e.nominator),
		frameworkruntime.WithMetricsRecorder(e.recorder),
	}
	a, b, ok := newProfilePair(r, ctx, sc, opts, opts)
	if !ok {
		return r.out
	}
	a.snap, b.snap = e.snapshot, e.snapshot
	compareProfileCycle(r, ctx, sc, a, b)
	return r.out
}

// compareProfileCycle runs one cycle for sc.Pod through both frameworks the
// way schedulePod does, and returns the nodes both found feasible.
func compareProfileCycle(r *recorder, ctx context.Context, sc *Scenario, a, b profileSide) (feasible []string) {
	fwA, fwB, nA, nB := a.fw, b.fw, a.norm, b.norm
	pod := sc.Pod

	// Batching signatures (SignPod over all plugins, JSON-encoded).
	r.eq("SignPod", "",
		protect(func() string { return string(signPod(ctx, fwA, pod)) }),
		protect(func() string { return string(signPod(ctx, fwB, pod)) }))

	nodes, nodesB, ok := pairedNodes(r, a.snap, b.snap)
	if !ok {
		return
	}
	stA, stB := newCycleState(sc), newCycleState(sc)
	var resA, resB *fwk.PreFilterResult
	var sA, sB *fwk.Status
	var withNodesA, withNodesB []string
	if !r.eq("PreFilter", "",
		protect(func() string {
			var pw sets.Set[string]
			resA, sA, pw = fwA.RunPreFilterPlugins(ctx, stA, pod)
			withNodesA = sets.List(pw)
			return nA.status(sA) + " " + resultString(resA) + " " + nA.norm(fmt.Sprint(withNodesA))
		}),
		protect(func() string {
			var pw sets.Set[string]
			resB, sB, pw = fwB.RunPreFilterPlugins(ctx, stB, pod)
			withNodesB = sets.List(pw)
			return nB.status(sB) + " " + resultString(resB) + " " + nB.norm(fmt.Sprint(withNodesB))
		})) || !sA.IsSuccess() {
		return
	}

	profileCounters.filtered.Add(1)
	var feasibleA, feasibleB []fwk.NodeInfo
	for i, ni := range nodes {
		name := ni.Node().Name
		if !resA.AllNodes() && !resA.NodeNames.Has(name) {
			continue // absent-node status, built by the framework from the names compared above
		}
		sa := protect(func() string { return nA.status(fwA.RunFilterPluginsWithNominatedPods(ctx, stA, pod, ni)) })
		sb := protect(func() string { return nB.status(fwB.RunFilterPluginsWithNominatedPods(ctx, stB, pod, nodesB[i])) })
		r.eq("Filter", "node "+name, sa, sb)
		if sa == "Success" && sb == "Success" {
			feasibleA = append(feasibleA, ni)
			feasibleB = append(feasibleB, nodesB[i])
		}
	}
	for _, ni := range feasibleA {
		feasible = append(feasible, ni.Node().Name)
	}

	// Preemption dry-run: remove/add pods on a cloned state, then filter.
	dry := func(s profileSide, st fwk.CycleState) dryRunSide {
		return dryRunSide{snap: s.snap, state: st, render: s.norm.status,
			remove: func(st fwk.CycleState, v fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
				return s.fw.RunPreFilterExtensionRemovePod(ctx, st, pod, v, ni)
			},
			add: func(st fwk.CycleState, p fwk.PodInfo, ni fwk.NodeInfo) *fwk.Status {
				return s.fw.RunPreFilterExtensionAddPod(ctx, st, pod, p, ni)
			},
			filter: func(st fwk.CycleState, ni fwk.NodeInfo) *fwk.Status { return s.fw.RunFilterPlugins(ctx, st, pod, ni) },
		}
	}
	replayPreemption(r, klog.FromContext(ctx), sc.Preemption, dry(a, stA), dry(b, stB), "FilterAfterPreemption")

	// With exactly one feasible node the scheduler does not score.
	if len(feasibleA) < 2 {
		return
	}
	if !r.eq("PreScore", fmt.Sprintf("%d feasible", len(feasibleA)),
		protect(func() string { return nA.status(fwA.RunPreScorePlugins(ctx, stA, pod, feasibleA)) }),
		protect(func() string { return nB.status(fwB.RunPreScorePlugins(ctx, stB, pod, feasibleB)) })) {
		return
	}
	var scA, scB []fwk.NodePluginScores
	var ssA, ssB *fwk.Status
	if !r.eq("Score", "",
		protect(func() string { scA, ssA = fwA.RunScorePlugins(ctx, stA, pod, feasibleA); return nA.status(ssA) }),
		protect(func() string { scB, ssB = fwB.RunScorePlugins(ctx, stB, pod, feasibleB); return nB.status(ssB) })) || !ssA.IsSuccess() {
		return
	}
	profileCounters.scored.Add(1)
	for i := range scA {
		r.eq("TotalScore", "node "+scA[i].Name,
			fmt.Sprintf("%d %s", scA[i].TotalScore, pluginScores(nA, scA[i].Scores)),
			fmt.Sprintf("%d %s", scB[i].TotalScore, pluginScores(nB, scB[i].Scores)))
	}
	return feasible
}

func pluginScores(n nameNormalizer, ps []fwk.PluginScore) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s=%d", n.norm(p.Name), p.Score)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

func newInf() informers.SharedInformerFactory { return informers.NewSharedInformerFactory(nil, 0) }

// TestShippedWiring checks what the whole-profile comparison relies on: each
// of ours is in pkg/plugins.Registry() and in the shipped profile, in
// the in-tree plugin's slot with its weight.
func TestShippedWiring(t *testing.T) {
	shipped, err := shippedProfile()
	if err != nil {
		t.Fatal(err)
	}
	reg := plugins.Registry()
	def := defaultProfile()
	if len(shipped.Plugins.MultiPoint.Enabled) != len(def.Plugins.MultiPoint.Enabled) {
		t.Fatalf("shipped profile has %d multiPoint plugins, upstream default %d",
			len(shipped.Plugins.MultiPoint.Enabled), len(def.Plugins.MultiPoint.Enabled))
	}
	for _, k := range kinds {
		if _, ok := reg[k.OursName]; !ok {
			t.Errorf("%s: %s missing from pkg/plugins.Registry()", k.Name, k.OursName)
		}
		for i, p := range def.Plugins.MultiPoint.Enabled {
			if p.Name != k.Name {
				continue
			}
			got := shipped.Plugins.MultiPoint.Enabled[i]
			if got.Name != k.OursName || got.Weight != p.Weight {
				t.Errorf("shipped multiPoint[%d] = %s (weight %d), want %s (weight %d) in %s's slot",
					i, got.Name, got.Weight, k.OursName, p.Weight, k.Name)
			}
		}
	}
}

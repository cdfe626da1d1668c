package interpodaffinity

// TEMPORARY: local randomized cross-check against upstream; delete before handing over.

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	plugintesting "k8s.io/kubernetes/pkg/scheduler/framework/plugins/testing"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/utils/ptr"
)

type gen struct{ r *rand.Rand }

func (g gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }
func (g gen) p(f float64) bool       { return g.r.Float64() < f }

func (g gen) selector(nsSel bool) *metav1.LabelSelector {
	x := g.r.Float64()
	switch {
	case x < 0.1:
		return nil
	case x < 0.2:
		return &metav1.LabelSelector{}
	}
	s := &metav1.LabelSelector{}
	keys := []string{"app", "tier"}
	vals := []string{"a", "b", "c", "x", "y"}
	if nsSel {
		keys = []string{"env", "team"}
		vals = []string{"prod", "dev", "t1"}
	}
	if g.p(0.6) {
		s.MatchLabels = map[string]string{g.pick(keys...): g.pick(vals...)}
	}
	n := g.r.Intn(2)
	for i := 0; i < n; i++ {
		op := metav1.LabelSelectorOperator(g.pick("In", "NotIn", "Exists", "DoesNotExist"))
		if g.p(0.02) {
			op = "Bogus"
		}
		req := metav1.LabelSelectorRequirement{Key: g.pick(keys...), Operator: op}
		if op == "In" || op == "NotIn" {
			req.Values = []string{g.pick(vals...), g.pick(vals...)}
		}
		s.MatchExpressions = append(s.MatchExpressions, req)
	}
	return s
}

func (g gen) term() v1.PodAffinityTerm {
	t := v1.PodAffinityTerm{
		TopologyKey:   g.pick(zone, zone, rack, host, host, "absent"),
		LabelSelector: g.selector(false),
	}
	if g.p(0.3) {
		t.Namespaces = []string{g.pick("ns1", "ns2", "ns3", "ghost")}
	}
	if g.p(0.3) {
		t.NamespaceSelector = g.selector(true)
	}
	return t
}

func (g gen) terms(max int) []v1.PodAffinityTerm {
	n := g.r.Intn(max + 1)
	var out []v1.PodAffinityTerm
	for i := 0; i < n; i++ {
		out = append(out, g.term())
	}
	return out
}

func (g gen) weighted(max int) []v1.WeightedPodAffinityTerm {
	var out []v1.WeightedPodAffinityTerm
	for _, t := range g.terms(max) {
		out = append(out, v1.WeightedPodAffinityTerm{Weight: int32(1 + g.r.Intn(100)), PodAffinityTerm: t})
	}
	return out
}

func (g gen) pod(name, node string, termProb float64) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: g.pick("ns1", "ns2", "ns3", "ghost"), UID: types.UID("uid-" + name),
		Labels: map[string]string{},
	}}
	if g.p(0.8) {
		p.Labels["app"] = g.pick("a", "b", "c")
	}
	if g.p(0.5) {
		p.Labels["tier"] = g.pick("x", "y")
	}
	p.Spec.NodeName = node
	if g.p(termProb) {
		a := &v1.Affinity{}
		if g.p(0.6) {
			a.PodAffinity = &v1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  g.terms(2),
				PreferredDuringSchedulingIgnoredDuringExecution: g.weighted(2),
			}
		}
		if g.p(0.6) {
			a.PodAntiAffinity = &v1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  g.terms(2),
				PreferredDuringSchedulingIgnoredDuringExecution: g.weighted(2),
			}
		}
		p.Spec.Affinity = a
	}
	return p
}



func (g gen) node(i int) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i), Labels: map[string]string{}}}
	if g.p(0.1) {
		n.Labels = nil
		return n
	}
	if g.p(0.85) {
		n.Labels[zone] = g.pick("z1", "z2", "z3")
	}
	if g.p(0.8) {
		n.Labels[rack] = g.pick("r1", "r2", "r3", "r4")
	}
	if g.p(0.85) {
		if g.p(0.2) {
			n.Labels[host] = "dup"
		} else {
			n.Labels[host] = n.Name
		}
	}
	if g.p(0.3) {
		n.Labels["other"] = "o"
	}
	return n
}

func st(s *fwk.Status) string {
	if s.IsSuccess() {
		return "ok"
	}
	return fmt.Sprintf("%v: %s", s.Code(), s.Message())
}

func TestTmpDifferential(t *testing.T) {
	for _, gate := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate=%v", gate), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.InterPodAffinityHostnameFastPath, gate)
			runDiff(t, gate)
		})
	}
}

func runDiff(t *testing.T, gate bool) {
	schedmetrics.Register()
	fts := feature.Features{EnableInterPodAffinityHostnameFastPath: gate}
	nss := []runtime.Object{
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{"env": "prod"}}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns2", Labels: map[string]string{"env": "dev", "team": "t1"}}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns3"}},
	}
	iters := 600
	var mism int
	for it := 0; it < iters; it++ {
		g := gen{rand.New(rand.NewSource(int64(it)))}
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		nNodes := 1 + g.r.Intn(7)
		var nodes []*v1.Node
		for i := 0; i < nNodes; i++ {
			nodes = append(nodes, g.node(i))
		}
		var pods []*v1.Pod
		for i := 0; i < g.r.Intn(12); i++ {
			pods = append(pods, g.pod(fmt.Sprintf("e%d", i), nodes[g.r.Intn(nNodes)].Name, 0.5))
		}
		in := g.pod("incoming", "", 0.85)
		in.Spec.NodeName = ""
		w := int32(g.r.Intn(4))
		ignore := g.p(0.3)
		snap := cache.NewSnapshot(pods, nodes)

		upPl := plugintesting.SetupPluginWithInformers(ctx, t, frameworkruntime.FactoryAdapter(fts, upstream.New),
			&config.InterPodAffinityArgs{HardPodAffinityWeight: w, IgnorePreferredTermsOfExistingPods: ignore}, snap, nss)
		ourPl := plugintesting.SetupPluginWithInformers(ctx, t, func(ctx context.Context, o runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			return New(ctx, o, h, fts)
		}, ArgsOfTmp(w, ignore), snap, nss)
		up := upPl.(*upstream.InterPodAffinity)
		our := ourPl.(*InterPodAffinity)
		all, _ := snap.NodeInfos().List()

		report := func(what string, a, b interface{}) {
			if fmt.Sprint(a) != fmt.Sprint(b) {
				mism++
				if mism < 15 {
					t.Errorf("iter %d %s: upstream %v, ours %v", it, what, a, b)
				}
			}
		}

		csU, csO := framework.NewCycleState(), framework.NewCycleState()
		_, sU := up.PreFilter(ctx, csU, in, all)
		_, sO := our.PreFilter(ctx, csO, in, all)
		report("PreFilter", st(sU), st(sO))
		if sU.IsSuccess() && sO.IsSuccess() {
			filterAll := func(step string) {
				for _, ni := range all {
					report(step+" Filter "+ni.Node().Name, st(up.Filter(ctx, csU, in, ni)), st(our.Filter(ctx, csO, in, ni)))
				}
			}
			filterAll("initial")
			// preemption-like: clone, remove some pods, add some
			cU, cO := csU.Clone(), csO.Clone()
			for k := 0; k < 3; k++ {
				ni := all[g.r.Intn(len(all))]
				if len(ni.GetPods()) > 0 && g.p(0.5) {
					pi := ni.GetPods()[g.r.Intn(len(ni.GetPods()))]
					report("RemovePod", st(up.RemovePod(ctx, cU, in, pi, ni)), st(our.RemovePod(ctx, cO, in, pi, ni)))
				} else {
					p := g.pod(fmt.Sprintf("nom%d", k), ni.Node().Name, 0.6)
					pi, _ := framework.NewPodInfo(p)
					report("AddPod", st(up.AddPod(ctx, cU, in, pi, ni)), st(our.AddPod(ctx, cO, in, pi, ni)))
				}
				for _, ni := range all {
					report(fmt.Sprintf("after-step%d Filter %s", k, ni.Node().Name), st(up.Filter(ctx, cU, in, ni)), st(our.Filter(ctx, cO, in, ni)))
				}
			}
			filterAll("orig-after-clone-updates")
		}

		// scoring over a random feasible subset
		var feasible []fwk.NodeInfo
		for _, ni := range all {
			if g.p(0.7) {
				feasible = append(feasible, ni)
			}
		}
		psU, psO := framework.NewCycleState(), framework.NewCycleState()
		pU := up.PreScore(ctx, psU, in, feasible)
		pO := our.PreScore(ctx, psO, in, feasible)
		report("PreScore", st(pU), st(pO))
		if pU.IsSuccess() && pO.IsSuccess() {
			var lU, lO fwk.NodeScoreList
			for _, ni := range feasible {
				a, s1 := up.Score(ctx, psU, in, ni)
				b, s2 := our.Score(ctx, psO, in, ni)
				report("Score "+ni.Node().Name, fmt.Sprint(a, st(s1)), fmt.Sprint(b, st(s2)))
				lU = append(lU, fwk.NodeScore{Name: ni.Node().Name, Score: a})
				lO = append(lO, fwk.NodeScore{Name: ni.Node().Name, Score: b})
			}
			report("Normalize", st(up.NormalizeScore(ctx, psU, in, lU)), st(our.NormalizeScore(ctx, psO, in, lO)))
			report("Normalized", lU, lO)
		}

		// Sign
		fU, sgU := up.SignPod(ctx, in)
		fO, sgO := our.SignPod(ctx, in)
		report("SignPod", fmt.Sprint(fU, st(sgU)), fmt.Sprint(fO, st(sgO)))

		// hints
		logger, _ := ktesting.NewTestContext(t)
		evU, _ := up.EventsToRegister(ctx)
		evO, _ := our.EventsToRegister(ctx)
		for k := 0; k < 6; k++ {
			a := g.pod("h1", g.pick("", "n0"), 0.5)
			b := a.DeepCopy()
			if g.p(0.5) {
				b.Labels = map[string]string{"app": g.pick("a", "b", "c")}
			}
			var old, nw interface{}
			switch g.r.Intn(3) {
			case 0:
				nw = b
			case 1:
				old, nw = a, b
			case 2:
				old = a
			}
			for i := range evU {
				hU, eU := evU[i].QueueingHintFn(logger, in, old, nw)
				hO, eO := evO[i].QueueingHintFn(logger, in, old, nw)
				report(fmt.Sprintf("hint%d pod", i), fmt.Sprint(hU, eU), fmt.Sprint(hO, eO))
			}
			n1 := g.node(1)
			n2 := n1.DeepCopy()
			if g.p(0.5) {
				n2 = g.node(1)
			}
			var on interface{}
			if g.p(0.5) {
				on = n1
			}
			hU, eU := evU[2].QueueingHintFn(logger, in, on, n2)
			hO, eO := evO[2].QueueingHintFn(logger, in, on, n2)
			report("hint node", fmt.Sprint(hU, eU), fmt.Sprint(hO, eO))
		}
		cancel()
	}
	t.Logf("mismatches: %d", mism)
}

func ArgsOfTmp(w int32, ignore bool) runtime.Object {
	raw := fmt.Sprintf(`{"hardPodAffinityWeight": %d, "ignorePreferredTermsOfExistingPods": %v}`, w, ignore)
	_ = ptr.To(1)
	return &runtime.Unknown{Raw: []byte(raw), ContentType: runtime.ContentTypeJSON}
}

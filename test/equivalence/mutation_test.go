package equivalence

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
)

// Mutation checks: wrap OUR plugin in a
// test-only wrapper that plants one deliberate behavioural bug, and require
// the comparator to flag it within a bounded number of scenarios, with a
// shrunk reproducer that replays from its YAML.

// mutant wraps a plugin and perturbs its inputs or outputs. nil hooks pass
// through. It implements every interface the harness uses; the harness asks
// capabilities() of the wrapped plugin, so the wrapper adds none.
type mutant struct {
	inner fwk.Plugin
	h     fwk.Handle
	// pod alters the incoming pod for PreFilter/Filter/PreScore/Score.
	pod          func(*v1.Pod) *v1.Pod
	preFilter    func(pod *v1.Pod, r *fwk.PreFilterResult, s *fwk.Status) (*fwk.PreFilterResult, *fwk.Status)
	filter       func(m *mutant, pod *v1.Pod, ni fwk.NodeInfo, s *fwk.Status) *fwk.Status
	normalize    func(raw, normalized fwk.NodeScoreList)
	addPodIsNoop bool
}

func (m *mutant) Unwrap() fwk.Plugin { return m.inner }
func (m *mutant) Name() string       { return m.inner.Name() }

func (m *mutant) in(pod *v1.Pod) *v1.Pod {
	if m.pod == nil {
		return pod
	}
	return m.pod(pod.DeepCopy())
}

func (m *mutant) PreFilter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	r, s := m.inner.(fwk.PreFilterPlugin).PreFilter(ctx, st, m.in(pod), nodes)
	if m.preFilter != nil {
		return m.preFilter(pod, r, s)
	}
	return r, s
}

func (m *mutant) PreFilterExtensions() fwk.PreFilterExtensions {
	ext := m.inner.(fwk.PreFilterPlugin).PreFilterExtensions()
	if ext == nil || !m.addPodIsNoop {
		return ext
	}
	return noopAdd{ext}
}

// noopAdd forgets nominated/re-added pods.
type noopAdd struct{ fwk.PreFilterExtensions }

func (noopAdd) AddPod(context.Context, fwk.CycleState, *v1.Pod, fwk.PodInfo, fwk.NodeInfo) *fwk.Status {
	return nil
}

func (m *mutant) Filter(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s := m.inner.(fwk.FilterPlugin).Filter(ctx, st, m.in(pod), ni)
	if m.filter != nil {
		return m.filter(m, pod, ni, s)
	}
	return s
}

func (m *mutant) PreScore(ctx context.Context, st fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	return m.inner.(fwk.PreScorePlugin).PreScore(ctx, st, m.in(pod), nodes)
}

func (m *mutant) Score(ctx context.Context, st fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return m.inner.(fwk.ScorePlugin).Score(ctx, st, m.in(pod), ni)
}

func (m *mutant) ScoreExtensions() fwk.ScoreExtensions {
	if m.inner.(fwk.ScorePlugin).ScoreExtensions() == nil {
		return nil
	}
	return m
}

func (m *mutant) NormalizeScore(ctx context.Context, st fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	raw := append(fwk.NodeScoreList(nil), scores...)
	s := m.inner.(fwk.ScorePlugin).ScoreExtensions().NormalizeScore(ctx, st, m.in(pod), scores)
	if m.normalize != nil {
		m.normalize(raw, scores)
	}
	return s
}

func (m *mutant) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return m.inner.(fwk.EnqueueExtensions).EventsToRegister(ctx)
}

func (m *mutant) SignPod(ctx context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return m.inner.(fwk.SignPlugin).SignPod(ctx, pod)
}

// mutate wraps base's plugins with the hooks set by configure.
func mutate(base factory, configure func(*mutant)) factory {
	return func(ctx context.Context, sc *Scenario, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
		p, err := base(ctx, sc, h, fts)
		if err != nil {
			return nil, err
		}
		m := &mutant{inner: p, h: h}
		configure(m)
		return m, nil
	}
}

var mutants = []struct {
	name   string
	kind   string
	plant  func(*mutant)
	within uint64 // scenarios allowed before the bug must be caught
}{
	{
		// Gt/Lt become non-strict: Gt v -> Gt v-1 (node >= v), Lt v -> Lt v+1.
		name: "NodeAffinity Gt/Lt not strict", kind: "NodeAffinity", within: 3000,
		plant: func(m *mutant) {
			m.pod = func(p *v1.Pod) *v1.Pod {
				na := p.Spec.Affinity
				if na == nil || na.NodeAffinity == nil {
					return p
				}
				shift := func(t *v1.NodeSelectorTerm) {
					for i := range t.MatchExpressions {
						e := &t.MatchExpressions[i]
						for j := range e.Values {
							switch e.Operator {
							case v1.NodeSelectorOpGt:
								e.Values[j] = shiftInt(e.Values[j], -1)
							case v1.NodeSelectorOpLt:
								e.Values[j] = shiftInt(e.Values[j], 1)
							}
						}
					}
				}
				if req := na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
					for i := range req.NodeSelectorTerms {
						shift(&req.NodeSelectorTerms[i])
					}
				}
				for i := range na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					shift(&na.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].Preference)
				}
				return p
			}
		},
	},
	{
		// nodeSelector: {} treated like nil, so PreFilter Skips.
		name: "NodeAffinity empty nodeSelector skips", kind: "NodeAffinity", within: 3000,
		plant: func(m *mutant) {
			m.preFilter = func(pod *v1.Pod, r *fwk.PreFilterResult, s *fwk.Status) (*fwk.PreFilterResult, *fwk.Status) {
				a := pod.Spec.Affinity
				noRequired := a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil
				if noRequired && pod.Spec.NodeSelector != nil && len(pod.Spec.NodeSelector) == 0 {
					return nil, fwk.NewStatus(fwk.Skip)
				}
				return r, s
			}
		},
	},
	{
		// Gt toleration becomes >=: Gt v -> Gt v-1.
		name: "TaintToleration Gt not strict", kind: "TaintToleration", within: 5000,
		plant: func(m *mutant) {
			m.pod = func(p *v1.Pod) *v1.Pod {
				for i := range p.Spec.Tolerations {
					if p.Spec.Tolerations[i].Operator == v1.TolerationOpGt {
						p.Spec.Tolerations[i].Value = shiftInt(p.Spec.Tolerations[i].Value, -1)
					}
				}
				return p
			}
		},
	},
	{
		// Reverse normalization with max == 0 leaves 0 instead of 100.
		name: "TaintToleration reverse normalization of all-zero", kind: "TaintToleration", within: 2000,
		plant: func(m *mutant) {
			m.normalize = func(raw, out fwk.NodeScoreList) {
				for _, s := range raw {
					if s.Score != 0 {
						return
					}
				}
				for i := range out {
					out[i].Score = 0
				}
			}
		},
	},
	{
		// The "first pod of a series" exception is dropped: a pod whose
		// required affinity no existing pod satisfies is rejected everywhere.
		name: "InterPodAffinity first-pod rule broken", kind: "InterPodAffinity", within: 5000,
		plant: func(m *mutant) {
			m.filter = func(m *mutant, pod *v1.Pod, ni fwk.NodeInfo, s *fwk.Status) *fwk.Status {
				if !s.IsSuccess() {
					return s
				}
				pi, err := framework.NewPodInfo(pod)
				if err != nil || len(pi.GetRequiredAffinityTerms()) == 0 {
					return s
				}
				all, _ := m.h.SnapshotSharedLister().NodeInfos().List()
				for _, n := range all {
					for _, e := range n.GetPods() {
						matchesAll := true
						for _, t := range pi.GetRequiredAffinityTerms() {
							if !t.Matches(e.GetPod(), nil) {
								matchesAll = false
							}
						}
						if matchesAll {
							return s
						}
					}
				}
				return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
			}
		},
	},
	{
		// Nominated / re-added pods are ignored.
		name: "InterPodAffinity AddPod is a no-op", kind: "InterPodAffinity", within: 5000,
		plant: func(m *mutant) { m.addPodIsNoop = true },
	},
	{
		// Equal raw scores normalize to 100 instead of 0.
		name: "InterPodAffinity equal scores normalize to 100", kind: "InterPodAffinity", within: 5000,
		plant: func(m *mutant) {
			m.normalize = func(raw, out fwk.NodeScoreList) {
				for _, s := range raw[1:] {
					if s.Score != raw[0].Score {
						return
					}
				}
				for i := range out {
					out[i].Score = 100
				}
			}
		},
	},
	{
		// spec.nodeName no longer narrows PreFilter.
		name: "NodeName PreFilter ignores nodeName", kind: "NodeName", within: 2000,
		plant: func(m *mutant) {
			m.preFilter = func(*v1.Pod, *fwk.PreFilterResult, *fwk.Status) (*fwk.PreFilterResult, *fwk.Status) {
				return nil, nil
			}
		},
	},
}

func TestMutantsAreCaught(t *testing.T) {
	seed := envUint("EQUIVALENCE_SEED", defaultSeed)
	for _, mc := range mutants {
		t.Run(strings.ReplaceAll(mc.name, " ", "_"), func(t *testing.T) {
			if why := lineLacksMutant(mc.name); why != "" {
				t.Skip(why)
			}
			k := kindByName(mc.kind)
			base := factory(k.Ours)
			cmp := pluginComparator(func(kk *kind) factory {
				if kk != k {
					return nil
				}
				return mutate(base, mc.plant)
			})
			res := runBatch(t, seed, mc.within, nil, cmp, 1)
			if len(res.findings) == 0 {
				t.Fatalf("planted bug %q (wrapping ours) not caught within %d scenarios", mc.name, mc.within)
			}
			f := res.findings[0]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e, err := newEnv(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m := f.mms[0]
			rep := formatFinding(e, f.sc, m, cmp)
			for _, want := range []string{"seed=", "upstream:", "ours:", "reproducer", "pod:"} {
				if !strings.Contains(rep, want) {
					t.Errorf("report lacks %q:\n%s", want, rep)
				}
			}
			// The printed reproducer must replay the mismatch on its own.
			y := rep[strings.Index(rep, "\n---\n")+5:]
			y = y[:strings.LastIndex(y, "---")]
			sc, err := DecodeScenario([]byte(y))
			if err != nil {
				t.Fatalf("reproducer does not parse: %v\n%s", err, y)
			}
			replayed := false
			for _, mm := range run(e, sc, cmp) {
				replayed = replayed || mm.key() == m.key()
			}
			if !replayed {
				t.Errorf("reproducer does not replay %s:\n%s", m.key(), rep)
			}
			t.Logf("caught after %d scenarios (scenario index %d): %s\n%s",
				res.ran, f.sc.Index, m.key(), firstLines(rep, 14))
		})
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

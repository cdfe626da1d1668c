// Package equivalence is the differential suite that runs upstream
// kube-scheduler's in-tree NodeAffinity, InterPodAffinity, TaintToleration and
// NodeName plugins next to placement-scheduler's re-implementations on the same
// randomly generated clusters and compares every observable result.
//
// This file holds the scenario model and its seeded generator; the comparison
// harness lives in the _test.go files. The generator deliberately produces
// objects the apiserver would reject (bad operators, negative Gt values, empty
// keys...): the scheduler must still behave identically on whatever reaches
// its cache, and those corners are where re-implementations diverge.
package equivalence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Scenario is one self-contained comparison input. Everything the harness
// does is derived from it (no further randomness), so a Scenario can be
// shrunk, serialised to YAML and replayed.
type Scenario struct {
	Setup `json:",inline"`

	// Namespaces known to the namespace lister. Pods may live in namespaces
	// missing from this list.
	Namespaces []*v1.Namespace `json:"namespaces,omitempty"`
	Nodes      []*v1.Node      `json:"nodes,omitempty"`
	// Pods are the existing pods, each bound to one of Nodes.
	Pods []*v1.Pod `json:"pods,omitempty"`
	// Pod is the pod being scheduled.
	Pod *v1.Pod `json:"pod"`

	// Nominated pods (status.nominatedNodeName set) are served by the pod
	// nominator in whole-profile runs.
	Nominated []*v1.Pod `json:"nominated,omitempty"`
	// ScoreNodes are the nodes handed to PreScore/Score/NormalizeScore
	// (intersected with the nodes that passed Filter).
	ScoreNodes []string `json:"scoreNodes,omitempty"`
	// Preemption simulates SelectVictimsOnNode and nominated-pod filtering:
	// per op, clone the cycle state, remove/add pods on one node, filter it.
	Preemption []PreemptionOp `json:"preemption,omitempty"`
	// Events are fed to the registered queueing hints.
	Events []Event `json:"events,omitempty"`
	// NoStateChecks also calls Filter and Score with an empty CycleState
	// (a profile that enables Filter/Score without PreFilter/PreScore).
	NoStateChecks bool `json:"noStateChecks,omitempty"`
	// PodGroupCycle marks the cycle's state as a pod-group scheduling
	// cycle's, as kube-scheduler marks it for the members of a pod group
	// (CycleState.SetPodGroupSchedulingCycle). Set by the sequence mode.
	PodGroupCycle bool `json:"-"`
}

// Setup is what a scenario or sequence is run with: where it came from, the
// gates and the profile args.
type Setup struct {
	// Seed and Index identify the generator run that produced it.
	Seed  uint64 `json:"seed"`
	Index uint64 `json:"index"`

	Gates Gates `json:"gates"`
	// Profile args as a user would write them in pluginConfig (versioned
	// types, no defaults applied). nil means "no pluginConfig entry".
	NodeAffinityArgs     *configv1.NodeAffinityArgs     `json:"nodeAffinityArgs,omitempty"`
	InterPodAffinityArgs *configv1.InterPodAffinityArgs `json:"interPodAffinityArgs,omitempty"`
	// ArgsAsYAML hands our plugins YAML instead of JSON raw args.
	ArgsAsYAML bool `json:"argsAsYAML,omitempty"`
}

// Gates are the feature gates our plugins read through feature.Features.
type Gates struct {
	TaintTolerationComparisonOperators           bool `json:"taintTolerationComparisonOperators,omitempty"`
	InPlacePodVerticalScalingSchedulerPreemption bool `json:"inPlacePodVerticalScalingSchedulerPreemption,omitempty"`
	// InterPodAffinityHostnameFastPath also needs the process-wide gate (the
	// snapshot's NodeInfo indices follow it), so only the dedicated test,
	// which sets that gate, turns it on.
	InterPodAffinityHostnameFastPath bool `json:"interPodAffinityHostnameFastPath,omitempty"`
}

// PreemptionOp is a sequence of pod removals/additions on one node.
type PreemptionOp struct {
	Node  string `json:"node"`
	Steps []Step `json:"steps"`
}

// Step removes an existing pod (by namespace/name) or adds a new one.
type Step struct {
	Remove string  `json:"remove,omitempty"`
	Add    *v1.Pod `json:"add,omitempty"`
}

// Event kinds.
const (
	NodeAdd           = "NodeAdd"
	NodeUpdate        = "NodeUpdate"
	AssignedPodAdd    = "AssignedPodAdd"
	AssignedPodUpdate = "AssignedPodUpdate"
	AssignedPodDelete = "AssignedPodDelete"
	TargetPodUpdate   = "TargetPodUpdate"
)

// Event is a cluster event as the scheduling queue sees it.
type Event struct {
	Kind    string   `json:"kind"`
	OldNode *v1.Node `json:"oldNode,omitempty"`
	NewNode *v1.Node `json:"newNode,omitempty"`
	OldPod  *v1.Pod  `json:"oldPod,omitempty"`
	NewPod  *v1.Pod  `json:"newPod,omitempty"`
}

// HasNamelessNode reports whether a node has an empty name (only plugin-level
// comparisons use such scenarios; real clusters cannot have them).
func (s *Scenario) HasNamelessNode() bool {
	for _, n := range s.Nodes {
		if n.Name == "" {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// Vocabulary. Small value pools so that selectors, taints and topology
// domains collide often.

const (
	keyZone     = v1.LabelTopologyZone
	keyRegion   = v1.LabelTopologyRegion
	keyHostname = v1.LabelHostname
	keyRack     = "example.com/rack"
	keyNum      = "num"
	keyGPU      = "gpu"
	keyTeam     = "team"
	keyApp      = "app"
	keyTier     = "tier"
	keyEnv      = "env"
	keyMissing  = "nowhere" // no object ever carries it
	// keyPodName is a label of an existing pod's own, as a StatefulSet's
	// pods have: no selector reads it, so such pods are alike to every
	// term and still differ.
	keyPodName = "statefulset.kubernetes.io/pod-name"
	keyInvalid = "bad key!"
)

var (
	// numeric-ish values for Gt/Lt on both the node side and the selector
	// side: leading zeros, signs, overflow, non-integers, empty.
	numValues = []string{"0", "1", "3", "5", "05", "007", "10", "+5", "-3", "-0", "x", "", "1.5", "99999999999999999999", "9223372036854775807"}

	nodeLabelValues = map[string][]string{
		keyZone:   {"z1", "z2", "z3"},
		keyRegion: {"r1", "r2"},
		keyRack:   {"a", "b"},
		keyNum:    numValues,
		keyGPU:    {"true", "false", ""},
		keyTeam:   {"x", "y"},
	}
	nodeLabelKeys = []string{keyZone, keyRegion, keyRack, keyNum, keyGPU, keyTeam}

	podLabelValues = map[string][]string{
		keyApp:  {"web", "db", "cache"},
		keyTier: {"fe", "be"},
		keyTeam: {"x", "y"},
		keyNum:  {"1", "5"},
	}
	podLabelKeys = []string{keyApp, keyTier, keyTeam, keyNum}

	nsNames       = []string{"default", "ns1", "ns2", "ns3"}
	nsGhost       = "ghost" // never in the lister
	nsLabelValues = map[string][]string{keyEnv: {"prod", "dev"}, keyTeam: {"x", "y"}}
	nsLabelKeys   = []string{keyEnv, keyTeam}

	taintKeys    = []string{"dedicated", "gpu", "num", "", "example.com/special"}
	taintValues  = []string{"", "a", "b", "5", "05", "-3", "+4", "10", "x", "-0"}
	taintEffects = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute, "", "Weird"}
	tolOperators = []v1.TolerationOperator{v1.TolerationOpExists, v1.TolerationOpEqual, "", v1.TolerationOpLt, v1.TolerationOpGt, "Bogus"}

	topologyKeys = []string{keyZone, keyZone, keyZone, keyHostname, keyHostname, keyRegion, keyRack, keyMissing, keyTeam, ""}
)

// gen wraps the random source with scenario-building helpers.
type gen struct {
	r  *rand.Rand
	sc *Scenario
	// friendly scenarios carry fewer hard constraints, so that whole-profile
	// runs often keep two or more feasible nodes and get to scoring.
	friendly bool
	pods     int // counter for unique pod names/UIDs
}

// NewRand returns the generator's random source for scenario index i of a
// run with the given seed.
func NewRand(seed, index uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, index))
}

// Generate builds scenario index of the run seeded with seed.
func Generate(seed, index uint64) *Scenario {
	return GenerateFrom(NewRand(seed, index), seed, index)
}

// GenerateFrom builds a scenario from an arbitrary random source (the fuzz
// target feeds one that is steered by the fuzzer's bytes).
func GenerateFrom(r *rand.Rand, seed, index uint64) *Scenario {
	g := &gen{r: r, sc: &Scenario{Setup: Setup{Seed: seed, Index: index}}}
	g.scenario()
	return g.sc
}

func (g *gen) p(percent int) bool { return g.r.IntN(100) < percent }
func (g *gen) n(k int) int        { return g.r.IntN(k) }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

func (g *gen) scenario() {
	sc := g.sc
	g.friendly = g.p(35)
	sc.Gates.TaintTolerationComparisonOperators = g.p(50)
	sc.Gates.InPlacePodVerticalScalingSchedulerPreemption = g.p(15)
	sc.ArgsAsYAML = g.p(10)
	sc.NodeAffinityArgs = g.nodeAffinityArgs()
	sc.InterPodAffinityArgs = g.interPodAffinityArgs()

	for _, name := range nsNames {
		if g.p(80) {
			sc.Namespaces = append(sc.Namespaces, testutil.MakeNamespace(name, g.labels(nsLabelKeys, nsLabelValues, 30)))
		}
	}

	var numNodes int
	switch x := g.n(100); {
	case x < 2:
		numNodes = 0
	case x < 12:
		numNodes = 1
	case x < 79:
		numNodes = 2 + g.n(6)
	case x < 99:
		numNodes = 8 + g.n(12)
	default:
		// Big enough for the parallel code paths to split work into chunks.
		numNodes = 40 + g.n(60)
	}
	for i := range numNodes {
		sc.Nodes = append(sc.Nodes, g.node(fmt.Sprintf("n%d", i)))
	}
	if numNodes > 0 && g.p(2) {
		// A node without a name: matchFields are ignored for it.
		sc.Nodes[g.n(numNodes)].Name = ""
	}

	if numNodes > 0 {
		numPods := g.n(2*numNodes + 3)
		for range numPods {
			p := g.pod(true)
			p.Spec.NodeName = pick(g, sc.Nodes).Name
			sc.Pods = append(sc.Pods, p)
		}
	}

	sc.Pod = g.incomingPod()

	for _, n := range sc.Nodes {
		if g.p(70) {
			sc.ScoreNodes = append(sc.ScoreNodes, n.Name)
		}
	}
	if numNodes > 0 {
		for range g.n(3) {
			sc.Preemption = append(sc.Preemption, g.preemptionOp())
		}
		for range g.n(3) {
			p := g.pod(true)
			p.Status.NominatedNodeName = pick(g, sc.Nodes).Name
			sc.Nominated = append(sc.Nominated, p)
		}
	}
	for range 2 + g.n(6) {
		sc.Events = append(sc.Events, g.event())
	}
	sc.NoStateChecks = g.p(15)
}

// labels draws a label map from the pools; nilPercent yields nil.
func (g *gen) labels(keys []string, values map[string][]string, nilPercent int) map[string]string {
	if g.p(nilPercent) {
		return nil
	}
	m := map[string]string{}
	for _, k := range keys {
		if g.p(45) {
			m[k] = pick(g, values[k])
		}
	}
	return m
}

func (g *gen) node(name string) *v1.Node {
	w := testutil.MakeNode(name)
	noLabels := g.p(6)
	switch x := g.n(100); {
	case noLabels:
		w.NoLabels()
	case x < 8:
		w.Unlabel(keyHostname)
	case x < 18:
		w.Label(keyHostname, pick(g, []string{"n0", "n1", "shared"})) // duplicate hostnames
	}
	if !noLabels {
		for _, k := range nodeLabelKeys {
			prob := 40
			switch k {
			case keyZone:
				prob = 80
			case keyRegion:
				prob = 60
			}
			if g.p(prob) {
				w.Label(k, pick(g, nodeLabelValues[k]))
			}
		}
	}
	for range g.taintCount() {
		w.Taint(pick(g, taintKeys), pick(g, taintValues), g.taintEffect())
	}
	if g.friendly || g.p(90) {
		w.Capacity("8", "32Gi", 110)
	}
	return w.Obj()
}

func (g *gen) taintCount() int {
	if g.friendly && g.p(60) {
		return 0
	}
	switch x := g.n(100); {
	case x < 45:
		return 0
	case x < 75:
		return 1
	case x < 92:
		return 2
	default:
		return 3 + g.n(2)
	}
}

func (g *gen) taintEffect() v1.TaintEffect {
	switch x := g.n(100); {
	case x < 30:
		return v1.TaintEffectNoSchedule
	case x < 65:
		return v1.TaintEffectPreferNoSchedule
	case x < 88:
		return v1.TaintEffectNoExecute
	case x < 95:
		return ""
	default:
		return "Weird"
	}
}

func (g *gen) podName() string {
	g.pods++
	return fmt.Sprintf("p%d", g.pods)
}

func (g *gen) namespace() string {
	if g.p(8) {
		return nsGhost
	}
	return pick(g, nsNames)
}

// pod builds a pod with labels and possibly inter-pod affinity terms.
func (g *gen) pod(existing bool) *v1.Pod {
	name := g.podName()
	w := testutil.MakePod(g.namespace(), name).UID(fmt.Sprintf("uid-%s", name))
	w.Labels(g.labels(podLabelKeys, podLabelValues, 10))
	if existing && g.p(25) {
		w.Label(keyPodName, name)
	}
	if g.p(30) {
		w.Priority(int32(g.n(3) * 100))
	}
	affinityPercent := 60
	if existing {
		affinityPercent = 40
	}
	if g.p(affinityPercent) {
		g.podAffinity(w)
	}
	if !existing && g.p(10) {
		w.Request("1", "1Gi")
	}
	return w.Obj()
}

func (g *gen) incomingPod() *v1.Pod {
	p := g.pod(false)
	w := &testutil.PodWrapper{Pod: *p}
	switch x := g.n(100); {
	case x < 50 || g.friendly && g.p(80):
	case x < 60:
		w.NodeSelector(map[string]string{})
	default:
		m := map[string]string{}
		for range 1 + g.n(2) {
			k := g.nodeKey()
			m[k] = g.nodeValue(k)
		}
		w.NodeSelector(m)
	}
	if g.p(65) {
		w.NodeAffinity(g.nodeAffinity())
	}
	for range g.tolerationCount() {
		w.Toleration(g.toleration())
	}
	switch x := g.n(100); {
	case x < 8:
		w.NodeName(pick(g, append(g.nodeNames(), "ghost")))
	case x < 10:
		w.NodeName("ghost")
	}
	if w.Spec.NodeName != "" && g.p(30) {
		// Both NodeName and NodeAffinity narrow PreFilter: their results are
		// intersected by the framework, possibly to nothing.
		w.RequiredNodeTerms(testutil.FieldTerm(testutil.Expr("metadata.name", v1.NodeSelectorOpIn, pick(g, append(g.nodeNames(), "ghost")))))
	}
	if g.p(20) {
		w.ResizeDeferred()
	}
	return &w.Pod
}

func (g *gen) nodeNames() []string {
	out := make([]string, 0, len(g.sc.Nodes))
	for _, n := range g.sc.Nodes {
		out = append(out, n.Name)
	}
	return out
}

func (g *gen) tolerationCount() int {
	switch x := g.n(100); {
	case x < 35:
		return 0
	case x < 65:
		return 1
	case x < 88:
		return 2
	default:
		return 3 + g.n(3)
	}
}

func (g *gen) toleration() v1.Toleration {
	if g.p(4) {
		return v1.Toleration{} // all-empty: tolerates every empty-valued taint
	}
	if taints := g.taints(); len(taints) > 0 && g.p(45) {
		// Aimed at an existing taint, so comparisons land on equal and
		// off-by-one values.
		taint := pick(g, taints)
		t := v1.Toleration{Key: taint.Key, Effect: taint.Effect, Operator: pick(g, tolOperators), Value: taint.Value}
		if g.p(15) {
			t.Key = ""
		}
		if g.p(15) {
			t.Effect = ""
		}
		if g.p(40) {
			t.Value = shiftInt(t.Value, int64(pick(g, []int{-1, 1})))
		}
		return t
	}
	t := v1.Toleration{
		Key:      pick(g, taintKeys),
		Operator: pick(g, tolOperators),
		Effect:   pick(g, taintEffects),
	}
	switch t.Operator {
	case v1.TolerationOpLt, v1.TolerationOpGt:
		t.Value = pick(g, append(numValues, "4", "6"))
	case v1.TolerationOpExists:
		if g.p(15) {
			t.Value = pick(g, taintValues)
		}
	default:
		t.Value = pick(g, taintValues)
	}
	if g.p(10) {
		secs := int64(g.n(100))
		t.TolerationSeconds = &secs
	}
	return t
}

// ---------------------------------------------------------------------------
// Node affinity.

func (g *gen) nodeKey() string {
	switch x := g.n(100); {
	case x < 3:
		return keyInvalid
	case x < 6:
		return keyMissing
	case x < 14:
		return keyHostname
	default:
		return pick(g, nodeLabelKeys)
	}
}

func (g *gen) nodeValue(key string) string {
	if key == keyHostname {
		return pick(g, append(g.nodeNames(), "shared", "n0"))
	}
	if vs, ok := nodeLabelValues[key]; ok {
		return pick(g, vs)
	}
	return "v"
}

func (g *gen) nodeAffinity() *v1.NodeAffinity {
	na := &v1.NodeAffinity{}
	switch x := g.n(100); {
	case x < 35 || g.friendly && g.p(70):
	case x < 40:
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{}
	case x < 44:
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	default:
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: g.nodeTerms(1 + g.n(3))}
	}
	switch x := g.n(100); {
	case x < 40:
	case x < 45:
		na.PreferredDuringSchedulingIgnoredDuringExecution = []v1.PreferredSchedulingTerm{}
	default:
		for range 1 + g.n(3) {
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
				v1.PreferredSchedulingTerm{Weight: g.weight(), Preference: g.nodeTerm()})
		}
	}
	return na
}

// weight draws a preferred-term weight: mostly 1..100, sometimes 0 (dropped
// by the parsers) or negative (only reachable in-process / via addedAffinity).
func (g *gen) weight() int32 {
	switch x := g.n(100); {
	case x < 6:
		return 0
	case x < 9:
		return -int32(1 + g.n(50))
	default:
		return int32(1 + g.n(100))
	}
}

func (g *gen) nodeTerms(k int) []v1.NodeSelectorTerm {
	out := make([]v1.NodeSelectorTerm, 0, k)
	for range k {
		out = append(out, g.nodeTerm())
	}
	return out
}

func (g *gen) nodeTerm() v1.NodeSelectorTerm {
	if g.p(8) {
		return v1.NodeSelectorTerm{}
	}
	var t v1.NodeSelectorTerm
	fields := g.p(25)
	exprs := g.n(3)
	if !fields && exprs == 0 {
		exprs = 1
	}
	for range exprs {
		t.MatchExpressions = append(t.MatchExpressions, g.nodeExpr())
	}
	if fields {
		n := 1
		if g.p(20) {
			n = 2
		}
		for range n {
			t.MatchFields = append(t.MatchFields, g.fieldExpr())
		}
	}
	return t
}

func (g *gen) nodeExpr() v1.NodeSelectorRequirement {
	key := g.nodeKey()
	var op v1.NodeSelectorOperator
	switch x := g.n(100); {
	case x < 25:
		op = v1.NodeSelectorOpIn
	case x < 40:
		op = v1.NodeSelectorOpNotIn
	case x < 52:
		op = v1.NodeSelectorOpExists
	case x < 62:
		op = v1.NodeSelectorOpDoesNotExist
	case x < 78:
		op, key = v1.NodeSelectorOpGt, keyNum
	case x < 94:
		op, key = v1.NodeSelectorOpLt, keyNum
	default:
		op = "Bogus"
	}
	if (op == v1.NodeSelectorOpGt || op == v1.NodeSelectorOpLt) && g.p(10) {
		key = g.nodeKey()
	}
	req := v1.NodeSelectorRequirement{Key: key, Operator: op}
	switch op {
	case v1.NodeSelectorOpIn, v1.NodeSelectorOpNotIn:
		n := 1 + g.n(2)
		if g.p(5) {
			n = 0
		}
		for range n {
			req.Values = append(req.Values, g.nodeValue(key))
		}
	case v1.NodeSelectorOpExists, v1.NodeSelectorOpDoesNotExist:
		if g.p(5) {
			req.Values = []string{g.nodeValue(key)}
		}
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		n := 1
		switch x := g.n(100); {
		case x < 8:
			n = 2
		case x < 12:
			n = 0
		}
		for range n {
			req.Values = append(req.Values, pick(g, numValues))
		}
	default:
		req.Values = []string{g.nodeValue(key)}
	}
	return req
}

func (g *gen) fieldExpr() v1.NodeSelectorRequirement {
	req := v1.NodeSelectorRequirement{Key: "metadata.name", Operator: v1.NodeSelectorOpIn}
	if g.p(8) {
		req.Key = pick(g, []string{"metadata.uid", "spec.unschedulable"})
	}
	switch x := g.n(100); {
	case x < 55:
	case x < 88:
		req.Operator = v1.NodeSelectorOpNotIn
	case x < 94:
		req.Operator = v1.NodeSelectorOpExists
	default:
		req.Operator = v1.NodeSelectorOpGt
	}
	n := 1
	switch x := g.n(100); {
	case x < 20:
		n = 2
	case x < 25:
		n = 0
	}
	names := append(g.nodeNames(), "ghost")
	for range n {
		req.Values = append(req.Values, pick(g, names))
	}
	return req
}

func (g *gen) nodeAffinityArgs() *configv1.NodeAffinityArgs {
	if g.p(55) {
		return nil
	}
	args := &configv1.NodeAffinityArgs{}
	if g.p(25) {
		return args
	}
	na := &v1.NodeAffinity{}
	args.AddedAffinity = na
	if g.p(55) {
		switch x := g.n(100); {
		case x < 8:
			na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{}}
		case x < 14:
			na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
		default:
			na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: g.validNodeTerms(1 + g.n(2))}
		}
	}
	if g.p(50) {
		for range 1 + g.n(2) {
			w := int32(g.n(101))
			if g.p(30) {
				w = -int32(1 + g.n(20)) // not range-checked by upstream
			}
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
				v1.PreferredSchedulingTerm{Weight: w, Preference: g.validNodeTerm()})
		}
	}
	return args
}

// validNodeTerms mostly avoids parse errors (they make both factories fail,
// which hides everything else); a few slip through on purpose.
func (g *gen) validNodeTerms(k int) []v1.NodeSelectorTerm {
	out := make([]v1.NodeSelectorTerm, 0, k)
	for range k {
		out = append(out, g.validNodeTerm())
	}
	return out
}

func (g *gen) validNodeTerm() v1.NodeSelectorTerm {
	if g.p(6) {
		return g.nodeTerm()
	}
	var t v1.NodeSelectorTerm
	for range 1 + g.n(2) {
		key := pick(g, nodeLabelKeys)
		switch x := g.n(100); {
		case x < 40:
			t.MatchExpressions = append(t.MatchExpressions, testutil.Expr(key, v1.NodeSelectorOpIn, g.nodeValue(key)))
		case x < 60:
			t.MatchExpressions = append(t.MatchExpressions, testutil.Expr(key, v1.NodeSelectorOpNotIn, g.nodeValue(key)))
		case x < 75:
			t.MatchExpressions = append(t.MatchExpressions, testutil.Expr(key, v1.NodeSelectorOpExists))
		case x < 85:
			t.MatchExpressions = append(t.MatchExpressions, testutil.Expr(key, v1.NodeSelectorOpDoesNotExist))
		default:
			t.MatchExpressions = append(t.MatchExpressions, testutil.Expr(keyNum, pick(g, []v1.NodeSelectorOperator{v1.NodeSelectorOpGt, v1.NodeSelectorOpLt}), strconv.Itoa(g.n(12))))
		}
	}
	return t
}

func (g *gen) interPodAffinityArgs() *configv1.InterPodAffinityArgs {
	if g.p(50) {
		return nil
	}
	args := &configv1.InterPodAffinityArgs{IgnorePreferredTermsOfExistingPods: g.p(30)}
	switch x := g.n(100); {
	case x < 30:
	case x < 33:
		w := pick(g, []int32{101, -1, 1000})
		args.HardPodAffinityWeight = &w
	case x < 45:
		w := pick(g, []int32{0, 100})
		args.HardPodAffinityWeight = &w
	default:
		w := int32(g.n(101))
		args.HardPodAffinityWeight = &w
	}
	return args
}

// ---------------------------------------------------------------------------
// Inter-pod affinity.

func (g *gen) podAffinity(w *testutil.PodWrapper) {
	requiredPercent := 55
	if g.friendly {
		requiredPercent = 20
	}
	if g.p(requiredPercent) {
		for range 1 + g.n(2) {
			w.RequiredPodAffinity(g.podTerm())
		}
	}
	if g.p(50) {
		for range 1 + g.n(2) {
			w.RequiredPodAntiAffinity(g.podTerm())
		}
	}
	if g.p(45) {
		for range 1 + g.n(2) {
			w.PreferredPodAffinity(testutil.Weighted(g.weight(), g.podTerm()))
		}
	}
	if g.p(45) {
		for range 1 + g.n(2) {
			w.PreferredPodAntiAffinity(testutil.Weighted(g.weight(), g.podTerm()))
		}
	}
	// Non-nil but empty PodAffinity / PodAntiAffinity structs.
	if g.p(5) {
		w.PodAffinity(&v1.PodAffinity{})
	}
	if g.p(5) {
		w.PodAntiAffinity(&v1.PodAntiAffinity{})
	}
}

func (g *gen) podTerm() v1.PodAffinityTerm {
	t := testutil.AffinityTerm(pick(g, topologyKeys), g.labelSelector(podLabelKeys, podLabelValues))
	switch x := g.n(100); {
	case x < 50:
	case x < 58:
		t.Namespaces = []string{}
	default:
		for _, ns := range append(slices.Clone(nsNames), nsGhost) {
			if g.p(35) {
				t.Namespaces = append(t.Namespaces, ns)
			}
		}
	}
	switch x := g.n(100); {
	case x < 60:
	case x < 72:
		t.NamespaceSelector = &metav1.LabelSelector{}
	default:
		t.NamespaceSelector = g.labelSelector(nsLabelKeys, nsLabelValues)
		if t.NamespaceSelector == nil {
			t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{keyEnv: "prod"}}
		}
	}
	if g.p(8) && t.LabelSelector != nil {
		// Ignored by the scheduler (the apiserver merges them on create).
		t.MatchLabelKeys = []string{pick(g, podLabelKeys)}
	}
	if g.p(5) && t.LabelSelector != nil {
		t.MismatchLabelKeys = []string{pick(g, podLabelKeys)}
	}
	return t
}

// labelSelector returns nil (matches nothing), {} (everything), or a selector
// with matchLabels/matchExpressions, sometimes invalid.
func (g *gen) labelSelector(keys []string, values map[string][]string) *metav1.LabelSelector {
	switch x := g.n(100); {
	case x < 8:
		return nil
	case x < 16:
		return &metav1.LabelSelector{}
	}
	sel := &metav1.LabelSelector{}
	if g.p(60) {
		sel.MatchLabels = map[string]string{}
		for range 1 + g.n(2) {
			k := pick(g, keys)
			sel.MatchLabels[k] = pick(g, values[k])
		}
	}
	for range g.n(3) {
		k := pick(g, keys)
		req := metav1.LabelSelectorRequirement{Key: k}
		switch x := g.n(100); {
		case x < 35:
			req.Operator = metav1.LabelSelectorOpIn
			req.Values = []string{pick(g, values[k])}
			if g.p(30) {
				// Several values: a pod matches with any one of them.
				req.Values = append(req.Values, pick(g, values[k]))
			}
		case x < 60:
			req.Operator = metav1.LabelSelectorOpNotIn
			req.Values = []string{pick(g, values[k]), pick(g, values[k])}
		case x < 75:
			req.Operator = metav1.LabelSelectorOpExists
		case x < 88:
			req.Operator = metav1.LabelSelectorOpDoesNotExist
		case x < 92:
			req.Operator = "Bogus"
			req.Values = []string{pick(g, values[k])}
		case x < 95:
			req.Operator = metav1.LabelSelectorOpIn // no values: invalid
		case x < 97:
			req.Operator = metav1.LabelSelectorOpIn
			req.Values = []string{"bad value!"}
		default:
			req.Operator = metav1.LabelSelectorOpExists
			req.Key = keyInvalid
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	if sel.MatchLabels == nil && len(sel.MatchExpressions) == 0 {
		sel.MatchLabels = map[string]string{keyApp: pick(g, podLabelValues[keyApp])}
	}
	return sel
}

// ---------------------------------------------------------------------------
// Preemption, nominated pods, events.

func (g *gen) preemptionOp() PreemptionOp {
	node := pick(g, g.sc.Nodes).Name
	op := PreemptionOp{Node: node}
	var onNode []string
	for _, p := range g.sc.Pods {
		if p.Spec.NodeName == node {
			onNode = append(onNode, p.Namespace+"/"+p.Name)
		}
	}
	for range 1 + g.n(4) {
		if len(onNode) > 0 && g.p(55) {
			i := g.n(len(onNode))
			op.Steps = append(op.Steps, Step{Remove: onNode[i]})
			onNode = slices.Delete(onNode, i, i+1)
			continue
		}
		p := g.pod(true)
		p.Status.NominatedNodeName = node
		op.Steps = append(op.Steps, Step{Add: p})
	}
	return op
}

func (g *gen) event() Event {
	sc := g.sc
	switch x := g.n(100); {
	case x < 15:
		return Event{Kind: NodeAdd, NewNode: g.node(fmt.Sprintf("new%d", g.n(100)))}
	case x < 40 && len(sc.Nodes) > 0:
		old := pick(g, sc.Nodes)
		return Event{Kind: NodeUpdate, OldNode: old, NewNode: g.mutateNode(old)}
	case x < 55:
		p := g.pod(true)
		switch y := g.n(100); {
		case y < 75 && len(sc.Nodes) > 0:
			p.Spec.NodeName = pick(g, sc.Nodes).Name
		case y < 88 && len(sc.Nodes) > 0:
			p.Status.NominatedNodeName = pick(g, sc.Nodes).Name
		}
		return Event{Kind: AssignedPodAdd, NewPod: p}
	case x < 70 && len(sc.Pods) > 0:
		old := pick(g, sc.Pods)
		return Event{Kind: AssignedPodUpdate, OldPod: old, NewPod: g.mutatePodLabels(old)}
	case x < 82 && len(sc.Pods) > 0:
		return Event{Kind: AssignedPodDelete, OldPod: pick(g, sc.Pods)}
	default:
		newPod := g.mutatePodLabels(sc.Pod)
		if g.p(50) {
			newPod.Spec.Tolerations = append(newPod.Spec.Tolerations, g.toleration())
		}
		return Event{Kind: TargetPodUpdate, OldPod: sc.Pod, NewPod: newPod}
	}
}

func (g *gen) mutateNode(old *v1.Node) *v1.Node {
	n := old.DeepCopy()
	for range 1 + g.n(2) {
		switch x := g.n(100); {
		case x < 25:
			k := pick(g, nodeLabelKeys)
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k] = pick(g, nodeLabelValues[k])
		case x < 40:
			if len(n.Labels) > 0 {
				keys := make([]string, 0, len(n.Labels))
				for k := range n.Labels {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				delete(n.Labels, pick(g, keys))
			}
		case x < 50:
			n.Labels = nil
		case x < 75:
			n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: pick(g, taintKeys), Value: pick(g, taintValues), Effect: g.taintEffect()})
		case x < 92:
			if len(n.Spec.Taints) > 0 {
				i := g.n(len(n.Spec.Taints))
				n.Spec.Taints = slices.Delete(slices.Clone(n.Spec.Taints), i, i+1)
			}
		default:
			n.Spec.Taints = nil
		}
	}
	return n
}

func (g *gen) mutatePodLabels(old *v1.Pod) *v1.Pod {
	p := old.DeepCopy()
	switch x := g.n(100); {
	case x < 15:
		p.Labels = nil
	case x < 25:
		// no label change (a generic update)
	default:
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		k := pick(g, podLabelKeys)
		if _, ok := p.Labels[k]; ok && g.p(40) {
			delete(p.Labels, k)
		} else {
			p.Labels[k] = pick(g, podLabelValues[k])
		}
	}
	return p
}

func (g *gen) taints() []v1.Taint {
	var out []v1.Taint
	for _, n := range g.sc.Nodes {
		out = append(out, n.Spec.Taints...)
	}
	return out
}

// shiftInt returns v+delta when v is a canonical decimal integer, else v.
func shiftInt(v string, delta int64) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != v {
		return v
	}
	return strconv.FormatInt(n+delta, 10)
}

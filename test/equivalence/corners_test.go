package equivalence

import (
	"regexp"
	"slices"
	"sort"
	"testing"
)

// lit matches s literally.
func lit(s string) string { return regexp.QuoteMeta(s) }

// contractCorners are outcomes (regexps anchored at the start of
// "Plugin/Check: upstream result", positive numbers written #) that the generator must reach: each is a row or trap
// of docs/behavior.md. If one is missing the suite would be blind
// to it, however many scenarios pass.
var contractCorners = []string{
	// NodeName (§4)
	lit(`NodeName/FilterWithoutPreFilterState: UnschedulableAndUnresolvable "node(s) didn't match the requested node name"`),
	lit(`NodeName/QueueingHint: Queue (no hint fn)`),
	lit(`NodeName/SignPod: Success v1.Pod.Spec.NodeName="n`),
	// TaintToleration (§5)
	lit(`TaintToleration/Filter: UnschedulableAndUnresolvable "node(s) had untolerated taint(s)"`),
	lit(`TaintToleration/Filter: Success`),
	lit(`TaintToleration/Score: #`),
	`TaintToleration/NormalizeScore: Success \{.*=0[ }]`, // max > 0: reversed, 0 for the worst
	lit(`TaintToleration/QueueingHint: Queue <nil>`),
	lit(`TaintToleration/QueueingHint: QueueSkip <nil>`),
	lit(`TaintToleration/FilterAfterAddRemove: UnschedulableAndUnresolvable`),
	// NodeAffinity (§6)
	lit(`NodeAffinity/PreFilter: Skip`),
	lit(`NodeAffinity/PreFilter: Success <nil>`),
	lit(`NodeAffinity/PreFilter: Success NodeNames[`),
	lit(`NodeAffinity/PreFilter: UnschedulableAndUnresolvable "pod affinity terms conflict"`),
	lit(`NodeAffinity/Filter: UnschedulableAndUnresolvable "node(s) didn't match scheduler-enforced node affinity"`),
	lit(`NodeAffinity/Filter: UnschedulableAndUnresolvable "node(s) didn't match Pod's node affinity/selector"`),
	lit(`NodeAffinity/Filter: Success`),
	lit(`NodeAffinity/FilterWithoutPreFilterState: UnschedulableAndUnresolvable`),
	lit(`NodeAffinity/PreScore: Skip`),
	lit(`NodeAffinity/PreScore: Error "[#].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"`),
	lit(`NodeAffinity/Score: -#`),
	lit(`NodeAffinity/Score: #`),
	`NodeAffinity/NormalizeScore: Success \{.*=#`,
	`NodeAffinity/NormalizeScore: Success \{.*=-#`, // negative added weights survive
	lit(`NodeAffinity/NewErrorText: error: `),
	lit(`NodeAffinity/QueueingHint: Queue <nil>`),
	lit(`NodeAffinity/QueueingHint: QueueSkip <nil>`),
	lit(`NodeAffinity/SignPod: Success v1.Pod.Spec.Affinity.NodeAffinity=`),
	// InterPodAffinity (§7)
	lit(`InterPodAffinity/PreFilter: Skip`),
	lit(`InterPodAffinity/PreFilter: Success <nil>`),
	lit(`InterPodAffinity/PreFilter: UnschedulableAndUnresolvable "parsing pod: `),
	lit(`InterPodAffinity/Filter: UnschedulableAndUnresolvable "node(s) didn't match pod affinity rules"`),
	lit(`InterPodAffinity/Filter: Unschedulable "node(s) didn't match pod anti-affinity rules"`),
	lit(`InterPodAffinity/Filter: Unschedulable "node(s) didn't satisfy existing pods anti-affinity rules"`),
	lit(`InterPodAffinity/Filter: Success`),
	lit(`InterPodAffinity/RemovePod: Success`),
	lit(`InterPodAffinity/AddPod: Success`),
	lit(`InterPodAffinity/FilterAfterAddRemove: Unschedulable "node(s) didn't satisfy existing pods anti-affinity rules"`),
	lit(`InterPodAffinity/FilterAfterAddRemove: Unschedulable "node(s) didn't match pod anti-affinity rules"`),
	lit(`InterPodAffinity/FilterAfterAddRemove: UnschedulableAndUnresolvable "node(s) didn't match pod affinity rules"`),
	lit(`InterPodAffinity/FilterWithoutPreFilterState: Error "error reading \"PreFilterInterPodAffinity\" from cycleState: not found"`),
	lit(`InterPodAffinity/PreScore: Skip`),
	lit(`InterPodAffinity/PreScore: Success`),
	lit(`InterPodAffinity/Score: -#`),
	lit(`InterPodAffinity/Score: #`),
	`InterPodAffinity/NormalizeScore: Success \{(\S+=0 )*\S+=0\}$`, // max == min: all 0
	`InterPodAffinity/NormalizeScore: Success \{.*=# .*=0|InterPodAffinity/NormalizeScore: Success \{.*=0 .*=#`,
	lit(`InterPodAffinity/ScoreWithoutPreScoreState: 0 Error`),
	lit(`InterPodAffinity/NewErrorText: error: hardPodAffinityWeight: Invalid value: `),
	lit(`InterPodAffinity/SignPod: Unschedulable "pods with InterPodAffinity are not signable"`),
	lit(`InterPodAffinity/SignPod: Success v1.Pod.Labels=`),
	lit(`InterPodAffinity/SignPod: Success `) + "$", // IgnorePreferredTermsOfExistingPods: no fragment
	lit(`InterPodAffinity/QueueingHint: Queue <nil>`),
	lit(`InterPodAffinity/QueueingHint: QueueSkip <nil>`),
	lit(`InterPodAffinity/QueueingHint(direct): QueueSkip <nil>`),
	// Whole profile (§2, §3)
	lit(`Profile/PreFilter: UnschedulableAndUnresolvable "pod affinity terms conflict" (plugin NodeAffinity)`),
	lit(`Profile/PreFilter: Success NodeNames[`),
	lit(`Profile/Filter: UnschedulableAndUnresolvable "node(s) had untolerated taint(s)" (plugin TaintToleration)`),
	lit(`Profile/Filter: Unschedulable "node(s) didn't satisfy existing pods anti-affinity rules" (plugin InterPodAffinity)`),
	lit(`Profile/PreScore: Error "running PreScore plugin \"NodeAffinity\": `),
	lit(`Profile/Score: Error "applying score defaultWeights on Score plugins: plugin \"NodeAffinity\" returns an invalid score <some node's>, it should in the range of [0, #] after normalizing"`),
	lit(`Profile/Score: Success`),
	lit(`Profile/TotalScore: `),
	lit(`Profile/FilterAfterPreemption: `),
}

// TestGeneratorReachesCorners runs upstream against itself and checks that
// every contract corner above actually occurs, so "zero mismatches" means
// something.
func TestGeneratorReachesCorners(t *testing.T) {
	stats := &outcomeStats{seen: map[string]int{}}
	outcomes.Store(stats)
	defer outcomes.Store(nil)
	n := envUint("EQUIVALENCE_CORNER_SCENARIOS", 4000)
	res := runBatch(t, envUint("EQUIVALENCE_SEED", defaultSeed), n, nil, upstreamOnlyComparator(), 1)
	if len(res.findings) > 0 {
		t.Fatalf("upstream disagrees with itself: %v", res.findings[0].mms)
	}
	var keys []string
	for k := range stats.seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, c := range append(slices.Clone(contractCorners), lineCorners...) {
		re := regexp.MustCompile("^(?:" + c + ")")
		hits := 0
		for _, k := range keys {
			if re.MatchString(k) {
				hits += stats.seen[k]
			}
		}
		if hits == 0 {
			t.Errorf("corner never reached in %d scenarios: %s", res.ran, c)
		} else if testing.Verbose() {
			t.Logf("%6d  %s", hits, c)
		}
	}
	if t.Failed() && testing.Verbose() {
		for _, k := range keys {
			t.Logf("seen %6d %s", stats.seen[k], k)
		}
	}
}

// upstreamOnlyComparator compares upstream with a second upstream instance,
// for every kind and the whole profile.
func upstreamOnlyComparator() comparator {
	plugins := pluginComparator(func(k *kind) factory { return k.Upstream })
	return func(e *env, sc *Scenario) []mismatch {
		out := plugins(e, sc)
		if sc.Index%2 == 0 && !sc.HasNamelessNode() {
			out = append(out, compareProfile(e, sc)...)
		}
		return out
	}
}

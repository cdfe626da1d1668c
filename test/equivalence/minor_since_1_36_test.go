//go:build !k8s1.35

package equivalence

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// What the sequence harness does on the lines with pod-group cycles (1.36
// and newer): the group's members scheduled on one snapshot, the snapshot's
// AssumePod/ForgetPod, the cache's pod-group members, and the batch with
// gate GenericWorkload on.

// groupCycle runs a pod-group cycle: members are placed one after another
// on the same snapshot, each assumed on the snapshot with its node's
// generation kept; the placement is reverted (LIFO) and tried again, as the
// placement algorithm does per candidate placement; then, with BindGroup,
// the members are assumed in the cache.
func (r *seqRun) groupCycle(c *SeqCycle, events []Event) []mismatch {
	members := append([]*v1.Pod{c.Pod}, c.Group...)
	for _, m := range members {
		// The unscheduled members' add events (the pod-group part is a no-op
		// with the gate off).
		r.both(func(s *seqSide) {
			s.podStore.Update(m)
			s.cache.AddPodGroupMember(m.DeepCopy())
		})
	}
	var out []mismatch
	var placed []*v1.Pod
	for attempt := range 2 {
		placed = placed[:0]
		for i, m := range members {
			if r.known(PodKey(m)) {
				continue
			}
			var ev []Event
			if attempt == 0 && i == 0 {
				ev = events
			}
			out = append(out, r.compareCycle(c, m, ev)...)
			node := r.pickFeasible(c, m)
			if node == "" {
				continue
			}
			p := m.DeepCopy()
			p.Spec.NodeName = node
			placed = append(placed, p)
			out = append(out, r.cacheErr("Snapshot.AssumePod", func(s *seqSide) error {
				pi, _ := framework.NewPodInfo(p.DeepCopy())
				return s.snap.AssumePod(pi)
			})...)
		}
		for i := len(placed) - 1; i >= 0; i-- {
			p := placed[i]
			out = append(out, r.cacheErr("Snapshot.ForgetPod", func(s *seqSide) error { return s.snap.ForgetPod(r.logger, p) })...)
		}
		if len(out) > 0 {
			return out
		}
	}
	if c.BindGroup {
		for _, p := range placed {
			r.assumed[PodKey(p)] = p
			out = append(out, r.cacheErr("AssumePod", func(s *seqSide) error { return s.cache.AssumePod(r.logger, p.DeepCopy()) })...)
		}
	}
	return out
}

// lineLacksSeqMutant: every sequence mutant applies on these lines.
func lineLacksSeqMutant(*seqMutant) string { return "" }

// TestSequenceGenericWorkload runs a batch with the GenericWorkload gate on
// (alpha in 1.36, beta in 1.37, off by default in both): the caches keep
// pod-group state, the group members carry spec.schedulingGroup, and the
// snapshot's pod-group AssumePod/ForgetPod also track them. Both profiles
// are the ones compared elsewhere (the default profile is derived before the
// gate is turned on, so neither carries the gang plugins the gate would add
// to upstream's default): only the four plugins differ.
func TestSequenceGenericWorkload(t *testing.T) {
	defaultProfile()
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.GenericWorkload, true)
	seed := envUint("EQUIVALENCE_SEQ_SEED", defaultSeed) + 7
	n := envUint("EQUIVALENCE_SEQUENCES", defaultSequences) / 4
	if testing.Short() {
		n = 4
	}
	opts := SequenceOptions{Steps: int(envUint("EQUIVALENCE_SEQ_STEPS", defaultSeqSteps))}
	res := runSequences(t, seed, n, nil, opts, defaultSeqConfig(), 5)
	t.Logf("GenericWorkload on: seed=%d sequences=%d steps=%d cycles=%d wall=%v; %v",
		seed, res.sequences, res.steps, res.cycles, res.elapsed.Round(time.Millisecond), res.effective)
	if res.effective["cycle(pod group)"] == 0 {
		t.Errorf("no pod-group cycle ran")
	}
	for _, f := range res.findings {
		rep, _ := formatSeqFinding(t, f, defaultSeqConfig(), "")
		t.Errorf("sequence-mode mismatch with GenericWorkload on:\n%s", rep)
		break
	}
}

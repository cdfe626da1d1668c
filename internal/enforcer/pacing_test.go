package enforcer

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// placements is how many replacements e has placed so far.
func placements(t testing.TB, e *Enforcer) int {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(e.metrics.placements)
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// relabelled20 is 20 pods that need disk=ssd on nodes a0..a3, whose label
// was just removed (five pods each), with room on b0..b2: pods p00..p07
// are four owners of two pods each, the others one owner each; p12..p19
// live in namespace other. Each pod is a second older than the last, so
// p00 is decided first.
func relabelled20() *Cluster {
	c := &Cluster{}
	for i := range 4 {
		c.Nodes = append(c.Nodes, node(fmt.Sprintf("a%d", i), nil))
	}
	for i := range 3 {
		c.Nodes = append(c.Nodes, node(fmt.Sprintf("b%d", i), ssd))
	}
	for i := range 20 {
		owner := fmt.Sprintf("rs%02d", i)
		if i < 8 {
			owner = fmt.Sprintf("sts%d", i/2)
		}
		w := pod(fmt.Sprintf("p%02d", i), owner, fmt.Sprintf("a%d", i%4)).NodeSelector(ssd)
		if i >= 12 {
			w.Namespace = "other"
		}
		w.CreationTimestamp = metav1.NewTime(created.Add(time.Duration(20-i) * time.Second))
		c.Pods = append(c.Pods, w.Obj())
	}
	return c
}

// split is a pass's reports as the live run would act on them: the
// pods going now (evicting, or dry-run in a dry run) and where to, and the
// others with their state, and with why (what holds them and the detail).
func split(reps []violationsv1alpha1.Report, why bool) map[string]string {
	out := map[string]string{}
	for _, r := range reps {
		state := r.State
		if state == violationsv1alpha1.StateDryRun {
			state = violationsv1alpha1.StateEvicting
		}
		fields := []string{state, r.Target}
		if why {
			fields = append(fields, r.Wait, r.Detail)
		}
		out[r.Pod] = strings.Join(fields, " | ")
	}
	return out
}

// The dry run is the live run minus the eviction: on the same relabel of
// 20 pods under caps, its first pass reports the same pods going now, to
// the same nodes, and the same ones waiting, for the same reasons, as the
// live run's first pass does; and it holds that answer on the next pass
// without asking the API server again.
func TestDryRunSplitEqualsLiveFirstPass(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits enforcerv1alpha1.Limits
		burst  int
		holds  []string // what must hold some pod back
	}{
		{"per node, per namespace, total", enforcerv1alpha1.Limits{PerNode: 2, PerNamespace: 4, Total: 6}, 100,
			[]string{string(evictions.HoldOwner), string(evictions.HoldPerNode), string(evictions.HoldPerNamespace), string(evictions.HoldTotal)}},
		{"rate limit", enforcerv1alpha1.Limits{PerNode: 2, PerNamespace: 100, Total: 100}, 5,
			[]string{string(evictions.HoldOwner), string(evictions.HoldPerNode), violationsv1alpha1.WaitRateLimit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(dry bool) (*rig, []violationsv1alpha1.Report) {
				r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
					c.GracePeriod.NodeAffinity.Duration = 0
					c.Limits, c.EvictionsPerSecond, c.Burst, c.DryRun = tc.limits, 1, tc.burst, dry
				})
				r.c = relabelled20()
				// Before the relabel nothing is violated.
				for _, n := range r.c.Nodes {
					n.Labels["disk"] = "ssd"
				}
				if reps := r.pass(); len(reps) != 0 {
					t.Fatalf("before the relabel: %v", reps)
				}
				for _, n := range r.c.Nodes[:4] {
					delete(n.Labels, "disk")
				}
				r.pass()
				return r, r.e.Reports()
			}
			live, liveReps := run(false)
			dry, dryReps := run(true)
			if len(liveReps) != 20 {
				t.Fatalf("live run reported %d pods, want 20", len(liveReps))
			}
			want, got := split(liveReps, true), split(dryReps, true)
			for pod, w := range want {
				if got[pod] != w {
					t.Errorf("%s: dry run %q, live run %q", pod, got[pod], w)
				}
			}
			if len(dry.evictions) != len(live.evictions) || len(live.evictions) == 0 || len(live.evictions) == 20 {
				t.Errorf("eviction requests: dry run %d, live run %d (want equal, some but not all)", len(dry.evictions), len(live.evictions))
			}
			waits := map[string]bool{}
			for _, r := range liveReps {
				waits[r.Wait] = true
				if (r.State == violationsv1alpha1.StatePaced || r.State == violationsv1alpha1.StateWaitingOwner) != (r.Wait != "") {
					t.Errorf("%s: state %s with wait %q", r.Pod, r.State, r.Wait)
				}
			}
			for _, h := range tc.holds {
				if !waits[h] {
					t.Errorf("no pod held back by %s: the scenario does not exercise it", h)
				}
			}
			// The next dry-run pass (no token refilled) holds the same
			// split, asking nothing again: the simulated evictions stay in
			// flight. (A pod may now wait on another cap: every cap is
			// full by then, as on the live run's second pass.)
			before, first := len(dry.evictions), split(dryReps, false)
			dry.pass()
			again := split(dry.e.Reports(), false)
			if len(dry.evictions) != before {
				t.Errorf("second dry-run pass asked %d more evictions", len(dry.evictions)-before)
			}
			for pod, w := range first {
				if again[pod] != w {
					t.Errorf("%s on the second dry-run pass: %q, first %q", pod, again[pod], w)
				}
			}
		})
	}
}

// A simulated eviction settles when its pod stops violating: the next
// pod of its owner may go.
func TestDryRunEvictionSettlesWhenTheViolationClears(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.DryRun = true
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("a2", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs", "a"), ssdPod("p2", "rs", "a2")}
	reps := r.pass()
	goes, waits := "p1", "p2"
	if reps["p2"].State == violationsv1alpha1.StateDryRun {
		goes, waits = "p2", "p1"
	}
	if reps[goes].State != violationsv1alpha1.StateDryRun || reps[waits].State != violationsv1alpha1.StateWaitingOwner || reps[waits].Wait != string(evictions.HoldOwner) {
		t.Fatalf("first pass: %v, want one dry-run and one waiting for its owner", reps)
	}
	// The pod that would go is fine again (its node is labelled back).
	for _, n := range r.c.Nodes {
		if p := reps[goes]; n.Name == p.Node {
			n.Labels["disk"] = "ssd"
		}
	}
	if got := r.pass()[waits]; got.State != violationsv1alpha1.StateDryRun {
		t.Errorf("%s once %s no longer violates: %+v, want dry-run", waits, goes, got)
	}
}

// A pod held back by a cap or the rate limit costs no placement: only
// the pods that go are placed.
func TestHeldBackPodsAreNotPlaced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*enforcerv1alpha1.EnforcerConfiguration)
		wait   string
	}{
		{"rate limit", func(c *enforcerv1alpha1.EnforcerConfiguration) { c.EvictionsPerSecond, c.Burst = 1, 2 }, violationsv1alpha1.WaitRateLimit},
		{"total", func(c *enforcerv1alpha1.EnforcerConfiguration) { c.Limits.Total = 2 }, string(evictions.HoldTotal)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0; tc.mutate(c) })
			r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
			for i := range 6 {
				r.c.Pods = append(r.c.Pods, ssdPod(fmt.Sprintf("p%d", i), fmt.Sprintf("rs%d", i), "a"))
			}
			held := 0
			for _, rep := range r.pass() {
				if rep.State == violationsv1alpha1.StatePaced && rep.Wait == tc.wait {
					held++
				}
			}
			if len(r.evictions) != 2 || held != 4 {
				t.Fatalf("evicted %v, %d held back by %s; want 2 and 4", r.evicted(), held, tc.wait)
			}
			if got := placements(t, r.e); got != 2 {
				t.Errorf("%d placements for 2 evictions: held-back pods were placed", got)
			}
		})
	}
}

// A no-fit answer holds until something that could change it changes:
// passes on a timer or after status churn place nothing; a node that
// gains the label, or a pod that leaves, places again.
func TestNoFitPlacedAgainOnlyAfterAChange(t *testing.T) {
	nodes := []*v1.Node{node("a", nil), tu.MakeNode("b").Capacity("8", "16Gi", 1).Ready().Obj()}
	blocker := pod("blocker", "other", "b").Obj()
	blocker.ResourceVersion = "1"
	pods := []*v1.Pod{ssdPod("p", "rs", "a"), blocker}
	sr := newStepRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 }, nodes, pods)
	if got := sr.step()["p"].State; got != violationsv1alpha1.StateNoFit {
		t.Fatalf("first pass: %s, want no-fit", got)
	}
	if got := placements(t, sr.e); got != 1 {
		t.Fatalf("%d placements on the first pass, want 1", got)
	}
	// A timer's pass, then a container status update: nothing that
	// could give the replacement a node.
	sr.clock.Step(time.Minute)
	sr.step()
	churn := blocker.DeepCopy()
	churn.ResourceVersion = "2"
	churn.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", RestartCount: 1}}
	sr.ch.record(churn, false)
	if got := sr.step()["p"].State; got != violationsv1alpha1.StateNoFit {
		t.Fatalf("after churn: %s, want no-fit", got)
	}
	if got := placements(t, sr.e); got != 1 {
		t.Errorf("%d placements: a no-fit pod was placed again with nothing changed", got)
	}
	// b gains the label, still full (one pod at most, the blocker's):
	// placed again, still no fit.
	labelled := tu.MakeNode("b").Labels(ssd).Capacity("8", "16Gi", 1).Ready().Obj()
	sr.ch.record(labelled, false)
	if got := sr.step()["p"].State; got != violationsv1alpha1.StateNoFit {
		t.Fatalf("b labelled but full: %s, want no-fit", got)
	}
	if got := placements(t, sr.e); got != 2 {
		t.Errorf("%d placements after b was labelled, want 2", got)
	}
	// The blocker leaves: room on b.
	sr.ch.record(churn, true)
	if got := sr.step()["p"]; got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
		t.Errorf("once b has room: %+v, want evicting to b", got)
	}
}

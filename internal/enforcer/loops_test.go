package enforcer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/testutil"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// replace stands for the controller and the scheduler after the eviction
// of name: the evicted pod is gone and its replacement, created now, runs
// Ready on node.
func (r *rig) replace(name, replacement, owner, node string) *v1.Pod {
	r.t.Helper()
	repl := ssdPod(replacement, owner, node)
	repl.CreationTimestamp = metav1.NewTime(r.clock.Now())
	r.c.Pods = append(r.without(name), repl)
	return repl
}

// eventReasons drains the rig's events: "reason object-kind" in order
// (FakeRecorder writes "type reason message"; the owner's events name the
// pod in their message).
func (r *rig) eventReasons() []string {
	var out []string
	for {
		select {
		case e := <-r.events.Events:
			out = append(out, strings.SplitN(e, " ", 3)[1])
		default:
			return out
		}
	}
}

// loopingOwners is the looping_owners gauge of rule.
func (r *rig) loopingOwners(rule enforcerv1alpha1.Rule) float64 {
	r.t.Helper()
	v, err := testutil.GetGaugeMetricValue(r.e.metrics.looping.WithLabelValues(string(rule)))
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

// An owner whose replacements land where they were promised and break the
// same rule again there is evicted loops.evictions times, then looping: no
// more evictions for the rule, a PlacementLooping event on the pod and its
// owner, the gauge at 1; a new leader continues the history; once the
// evictions leave the window, it is evicted again.
func TestLoopingAfterNEvictions(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Loops = enforcerv1alpha1.LoopDetection{Evictions: 3, Window: metav1.Duration{Duration: time.Hour}}
	})
	// One ssd node at a time: each replacement is promised it, lands on
	// it, and then it loses the label (a label that flaps).
	r.c.Nodes = []*v1.Node{node("n0", nil), node("n1", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p0", "rs", "n0")}
	for i := 1; i <= 3; i++ {
		prev, cur := "p"+string(rune('0'+i-1)), "p"+string(rune('0'+i))
		got := r.pass()[prev]
		if got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != i || got.Target != r.c.Nodes[i].Name {
			t.Fatalf("round %d: %s %+v, evictions %v; want evicted, its replacement promised %s", i, prev, got, r.evicted(), r.c.Nodes[i].Name)
		}
		r.clock.Step(time.Minute)
		r.replace(prev, cur, "rs", r.c.Nodes[i].Name)
		r.c.Nodes[i] = node(r.c.Nodes[i].Name, nil)
		r.c.Nodes = append(r.c.Nodes, node("n"+string(rune('0'+i+1)), ssd))
		r.eventReasons()
	}
	got := r.pass()["p3"]
	if got.State != violationsv1alpha1.StateLooping || len(r.evictions) != 3 || !strings.Contains(got.Detail, "evicted 3 times") {
		t.Fatalf("after 3 evictions: p3 %+v, evictions %v; want looping and no fourth eviction", got, r.evicted())
	}
	if ev := r.eventReasons(); strings.Join(ev, ",") != reasonLooping+","+reasonLooping {
		t.Errorf("events %v, want PlacementLooping on the pod and its owner", ev)
	}
	if n := r.loopingOwners(enforcerv1alpha1.NodeAffinity); n != 1 {
		t.Errorf("looping_owners{rule=node-affinity} %v, want 1", n)
	}
	r.clock.Step(10 * time.Minute)
	if got := r.pass()["p3"]; got.State != violationsv1alpha1.StateLooping || len(r.evictions) != 3 {
		t.Fatalf("later: %+v, evictions %v; want looping", got, r.evicted())
	}
	// The history is beside the evictions in flight: a new leader
	// continues it.
	cm, err := r.e.client.CoreV1().ConfigMaps("placement-scheduler").Get(context.Background(), "placement-scheduler-enforcer-evictions", metav1.GetOptions{})
	if err != nil || cm.Data[historyKey] == "" {
		t.Fatalf("saved history: %v, %v", cm, err)
	}
	r.newLeader()
	if got := r.pass()["p3"]; got.State != violationsv1alpha1.StateLooping || len(r.evictions) != 3 {
		t.Fatalf("new leader: %+v, evictions %v; want looping", got, r.evicted())
	}
	// The first repeat (second eviction, at 1m) leaves the window after
	// 1h1m: two evictions in the window, it acts again.
	r.clock.Step(time.Hour - 10*time.Minute - time.Minute)
	if got := r.pass()["p3"]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 4 {
		t.Fatalf("the window over: %+v, evictions %v; want evicted again", got, r.evicted())
	}
	if n := r.loopingOwners(enforcerv1alpha1.NodeAffinity); n != 0 {
		t.Errorf("looping_owners{rule=node-affinity} %v, want 0", n)
	}
}

// A replacement placed in violation of the rule its predecessor was
// evicted for, on a node other than the one promised (a controller that
// pins the node, a scheduler that does not apply the rule), is reported
// looping and not evicted, and so is every other pod of its owner for that
// rule; across a failover too; once the eviction leaves the window, they
// are evicted again.
func TestReplacementPlacedInViolationIsNotEvicted(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Loops.Window.Duration = 30 * time.Minute
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs", "a"), ssdPod("p2", "rs", "a")}
	r.pass()
	if len(r.evictions) != 1 {
		t.Fatalf("evictions %v, want one", r.evicted())
	}
	evicted, other := r.evictions[0].Name, "p1"
	if evicted == "p1" {
		other = "p2"
	}
	r.clock.Step(time.Minute)
	r.replace(evicted, "p3", "rs", "a") // pinned back to a
	r.eventReasons()
	reps := r.pass()
	if got := reps["p3"]; got.State != violationsv1alpha1.StateLooping || !strings.Contains(got.Detail, "p3 on a") {
		t.Errorf("the replacement: %+v, want looping, naming it", got)
	}
	if got := reps[other]; got.State != violationsv1alpha1.StateLooping {
		t.Errorf("its owner's other pod %s: %+v, want looping", other, got)
	}
	if len(r.evictions) != 1 {
		t.Fatalf("evictions %v, want none more", r.evicted())
	}
	if ev := r.eventReasons(); len(ev) != 4 || ev[0] != reasonLooping {
		t.Errorf("events %v, want PlacementLooping on both pods and their owner", ev)
	}
	r.newLeader()
	r.clock.Step(20 * time.Minute)
	if got := r.pass()["p3"]; got.State != violationsv1alpha1.StateLooping || len(r.evictions) != 1 {
		t.Fatalf("new leader, inside the window: %+v, evictions %v; want looping", got, r.evicted())
	}
	r.clock.Step(10 * time.Minute) // 30m after the eviction
	if got := r.pass(); len(r.evictions) != 2 || got[r.evictions[1].Name].State != violationsv1alpha1.StateEvicting {
		t.Fatalf("the window over: %+v, evictions %v; want one evicted again", got, r.evicted())
	}
}

// A legitimate move never loops: every pod of an owner evicted once, each
// replacement landing where it was promised, more pods than
// loops.evictions.
func TestMoveIsNoLoop(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Loops.Evictions = 2
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs", "a"), ssdPod("p2", "rs", "a"), ssdPod("p3", "rs", "a"), ssdPod("p4", "rs", "a")}
	replaced := map[string]bool{}
	for round := 1; round <= 4; round++ {
		r.pass()
		if len(r.evictions) != round {
			t.Fatalf("round %d: evictions %v, want one more", round, r.evicted())
		}
		for _, ev := range r.evictions {
			if !replaced[ev.Name] {
				replaced[ev.Name] = true
				r.clock.Step(time.Second)
				r.replace(ev.Name, ev.Name+"-r", "rs", "b")
			}
		}
		if ev := r.eventReasons(); strings.Contains(strings.Join(ev, ","), reasonLooping) {
			t.Fatalf("round %d: events %v: a move is no loop", round, ev)
		}
	}
	if reps := r.pass(); len(reps) != 0 || len(r.evictions) != 4 {
		t.Fatalf("after the move: reports %+v, evictions %v; want every pod moved once", reps, r.evicted())
	}
}

// The history is bounded: at most loops.evictions evictions per owner and
// rule, expired ones dropped, and at most maxLoopHistory in all.
func TestLoopHistoryBounded(t *testing.T) {
	l := newLoops(enforcerv1alpha1.LoopDetection{Evictions: 3, Window: metav1.Duration{Duration: time.Hour}})
	now := time.Unix(2_000_000, 0)
	p := ssdPod("p", "rs", "a")
	for i := range 10 {
		l.add("rs", enforcerv1alpha1.NodeAffinity, p, created, "b", now.Add(time.Duration(i)*time.Minute))
	}
	if n := len(l.history[loopKey{"rs", enforcerv1alpha1.NodeAffinity}]); n != 3 {
		t.Errorf("%d evictions kept for one owner and rule, want 3", n)
	}
	l.expire(now.Add(time.Hour + 8*time.Minute))
	if n := len(l.history[loopKey{"rs", enforcerv1alpha1.NodeAffinity}]); n != 1 {
		t.Errorf("%d evictions kept after the window, want 1 (the one at 9m)", n)
	}
	for i := range maxLoopHistory + 100 {
		l.add(types.UID(fmt.Sprint(i)), enforcerv1alpha1.PodAntiAffinity, p, created, "b", now.Add(time.Hour+time.Duration(i)*time.Millisecond))
	}
	l.expire(now.Add(time.Hour + 9*time.Minute))
	total := 0
	for _, h := range l.history {
		total += len(h)
	}
	if total != maxLoopHistory {
		t.Errorf("%d evictions kept in all, want %d", total, maxLoopHistory)
	}
	if _, ok := l.history[loopKey{types.UID("0"), enforcerv1alpha1.PodAntiAffinity}]; ok {
		t.Errorf("the oldest owner kept, the newest dropped")
	}
}

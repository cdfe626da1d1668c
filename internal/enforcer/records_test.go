package enforcer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// A new leader continues a record's grace clock only when its term follows,
// without a gap, the live term that wrote (or re-stamped) the record; any
// other record restarts the grace period. Each case starts from a live
// leader that detected p's violation at t0 and recorded it.
func TestRecordContinuedOnlyAcrossAPromptLiveTakeover(t *testing.T) {
	for _, tc := range []struct {
		name string
		// then runs the scenario and says whether the last leader
		// continues t0.
		then func(t *testing.T, r *rig, t0 time.Time) (continued bool)
	}{
		{"prompt failover, crashed leader", func(t *testing.T, r *rig, t0 time.Time) bool {
			r.clock.Step(9 * time.Second)
			r.handOver(r.e.cfg, r.clock.Now().Add(-2*time.Second), false)
			return true
		}},
		{"prompt failover, released Lease", func(t *testing.T, r *rig, t0 time.Time) bool {
			r.clock.Step(9 * time.Second)
			r.handOver(r.e.cfg, r.clock.Now().Add(-time.Second), true)
			return true
		}},
		{"several prompt failovers, each re-stamping the record", func(t *testing.T, r *rig, t0 time.Time) bool {
			for i := 1; i <= 3; i++ {
				r.clock.Step(5 * time.Second)
				r.newLeader()
				r.pass()
				if rec := r.recordOn("p"); rec == nil || rec.Term != i || !rec.Since[enforcerv1alpha1.NodeAffinity].Equal(t0) {
					t.Fatalf("leader %d: record %+v, want re-stamped with term %d, since %s", i, rec, i, t0)
				}
			}
			r.clock.Step(5 * time.Second)
			r.newLeader()
			return true
		}},
		{"enforcer scaled to 0 for days (Lease released)", func(t *testing.T, r *rig, t0 time.Time) bool {
			released := r.clock.Now().Add(5 * time.Second)
			r.clock.Step(72 * time.Hour)
			r.handOver(r.e.cfg, released, true)
			return false
		}},
		{"leader crashed, the next one minutes later", func(t *testing.T, r *rig, t0 time.Time) bool {
			renewed := r.clock.Now().Add(2 * time.Second)
			r.clock.Step(10 * time.Minute)
			r.handOver(r.e.cfg, renewed, false)
			return false
		}},
		{"live, dry run, live: the violation cleared and came back in the dry run", func(t *testing.T, r *rig, t0 time.Time) bool {
			live := r.e.cfg
			dry := *live
			dry.DryRun = true
			r.clock.Step(5 * time.Second)
			r.handOver(&dry, r.clock.Now(), true)
			r.pass()
			r.c.Nodes[0] = node("a", ssd) // cleared
			r.clock.Step(5 * time.Second)
			if got := r.pass()["p"]; got.State != "" {
				t.Fatalf("dry run, violation cleared: %+v", got)
			}
			if rec := r.recordOn("p"); rec == nil || !rec.Since[enforcerv1alpha1.NodeAffinity].Equal(t0) {
				t.Fatalf("the dry run touched the record: %+v (it writes nothing)", rec)
			}
			r.c.Nodes[0] = node("a", nil)  // back
			r.clock.Step(25 * time.Second) // 35s after t0: past the grace period
			r.handOver(live, r.clock.Now(), true)
			return false
		}},
		{"record of the term before the predecessor's (never re-stamped)", func(t *testing.T, r *rig, t0 time.Time) bool {
			r.clock.Step(5 * time.Second)
			r.newLeader() // crashes before its first pass
			r.clock.Step(5 * time.Second)
			r.newLeader()
			return false
		}},
		{"leader election disabled", func(t *testing.T, r *rig, t0 time.Time) bool {
			r.clock.Step(5 * time.Second)
			r.newLeader()
			r.e.lead(context.Background(), nil)
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil) // grace 30s
			r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
			r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
			t0 := r.clock.Now()
			r.pass()
			if rec := r.recordOn("p"); rec == nil || rec.Mode != modeLive || rec.Leader != "leader-0" || rec.Term != 0 {
				t.Fatalf("record after the first detection: %+v, want live, leader-0, term 0", rec)
			}
			continued := tc.then(t, r, t0)
			now := r.clock.Now()
			got := r.pass()["p"]
			want := now
			if continued {
				want = t0
			}
			if got.State != violationsv1alpha1.StateGrace || !got.Since.Time.Equal(want) || len(r.evictions) != 0 {
				t.Fatalf("%s after t0: %+v, evictions %v; want grace since %s (t0 %s)", now.Sub(t0), got, r.evicted(), want, t0)
			}
			rec := r.recordOn("p")
			if rec == nil || !rec.Since[enforcerv1alpha1.NodeAffinity].Equal(want) || r.e.term != nil && (rec.Leader != r.e.term.leader || rec.Term != r.e.term.transitions) {
				t.Errorf("record %+v, want since %s, stamped with the new leader's term", rec, want)
			}
		})
	}
}

// Only a live leader's record is continued: one that says it was written
// by a dry run, or by no known mode (a record written before modes were
// recorded), restarts the grace period even right after a prompt takeover
// from the term that wrote it.
func TestRecordOfAnotherModeRestartsGrace(t *testing.T) {
	for _, mode := range []string{modeLive, modeDryRun, "", "something-else"} {
		t.Run("mode "+mode, func(t *testing.T) {
			r := newRig(t, nil) // grace 30s
			r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
			p := ssdPod("p", "rs", "a")
			long := r.clock.Now().Add(-time.Hour)
			rec, err := json.Marshal(podRecord{By: r.e.records.by, Leader: "leader-0", Term: 0, Mode: mode, Since: map[enforcerv1alpha1.Rule]time.Time{enforcerv1alpha1.NodeAffinity: long}})
			if err != nil {
				t.Fatal(err)
			}
			p.Annotations[RecordAnnotation] = string(rec)
			r.c.Pods = []*v1.Pod{p}
			r.newLeader() // leader-0 renewed until now
			got := r.pass()["p"]
			if mode == modeLive {
				if got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 1 {
					t.Fatalf("a live record of the predecessor's term, an hour old: %+v, evictions %v; want evicted", got, r.evicted())
				}
				return
			}
			if got.State != violationsv1alpha1.StateGrace || !got.Since.Time.Equal(r.clock.Now()) || len(r.evictions) != 0 {
				t.Fatalf("%+v, evictions %v; want a grace period of its own from now", got, r.evicted())
			}
		})
	}
}

// The lock leader election runs with tells the term a replica took the
// Lease with, and the one it followed without a gap: after a release, after
// a crash (the Lease expired, taken over at once), and not after a Lease
// left for days, nor when there was none. Real leader election, over a
// fake clientset.
func TestTermLockTakeovers(t *testing.T) {
	le := enforcerv1alpha1.LeaderElection{LeaseNamespace: "ns", LeaseName: "lease", LeaseDuration: metav1.Duration{Duration: time.Second},
		RenewDeadline: metav1.Duration{Duration: 500 * time.Millisecond}, RetryPeriod: metav1.Duration{Duration: 100 * time.Millisecond}}
	// A Lease written by a holder whose lease duration is seconds: a
	// candidate waits that long (not its own) once it saw it renewed.
	lease := func(holder string, renewed time.Time, seconds, transitions int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lease"}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds), LeaseTransitions: ptr.To(transitions),
			AcquireTime: &metav1.MicroTime{Time: renewed}, RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	live := func(leader string, n int) podRecord { return podRecord{Mode: modeLive, Leader: leader, Term: n} }

	t.Run("no Lease before", func(t *testing.T) {
		got, _ := elect(t, fake.NewClientset(), "a", le)
		if got.leader != "a" || got.follows != nil {
			t.Errorf("term %+v, want a's, following none", got)
		}
	})
	t.Run("crashed holder, taken over once its Lease expired", func(t *testing.T) {
		// 8 s: longer than this replica's lease duration and the slack
		// after it; the predecessor's own duration bounds the gap.
		got, _ := elect(t, fake.NewClientset(lease("dead", time.Now(), 8, 4)), "a", le)
		if got.transitions != 5 || got.follows == nil || *got.follows != (predecessor{leader: "dead", transitions: 4}) {
			t.Fatalf("term %+v (follows %+v), want term 5 following dead's term 4", got, got.follows)
		}
		if !got.continues(live("dead", 4)) || got.continues(live("other", 4)) || got.continues(live("dead", 3)) {
			t.Errorf("term %+v: continues only dead's term 4", got)
		}
	})
	t.Run("Lease left for days", func(t *testing.T) {
		got, _ := elect(t, fake.NewClientset(lease("dead", time.Now().Add(-72*time.Hour), 1, 4)), "a", le)
		if got.transitions != 5 || got.follows != nil || got.continues(live("dead", 4)) {
			t.Errorf("term %+v (follows %+v), want term 5 following none", got, got.follows)
		}
	})
	t.Run("released by the leader on its way out", func(t *testing.T) {
		client := fake.NewClientset()
		first, stop := elect(t, client, "a", le)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		second := make(chan *term, 1)
		go runElection(ctx, t, client, "b", le, second)
		stop() // a releases the Lease; b, waiting, takes it
		var got *term
		select {
		case got = <-second:
		case <-time.After(30 * time.Second):
			t.Fatal("b did not take the released Lease")
		}
		if got.leader != "b" || got.transitions != first.transitions+1 || !got.continues(live("a", first.transitions)) {
			t.Errorf("b's term %+v (follows %+v), want it to continue a's term %d", got, got.follows, first.transitions)
		}
	})
}

// elect runs leader election for id until it leads, and returns its term
// and a stop that cancels it and waits until it released the Lease.
func elect(t *testing.T, client kubernetes.Interface, id string, le enforcerv1alpha1.LeaderElection) (*term, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *term, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		runElection(ctx, t, client, id, le, started)
	}()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	select {
	case got := <-started:
		return got, stop
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never led", id)
	}
	return nil, nil
}

// runElection campaigns as id, as Run does, and sends its term to started
// once it leads; it returns after ctx ends and the Lease is released.
func runElection(ctx context.Context, t *testing.T, client kubernetes.Interface, id string, le enforcerv1alpha1.LeaderElection, started chan<- *term) {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.LeaseNamespace, le.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		t.Error(err)
		return
	}
	terms := newTermLock(lock, le)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: terms, LeaseDuration: le.LeaseDuration.Duration, RenewDeadline: le.RenewDeadline.Duration,
		RetryPeriod: le.RetryPeriod.Duration, ReleaseOnCancel: true, Name: id,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { started <- terms.current() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Error(err)
		return
	}
	elector.Run(ctx)
}

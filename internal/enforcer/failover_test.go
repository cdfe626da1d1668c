package enforcer

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// newLeader replaces the rig's Enforcer by a new one on the same clientset
// and cluster: the old leader is gone with everything it held in memory,
// and the new one knows only what the API objects say. It takes the Lease
// over at once (a prompt failover: the old leader renewed until now).
func (r *rig) newLeader() {
	r.handOver(r.e.cfg, r.clock.Now(), false)
}

// handOver replaces the rig's leader by a new one running cfg, whose term
// begins now, after the old leader's last renewal at lastRenewal (its
// release, when released), as the Lease would tell it (termLock).
func (r *rig) handOver(cfg *enforcerv1alpha1.EnforcerConfiguration, lastRenewal time.Time, released bool) {
	old := r.e.term
	prev := resourcelock.LeaderElectionRecord{HolderIdentity: old.leader, LeaderTransitions: old.transitions, RenewTime: metav1.NewTime(lastRenewal)}
	if released {
		prev.HolderIdentity = ""
	}
	next := resourcelock.LeaderElectionRecord{HolderIdentity: fmt.Sprintf("leader-%d", old.transitions+1),
		LeaderTransitions: old.transitions + 1, AcquireTime: metav1.NewTime(r.clock.Now())}
	r.e = New(cfg, r.e.sched, r.e.client, r.events, r.clock)
	r.e.lead(context.Background(), takeover(&prev, next, cfg.LeaderElection))
}

// recordOn is the enforcement record on the rig's pod name (nil: none).
func (r *rig) recordOn(name string) *podRecord {
	r.t.Helper()
	for _, p := range r.c.Pods {
		if p.Name != name {
			continue
		}
		v, ok := p.Annotations[RecordAnnotation]
		if !ok {
			return nil
		}
		rec := &podRecord{}
		if err := json.Unmarshal([]byte(v), rec); err != nil {
			r.t.Fatalf("record on %s: %v", name, err)
		}
		return rec
	}
	return nil
}

// A leader killed in the middle of a grace period, and again and again (a
// crash loop): the grace period runs from the first detection, so the pod
// is evicted once, within the grace period (plus a pass) of the first
// detection.
func TestGraceSurvivesLeaderChanges(t *testing.T) {
	r := newRig(t, nil) // grace 30s
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	first := r.clock.Now()
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateGrace {
		t.Fatalf("first detection: %+v", got)
	}
	if rec := r.recordOn("p"); rec == nil || !rec.Since[enforcerv1alpha1.NodeAffinity].Equal(first) {
		t.Fatalf("record after the first detection: %+v, want since %s", rec, first)
	}
	for i := 0; i < 3; i++ { // a new leader every 9s
		r.clock.Step(9 * time.Second)
		r.newLeader()
		got := r.pass()["p"]
		if got.State != violationsv1alpha1.StateGrace || !got.Since.Time.Equal(first) || len(r.evictions) != 0 {
			t.Fatalf("leader %d, %s after the first detection: %+v, evictions %v; want grace since the first detection", i+2, r.clock.Since(first), got, r.evicted())
		}
	}
	r.clock.Step(4 * time.Second) // 31s after the first detection
	r.newLeader()
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 1 {
		t.Fatalf("%s after the first detection: %+v, evictions %v; want evicted once", r.clock.Since(first), got, r.evicted())
	}
	cm, err := r.e.client.CoreV1().ConfigMaps("placement-scheduler").Get(context.Background(), "placement-scheduler-enforcer-evictions", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stored storedEviction
	if err := json.Unmarshal([]byte(cm.Data["uid-p"]), &stored); err != nil || stored.Target != "b" || stored.Name != "p" {
		t.Fatalf("stored eviction %q (%v), want p's, target b", cm.Data["uid-p"], err)
	}
	r.terminate()
	r.newLeader()
	r.pass()
	if len(r.evictions) != 1 {
		t.Errorf("evicted twice: %v", r.evicted())
	}
}

// A violation that clears loses its record: a later violation starts its
// own grace period, with this leader or the next.
func TestRecordClearedWithTheViolation(t *testing.T) {
	r := newRig(t, nil)
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	r.pass()
	r.clock.Step(20 * time.Second)
	r.c.Nodes[0] = node("a", ssd)
	r.pass()
	if rec := r.recordOn("p"); rec != nil {
		t.Fatalf("cleared violation still recorded: %+v", rec)
	}
	r.c.Nodes[0] = node("a", nil)
	r.clock.Step(time.Second)
	again := r.clock.Now()
	r.newLeader()
	r.clock.Step(20 * time.Second)
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateGrace || len(r.evictions) != 0 {
		t.Fatalf("%+v, evictions %v; want a new grace period", got, r.evicted())
	}
	if rec := r.recordOn("p"); rec == nil || !rec.Since[enforcerv1alpha1.NodeAffinity].Equal(r.clock.Now()) {
		t.Fatalf("record %+v, want since %s (the new leader's first detection, not %s)", rec, r.clock.Now(), again)
	}
}

// A refused eviction is not asked again by a new leader before its backoff
// ends, and the next refusal doubles the predecessor's backoff.
func TestBackoffSurvivesLeaderChanges(t *testing.T) {
	r := pdbBlocked(t)
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 1 {
		t.Fatalf("%+v, %d requests", got, len(r.evictions))
	}
	r.clock.Step(5 * time.Second)
	r.newLeader()
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 1 {
		t.Fatalf("new leader inside the backoff: %+v, %d requests; want pdb-blocked and no request", got, len(r.evictions))
	}
	r.clock.Step(6 * time.Second) // 11s: the 10s backoff is over
	r.newLeader()
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 2 {
		t.Fatalf("after the backoff: %+v, %d requests; want a retry", got, len(r.evictions))
	}
	r.clock.Step(11 * time.Second) // inside the doubled backoff (20s)
	r.newLeader()
	if got := r.pass()["p"]; len(r.evictions) != 2 {
		t.Fatalf("inside the doubled backoff: %+v, %d requests", got, len(r.evictions))
	}
	r.refuse = nil
	r.clock.Step(10 * time.Second)
	r.newLeader()
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 3 {
		t.Fatalf("once the PDB allows: %+v, %d requests", got, len(r.evictions))
	}
}

// A leader killed in the middle of a batch: its evictions were accepted,
// their pods terminate and are gone, their replacements are not bound yet.
// The new leader evicts none of them again, promises none of their room
// again, and counts them toward the caps.
func TestLeaderKilledMidBatchKeepsPromises(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Limits.PerNode = 2
	})
	// b has room for two more pods: two replacements.
	b := tu.MakeNode("b").Label("disk", "ssd").Capacity("8", "16Gi", 2).Ready().Obj()
	r.c.Nodes = []*v1.Node{node("a", nil), b, node("c", nil)}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs1", "a"), ssdPod("p2", "rs2", "a"), ssdPod("p3", "rs3", "a"), ssdPod("p4", "rs4", "a")}
	r.pass()
	if len(r.evictions) != 2 {
		t.Fatalf("first leader evicted %v, want two (limits.perNode)", r.evicted())
	}
	evicted := map[string]bool{r.evictions[0].Name: true, r.evictions[1].Name: true}
	r.terminate()
	r.newLeader()
	reps := r.pass()
	if len(r.evictions) != 2 {
		t.Fatalf("new leader, evicted pods terminating: evictions %v", r.evicted())
	}
	for name, rep := range reps {
		if !evicted[name] && rep.State != violationsv1alpha1.StatePaced {
			t.Errorf("new leader, evicted pods terminating: %s %+v, want paced by limits.perNode", name, rep)
		}
	}
	// The evicted pods are gone; their replacements exist, not bound.
	for name := range evicted {
		repl := ssdPod(name+"-r", "rs"+name[1:], "")
		repl.Status.Conditions = nil
		r.c.Pods = append(r.without(name), repl)
	}
	r.newLeader()
	reps = r.pass()
	if len(r.evictions) != 2 {
		t.Fatalf("new leader, replacements Pending: evictions %v; b's room is promised to them", r.evicted())
	}
	for name, rep := range reps {
		if !evicted[name] && rep.State != violationsv1alpha1.StatePaced && rep.State != violationsv1alpha1.StateNoFit {
			t.Errorf("new leader, replacements Pending: %s %+v, want held back", name, rep)
		}
	}
	// The replacements are bound and Ready: the room is theirs, counted by
	// the scheduler; b is full, so the others stay.
	for _, p := range r.c.Pods {
		if p.Spec.NodeName == "" {
			p.Spec.NodeName = "b"
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
	}
	r.newLeader()
	reps = r.pass()
	if len(r.evictions) != 2 {
		t.Fatalf("b full: evictions %v", r.evicted())
	}
	for name, rep := range reps {
		if !evicted[name] && rep.State != violationsv1alpha1.StateNoFit {
			t.Errorf("b full: %s %+v, want no-fit", name, rep)
		}
	}
}

// The room promised to a replacement stays held by a new leader after the
// evicted pod is gone: the last slot of b is not promised twice.
func TestNewLeaderHoldsRoomOfGonePod(t *testing.T) {
	r, gone, owner, stays := oneSlot(t)
	keep := r.without(gone)
	repl := ssdPod(gone+"-r", owner, "")
	repl.Status.Conditions = nil
	r.c.Pods = append(keep, repl)
	r.newLeader()
	if got := r.pass()[stays]; got.State != violationsv1alpha1.StateNoFit || len(r.evictions) != 1 {
		t.Fatalf("new leader, %s gone, replacement Pending: %s %+v, evictions %v; want no-fit", gone, stays, got, r.evicted())
	}
}

// An eviction is asked for only once it is saved with the evictions in
// flight: when it cannot be saved, a new leader could not hold the room
// promised to its replacement, so the pod stays.
func TestNoEvictionUnlessSaved(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	fail := true
	r.e.client.(*fake.Clientset).PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail && a.GetVerb() != "get" {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
		}
		return false, nil, nil
	})
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateError || len(r.evictions) != 0 {
		t.Fatalf("%+v, evictions %v; want error and no eviction", got, r.evicted())
	}
	fail = false
	r.clock.Step(11 * time.Second)
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 1 {
		t.Fatalf("%+v, evictions %v; want evicting", got, r.evicted())
	}
}

// The background writer: a record set lands on the pod, a second set of the
// same value writes nothing, "" removes it, and a pod re-created under the
// same name (another UID) is never written.
func TestRecordsWriter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := ssdPod("p", "rs", "a")
	client := fake.NewClientset(p.DeepCopy())
	patches := 0
	// The tracker applies merge patches but ignores the UID in them, which
	// the apiserver refuses to change: refuse as it does.
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		var patch recordPatch
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &patch); err != nil {
			return true, nil, err
		}
		if patch.Metadata.UID != p.UID {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil)
		}
		return false, nil, nil
	})
	w := newRecords(client, enforcerv1alpha1.LeaderElection{}, false)
	w.start(ctx)
	annotation := func() (string, bool) {
		got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := got.Annotations[RecordAnnotation]
		return v, ok
	}
	poll := func(what string, done func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return done(), nil
		}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	w.set(ctx, p, `{"since":{}}`)
	poll("record written", func() bool { v, _ := annotation(); return v == `{"since":{}}` })
	w.set(ctx, p, `{"since":{}}`)
	w.set(ctx, p, "")
	poll("record removed", func() bool { _, ok := annotation(); return !ok })
	w.writing.Lock() // no write in progress
	n := patches
	w.writing.Unlock()
	if n != 2 {
		t.Errorf("%d patches, want 2 (the same value is not written twice)", n)
	}
	other := p.DeepCopy()
	other.UID = "another"
	w.set(ctx, other, `{"since":{}}`)
	poll("the stale write dropped", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, queued := w.want[other.UID]
		return !queued
	})
	if v, ok := annotation(); ok {
		t.Errorf("a pod with another UID got the record %q", v)
	}
}

// A record written under another Lease (another enforcer, on other
// namespaces) is neither continued nor cleared.
func TestOtherLeasesRecordsLeftAlone(t *testing.T) {
	r := newRig(t, nil)
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	theirs := `{"by":"elsewhere/enforcer","since":{"node-affinity":"2000-01-01T00:00:00Z"}}`
	violating, fine := ssdPod("p", "rs", "a"), pod("q", "rs2", "a").Obj()
	violating.Annotations[RecordAnnotation] = theirs
	fine.Annotations[RecordAnnotation] = theirs
	r.c.Pods = []*v1.Pod{violating, fine}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateGrace || !got.Since.Time.Equal(r.clock.Now()) {
		t.Fatalf("%+v, want a grace period of its own from now", got)
	}
	if got := fine.Annotations[RecordAnnotation]; got != theirs {
		t.Errorf("another Lease's record on a pod that breaks nothing became %q", got)
	}
}

package evictions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// cluster is a Cluster over a list of pods, each controlled by the owner
// its name's first letter names.
type cluster struct {
	pods        map[types.UID]*v1.Pod
	replacement Replacement
}

func (c *cluster) Pod(uid types.UID) *v1.Pod { return c.pods[uid] }
func (c *cluster) Controlled(owner types.UID) sets.Set[types.UID] {
	out := sets.New[types.UID]()
	for uid, p := range c.pods {
		if o := metav1.GetControllerOf(p); o != nil && o.UID == owner {
			out.Insert(uid)
		}
	}
	return out
}
func (c *cluster) Terminating() sets.Set[types.UID] {
	out := sets.New[types.UID]()
	for uid, p := range c.pods {
		if p.DeletionTimestamp != nil {
			out.Insert(uid)
		}
	}
	return out
}
func (c *cluster) Counted(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && !finished(p)
}
func (c *cluster) Replacement(*v1.Pod) Replacement { return c.replacement }
func (c *cluster) add(p *v1.Pod)                   { c.pods[p.UID] = p }

func readyPod(name, owner, node string) *v1.Pod {
	yes := true
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: &yes}}},
		Spec:   v1.PodSpec{NodeName: node},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
	}
}

// An eviction holds its node's cap and its owner until it settles: the
// pod gone, a replacement counted, the owner Ready again; a pod that
// fails and stays counts as gone; an owner that will not replace settles
// at once.
func TestBookSettles(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name  string
		repl  Replacement
		after func(c *cluster)
		want  bool // settled
	}{
		{"pod still running", ReplacedWhenReady, func(*cluster) {}, false},
		{"pod gone, no replacement", ReplacedWhenReady, func(c *cluster) { delete(c.pods, "p") }, false},
		{"replacement bound, not Ready", ReplacedWhenReady, func(c *cluster) {
			delete(c.pods, "p")
			r := readyPod("p2", "rs", "b")
			r.Status.Conditions = nil
			c.add(r)
		}, false},
		{"replacement Ready", ReplacedWhenReady, func(c *cluster) { delete(c.pods, "p"); c.add(readyPod("p2", "rs", "b")) }, true},
		{"replaced once, not Ready", ReplacedOnce, func(c *cluster) {
			c.pods["p"].Status.Phase = v1.PodFailed
			r := readyPod("p2", "rs", "b")
			r.Status.Conditions = nil
			c.add(r)
		}, true},
		{"failed and stays, not replaced", NotReplaced, func(c *cluster) { c.pods["p"].Status.Phase = v1.PodFailed }, true},
		{"running, not replaced", NotReplaced, func(*cluster) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := oneInFlight(t, tc.repl, now, false)
			tc.after(c)
			b.Settle(c, now.Add(time.Minute))
			if got := !b.Has("p"); got != tc.want {
				t.Errorf("settled %v, want %v", got, tc.want)
			}
			if !tc.want {
				b.Settle(c, now.Add(Timeout+time.Second))
				if b.Has("p") && c.pods["p"] == nil {
					t.Errorf("still in flight after Timeout")
				}
			}
		})
	}
}

// oneInFlight is a cluster with pod p of rs on node a evicted at now
// (simulated: a dry run's), its replacement promised node b, and pod q of
// another owner on a; it checks that the eviction holds a's cap (perNode
// 1) and rs.
func oneInFlight(t *testing.T, repl Replacement, now time.Time, simulated bool) (*cluster, *Book) {
	t.Helper()
	c := &cluster{pods: map[types.UID]*v1.Pod{}, replacement: repl}
	p := readyPod("p", "rs", "a")
	c.add(p)
	b := NewBook(enforcerv1alpha1.Limits{PerNode: 1, PerNamespace: 5, Total: 5})
	f := NewInFlight(c, p, "b", now)
	f.Simulated = simulated
	b.Add(f)
	other := readyPod("q", "rs2", "a")
	c.add(other)
	if got, _, _ := b.CapReached(c, other, now); got != HoldPerNode || b.OwnerBusy(c, readyPod("p3", "rs", "a"), "rs") == "" {
		t.Fatalf("in flight: cap %q, owner busy %q; want limits.perNode and busy", got, b.OwnerBusy(c, readyPod("p3", "rs", "a"), "rs"))
	}
	return c, b
}

// A dry run's eviction holds the caps and the owner as an accepted one
// does, though its pod never leaves; it settles when the pod goes, when
// its violation clears (Forget) or after Timeout.
func TestSimulatedEvictionHoldsUntilForgottenOrTimeout(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, tc := range []struct {
		name   string
		after  func(c *cluster, b *Book)
		at     time.Duration
		settle bool
	}{
		{"pod running", func(*cluster, *Book) {}, time.Minute, false},
		{"violation cleared", func(_ *cluster, b *Book) { b.Forget("p") }, time.Minute, true},
		{"pod gone", func(c *cluster, _ *Book) { delete(c.pods, "p") }, time.Minute, true},
		{"timeout", func(*cluster, *Book) {}, Timeout + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b := oneInFlight(t, ReplacedWhenReady, now, true)
			if len(b.Reservations(c)) != 1 {
				t.Fatal("a simulated eviction holds no room for its replacement")
			}
			tc.after(c, b)
			b.Settle(c, now.Add(tc.at))
			if got := !b.Has("p"); got != tc.settle {
				t.Errorf("settled %v, want %v", got, tc.settle)
			}
		})
	}
	// An accepted eviction is not forgotten when its violation clears:
	// the pod is leaving anyway.
	c := &cluster{pods: map[types.UID]*v1.Pod{}, replacement: ReplacedWhenReady}
	p := readyPod("p", "rs", "a")
	c.add(p)
	b := NewBook(enforcerv1alpha1.Limits{PerNode: 1, PerNamespace: 5, Total: 5})
	b.Add(NewInFlight(c, p, "b", now))
	b.Forget("p")
	if !b.Has("p") {
		t.Error("Forget dropped an accepted eviction")
	}
}

// A request whose answer is an error other than a refusal or the pod's
// absence is Accepted when the pod turns out to be leaving (the eviction
// went through; only its answer was lost), and Failed otherwise.
func TestRequestWithALostAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(tracker k8stesting.ObjectTracker, pod *v1.Pod) // what the eviction did before its error
		dryRun bool
		want   Result
	}{
		{"pod deleted", func(tr k8stesting.ObjectTracker, p *v1.Pod) {
			_ = tr.Delete(v1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name)
		}, false, Accepted},
		{"pod terminating", func(tr k8stesting.ObjectTracker, p *v1.Pod) {
			cur := p.DeepCopy()
			cur.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
			_ = tr.Update(v1.SchemeGroupVersion.WithResource("pods"), cur, p.Namespace)
		}, false, Accepted},
		{"pod replaced under its name", func(tr k8stesting.ObjectTracker, p *v1.Pod) {
			_ = tr.Delete(v1.SchemeGroupVersion.WithResource("pods"), p.Namespace, p.Name)
			cur := p.DeepCopy()
			cur.UID = "other"
			_ = tr.Add(cur)
		}, false, Accepted},
		{"pod untouched", func(k8stesting.ObjectTracker, *v1.Pod) {}, false, Failed},
		{"dry run", func(k8stesting.ObjectTracker, *v1.Pod) {}, true, Failed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := readyPod("p", "rs", "a")
			client := fake.NewClientset(pod)
			client.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				tc.server(client.Tracker(), pod)
				return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
			})
			got, err := Request(context.Background(), client, pod, tc.dryRun)
			if got != tc.want || err == nil {
				t.Errorf("Request: %v, %v; want %v and the server's error", got, err, tc.want)
			}
		})
	}
}

// The room to hold is every eviction whose replacement the scheduler does
// not count yet, its target deleted or not, oldest first (the order the
// enforcer holds them in); one whose owner has a new pod bound holds none.
func TestReservations(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &cluster{pods: map[types.UID]*v1.Pod{}, replacement: ReplacedWhenReady}
	b := NewBook(enforcerv1alpha1.Limits{PerNode: 5, PerNamespace: 5, Total: 5})
	for _, e := range []struct {
		name string
		at   time.Duration
	}{{"c", 1}, {"a", 2}, {"d", 1}, {"b", 2}} {
		p := readyPod(e.name, "rs-"+e.name, "old")
		c.add(p)
		b.Add(NewInFlight(c, p, "gone-or-not", now.Add(e.at*time.Second)))
	}
	c.add(readyPod("d2", "rs-d", "new")) // d's replacement, bound
	var got []string
	for _, f := range b.Reservations(c) {
		got = append(got, f.Pod.Name)
	}
	if want := []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("reservations %v, want %v (by time, then UID; d's replacement is counted)", got, want)
	}
}

// ExistingOf marks an owner's pods by creation time: a pod created since
// is told from them, also in the newest second (whose pods are named), and
// a burst of more than MaxAtNewest pods in that second is taken whole.
func TestExistingOf(t *testing.T) {
	at := time.Unix(1_000, 0)
	mk := func(name string, created time.Time) *v1.Pod {
		p := readyPod(name, "rs", "n")
		p.CreationTimestamp = metav1.NewTime(created)
		return p
	}
	c := &cluster{pods: map[types.UID]*v1.Pod{}}
	c.add(mk("old", at.Add(-time.Minute)))
	c.add(mk("newest", at))
	x := ExistingOf(c, "rs")
	for _, tc := range []struct {
		pod  *v1.Pod
		want bool
	}{
		{c.pods["old"], true}, {c.pods["newest"], true},
		{mk("same-second", at), false},
		{mk("later", at.Add(time.Second)), false},
	} {
		if got := x.Has(tc.pod); got != tc.want {
			t.Errorf("Has(%s) = %v, want %v", tc.pod.Name, got, tc.want)
		}
	}
	for i := range MaxAtNewest + 1 {
		c.add(mk(fmt.Sprint("burst-", i), at))
	}
	over := ExistingOf(c, "rs")
	if len(over.AtNewest) != 0 || !over.Has(mk("same-second", at)) || over.Has(mk("later", at.Add(time.Second))) {
		t.Errorf("%+v: want no pod named, the burst's second taken whole, the next second's pods new", over)
	}
}

// Another actor's eviction (a pod terminating with the Eviction API's
// DisruptionTarget condition, not in the book) counts toward the caps for
// OtherEvictionsFor from its condition, and never after: ten pods stuck
// terminating since long ago hold nothing, ten recent ones hold the
// namespace's cap until the first of them ages out. The book's own
// evictions count whatever their age.
func TestOthersEvictionsCountForABoundedAge(t *testing.T) {
	now := time.Unix(100_000, 0)
	stuck := func(c *cluster, prefix string, at time.Time) {
		for i := range 10 {
			p := readyPod(prefix+string(rune('0'+i)), "drained", "x")
			p.Finalizers = []string{"example.com/hold"}
			p.DeletionTimestamp = &metav1.Time{Time: at.Add(30 * time.Second)}
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.NewTime(at.Add(time.Duration(i) * time.Second))})
			c.add(p)
		}
	}
	limits := enforcerv1alpha1.Limits{PerNode: 100, PerNamespace: 5, Total: 100, OtherEvictionsFor: &metav1.Duration{Duration: 5 * time.Minute}}
	candidate := readyPod("q", "rs", "a")

	c := &cluster{pods: map[types.UID]*v1.Pod{}}
	c.add(candidate)
	stuck(c, "old-", now.Add(-time.Hour))
	b := NewBook(limits)
	if hold, why, aging := b.CapReached(c, candidate, now); hold != "" || aging != 0 {
		t.Errorf("ten pods stuck terminating for an hour: held by %q (%s), aging %s; want not held", hold, why, aging)
	}

	recent := now.Add(-time.Minute)
	stuck(c, "new-", recent)
	hold, why, aging := b.CapReached(c, candidate, now)
	if hold != HoldPerNamespace || aging != 4*time.Minute {
		t.Fatalf("ten recent evictions: held by %q (%s), aging %s; want %s, the first aging out in 4m", hold, why, aging, HoldPerNamespace)
	}
	// 5 of the recent ones (the last) still count at 4m4s: the cap holds.
	if hold, why, _ := b.CapReached(c, candidate, recent.Add(5*time.Minute+4*time.Second)); hold != HoldPerNamespace {
		t.Errorf("five recent evictions inside the bound: held by %q (%s), want %s", hold, why, HoldPerNamespace)
	}
	if hold, why, _ := b.CapReached(c, candidate, recent.Add(5*time.Minute+5*time.Second)); hold != "" {
		t.Errorf("four recent evictions inside the bound: held by %q (%s), want not held", hold, why)
	}
	if hold, why, _ := b.CapReached(c, candidate, now.Add(time.Hour)); hold != "" {
		t.Errorf("every eviction aged out: held by %q (%s)", hold, why)
	}

	// 0: another actor's eviction never counts; the book's own always do.
	own := NewBook(enforcerv1alpha1.Limits{PerNode: 100, PerNamespace: 1, Total: 100, OtherEvictionsFor: &metav1.Duration{}})
	if hold, why, _ := own.CapReached(c, candidate, now); hold != "" {
		t.Errorf("otherEvictionsFor 0: held by %q (%s)", hold, why)
	}
	mine := readyPod("mine", "rs3", "y")
	c.add(mine)
	own.Add(NewInFlight(c, mine, "", now.Add(-9*time.Minute)))
	if hold, why, _ := own.CapReached(c, candidate, now); hold != HoldPerNamespace {
		t.Errorf("the book's eviction of 9 minutes ago: held by %q (%s), want %s", hold, why, HoldPerNamespace)
	}
}

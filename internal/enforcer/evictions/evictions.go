// Package evictions holds what the enforcer does once it has decided that a
// pod should go: the Eviction API request, and the book of its own
// evictions in flight, which the caps count, which keeps one pod per owner
// moving at a time, and which holds the room promised to each replacement
// until the scheduler counts the replacement itself. The enforcer's loop
// (package enforcer) decides who goes; this package says whether it may go
// now and asks the API server.
package evictions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// Result is how the API server answered an eviction request.
type Result int

const (
	Accepted Result = iota // the pod is being evicted
	DryRun                 // a dryRun=All request the server accepted
	Refused                // 429: a PodDisruptionBudget does not allow it now
	Gone                   // 404/409: the pod is gone or was replaced (UID precondition)
	Failed                 // any other error
)

// Request asks the Eviction API to evict pod, with its UID as a precondition
// (a pod re-created under the same name is another pod), and dryRun=All
// when dryRun is set. The error is the server's, for the report.
//
// Any other error than a refusal or the pod's absence leaves the outcome
// unknown: a request that timed out, or whose answer was lost on its way
// back, may have evicted the pod. The pod is read again, and if it is
// terminating or gone the result is Accepted (with the error): its
// replacement will need the room promised to it, and the eviction must
// hold its caps, or the next pass would promise that room twice.
func Request(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, dryRun bool) (Result, error) {
	res, err := request(ctx, client, pod, dryRun)
	if res == Failed && !dryRun && leaving(ctx, client, pod) {
		return Accepted, err
	}
	return res, err
}

// leaving: the API server says pod is terminating or gone (a pod of its
// name with another UID is another pod). A failed read says nothing.
func leaving(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) bool {
	cur, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	return err == nil && (cur.UID != pod.UID || cur.DeletionTimestamp != nil)
}

func request(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, dryRun bool) (Result, error) {
	uid := pod.UID
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	if dryRun {
		ev.DeleteOptions.DryRun = []string{metav1.DryRunAll}
	}
	err := client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, ev)
	switch {
	case err == nil && dryRun:
		return DryRun, nil
	case err == nil:
		return Accepted, nil
	case apierrors.IsTooManyRequests(err):
		return Refused, err
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return Gone, err
	}
	return Failed, err
}

// Cluster is what the book reads of the cluster: the enforcer's state, kept
// from its informers.
type Cluster interface {
	// Pod is the pod with uid, or nil.
	Pod(uid types.UID) *v1.Pod
	// Controlled are the pods whose controller is owner.
	Controlled(owner types.UID) sets.Set[types.UID]
	// Terminating are the pods with a deletion timestamp.
	Terminating() sets.Set[types.UID]
	// Counted: the scheduler's cache holds the pod (bound, not
	// terminating, not finished), so it counts the room the pod takes.
	Counted(pod *v1.Pod) bool
	// Replacement says how the pod's controller replaces it once it is
	// gone.
	Replacement(pod *v1.Pod) Replacement
}

// Replacement is how a pod's controller replaces an evicted pod: what the
// eviction waits for before it settles.
type Replacement int

const (
	// ReplacedWhenReady: the controller keeps a number of pods running
	// (a ReplicaSet, a StatefulSet): the eviction settles once the
	// scheduler counts a replacement and the owner has as many pods Ready
	// as before.
	ReplacedWhenReady Replacement = iota
	// ReplacedOnce: the controller runs pods to completion (a Job): its
	// other pods finish on their own, so the eviction settles once the
	// scheduler counts a replacement.
	ReplacedOnce
	// NotReplaced: the controller will not replace the pod (its Job has
	// finished, is suspended or is gone): the eviction settles once the
	// pod has gone, and holds no cap or room after that.
	NotReplaced
)

// InFlight is an eviction the enforcer made whose pod or owner has not
// settled yet.
type InFlight struct {
	// Pod is the evicted pod and Target the node its replacement was
	// promised ("" when none was).
	Pod    *v1.Pod
	Target string
	Owner  types.UID
	// Ready is how many of the owner's pods were Ready (the evicted one
	// included) when it was evicted: the eviction settles once as many
	// are Ready again, so a replacement its controller has not created
	// yet still counts as in flight.
	Ready int
	// Before marks the owner's pods at the eviction (pod included). Until
	// a pod of the owner created since is bound, the replacement takes no
	// room the scheduler counts, so its room is held (Reservations).
	Before Existing
	// At is when the eviction was asked for.
	At time.Time
	// Simulated: a dry run's eviction (the server accepted a dryRun=All
	// request). It counts against the caps, the owner's one-in-flight and
	// the room held for its replacement exactly as an accepted one; its
	// pod never leaves, so it settles only when the pod goes, its
	// violation clears (Forget) or Timeout passes. Never saved for a
	// successor: a dry run saves nothing.
	Simulated bool
}

// NewInFlight is the eviction of pod, whose replacement is promised
// target, asked for at now, as the cluster stands.
func NewInFlight(c Cluster, pod *v1.Pod, target string, now time.Time) InFlight {
	f := InFlight{Pod: pod, Target: target, At: now}
	if owner := metav1.GetControllerOf(pod); owner != nil {
		f.Owner = owner.UID
		f.Ready = readyOf(c, owner.UID)
		f.Before = ExistingOf(c, owner.UID)
	}
	return f
}

// Existing marks the pods an owner had at one moment by their creation
// time, so that a pod created since (a replacement) is told from them
// without listing them: its size does not grow with the owner's. Newest is
// the newest creation time among them; the apiserver's creation times have
// a second's granularity, so the pods created in that second are named
// (AtNewest). When more than MaxAtNewest share it, none is named and
// Newest is the next second: a pod created in the same second after the
// moment is then taken for an old one, which only holds a replacement's
// room and its caps longer (until a later pod or Timeout), never less.
type Existing struct {
	Newest   time.Time   `json:"newest,omitzero"`
	AtNewest []types.UID `json:"atNewest,omitempty"`
}

// MaxAtNewest bounds Existing.AtNewest.
const MaxAtNewest = 32

// ExistingOf marks owner's pods as the cluster holds them now.
func ExistingOf(c Cluster, owner types.UID) Existing {
	var x Existing
	for uid := range c.Controlled(owner) {
		created := c.Pod(uid).CreationTimestamp.Time
		switch {
		case created.After(x.Newest):
			x.Newest, x.AtNewest = created, append(x.AtNewest[:0], uid)
		case created.Equal(x.Newest):
			x.AtNewest = append(x.AtNewest, uid)
		}
	}
	if len(x.AtNewest) > MaxAtNewest {
		x.Newest, x.AtNewest = x.Newest.Add(time.Second), nil
	}
	slices.Sort(x.AtNewest)
	return x
}

// Has: pod was among the owner's pods when x was marked (or was created
// no later than the newest of them).
func (x Existing) Has(pod *v1.Pod) bool {
	created := pod.CreationTimestamp.Time
	return created.Before(x.Newest) || created.Equal(x.Newest) && slices.Contains(x.AtNewest, pod.UID)
}

// Timeout forgets an eviction whose owner never recovers its Ready count
// (scaled down, or its replacement cannot start), so that one stuck owner
// cannot hold a cap forever.
const Timeout = 10 * time.Minute

// Book is the enforcer's evictions in flight, kept across passes by the
// leader that made them.
type Book struct {
	limits    enforcerv1alpha1.Limits
	othersFor time.Duration
	inflight  map[types.UID]InFlight
}

// NewBook returns an empty book under limits.
func NewBook(limits enforcerv1alpha1.Limits) *Book {
	b := &Book{limits: limits, othersFor: enforcerv1alpha1.DefaultOtherEvictionsFor, inflight: map[types.UID]InFlight{}}
	if limits.OtherEvictionsFor != nil {
		b.othersFor = limits.OtherEvictionsFor.Duration
	}
	return b
}

// Add records the accepted eviction f (NewInFlight; or, for a new leader,
// its predecessor's, rebuilt from the record on the pod).
func (b *Book) Add(f InFlight) {
	b.inflight[f.Pod.UID] = f
}

// All are the evictions in flight.
func (b *Book) All() []InFlight {
	out := make([]InFlight, 0, len(b.inflight))
	for _, f := range b.inflight {
		out = append(out, f)
	}
	return out
}

// Has: the eviction of the pod with uid was accepted and has not settled.
func (b *Book) Has(uid types.UID) bool {
	_, ok := b.inflight[uid]
	return ok
}

// Forget drops a dry run's eviction of the pod with uid (its violation
// cleared) and reports whether there was one; an accepted eviction stays
// until it settles.
func (b *Book) Forget(uid types.UID) bool {
	if f, ok := b.inflight[uid]; ok && f.Simulated {
		delete(b.inflight, uid)
		return true
	}
	return false
}

// Settle forgets evictions whose pod is gone (or finished) and whose owner
// has every pod Ready again with the replacement counted by the scheduler,
// or will not replace the pod, or has not recovered within Timeout; and a
// dry run's evictions whose pod is gone or that are older than Timeout. It
// reports whether it forgot any: the room and caps they held are free.
func (b *Book) Settle(c Cluster, now time.Time) bool {
	n := len(b.inflight)
	for uid, f := range b.inflight {
		if f.Simulated {
			if p := c.Pod(uid); p == nil || finished(p) || now.Sub(f.At) > Timeout {
				delete(b.inflight, uid)
			}
			continue
		}
		if p := c.Pod(uid); p != nil && !finished(p) {
			continue
		}
		switch c.Replacement(f.Pod) {
		case NotReplaced:
			delete(b.inflight, uid)
			continue
		case ReplacedOnce:
			if b.replaced(c, f) {
				delete(b.inflight, uid)
				continue
			}
		}
		if now.Sub(f.At) > Timeout {
			delete(b.inflight, uid)
			continue
		}
		busy := false
		for puid := range c.Controlled(f.Owner) {
			if p := c.Pod(puid); !finished(p) && (p.DeletionTimestamp != nil || !PodReady(p)) {
				busy = true
			}
		}
		if !busy && readyOf(c, f.Owner) >= f.Ready && b.replaced(c, f) {
			delete(b.inflight, uid)
		}
	}
	return len(b.inflight) != n
}

// NextTimeout is how long until the first eviction in flight reaches
// Timeout (0: none in flight). A pod held back by a cap waits for an
// eviction to settle: its pod's or owner's events start the pass that
// sees it, and only Timeout needs a timer.
func (b *Book) NextTimeout(now time.Time) time.Duration {
	var next time.Duration
	for _, f := range b.inflight {
		d := f.At.Add(Timeout).Sub(now) + time.Millisecond // Settle's test is strict
		if d < time.Millisecond {
			d = time.Millisecond
		}
		if next == 0 || d < next {
			next = d
		}
	}
	return next
}

// replaced: a pod of f's owner that was not there at the eviction is in
// the scheduler's cache, so the scheduler counts the replacement itself. (A
// pod the owner adds for another reason, a scale-up, ends the hold as
// early; a scale-down that never replaces keeps it until Timeout: cautious,
// never a second promise.)
func (b *Book) replaced(c Cluster, f InFlight) bool {
	for uid := range c.Controlled(f.Owner) {
		if p := c.Pod(uid); !f.Before.Has(p) && c.Counted(p) {
			return true
		}
	}
	return false
}

// Reservations are the replacements whose room is still to be held in a
// placement: the evicted pod may be gone and its replacement Pending or not
// created, and neither takes room the scheduler counts, yet the room is
// spoken for. Without them a pass would promise the last free slots again
// and evict pods whose replacements then stay Pending. Oldest first; a
// reservation whose target is gone is still one (its replacement needs
// room elsewhere).
func (b *Book) Reservations(c Cluster) []InFlight {
	var out []InFlight
	for _, f := range b.inflight {
		if f.Target != "" && !b.replaced(c, f) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(x, y InFlight) int {
		if c := x.At.Compare(y.At); c != 0 {
			return c
		}
		return strings.Compare(string(x.Pod.UID), string(y.Pod.UID))
	})
	return out
}

// Hold names what holds a pod back from eviction: its owner's eviction in
// flight or not-Ready pod, or one of the Limits.
type Hold string

const (
	HoldOwner        Hold = "owner"
	HoldTotal        Hold = "limits.total"
	HoldPerNode      Hold = "limits.perNode"
	HoldPerNamespace Hold = "limits.perNamespace"
)

// OwnerBusy says why pod's owner already has a pod moving ("" when it has
// none): an eviction of ours (or, in a dry run, a simulated one) for this
// owner is still in flight, or another unfinished pod of the owner is not
// Ready or is terminating. One pod per owner in flight: the next goes once
// the last one's replacement is Ready.
func (b *Book) OwnerBusy(c Cluster, pod *v1.Pod, owner types.UID) string {
	for _, f := range b.inflight {
		if f.Owner == owner {
			return fmt.Sprintf("has the eviction of %s in flight", f.Pod.Name)
		}
	}
	for uid := range c.Controlled(owner) {
		other := c.Pod(uid)
		if other.UID != pod.UID && !finished(other) && (other.DeletionTimestamp != nil || !PodReady(other)) {
			return fmt.Sprintf("has pod %s not Ready or terminating", other.Name)
		}
	}
	return ""
}

// CapReached names the cap that holds pod back at now and says why ("":
// none). Evictions in flight are ours, as the book knows them (a dry
// run's simulated ones, and a predecessor's restored from the store,
// included), plus the pods terminating after someone else's eviction for
// Limits.OtherEvictionsFor from it: a pod stuck terminating (a finalizer,
// an unreachable node) is no disruption in progress and must not pin the
// caps. aging is how soon the first such eviction counted stops counting
// (0: none counted): no event marks it, so a pod held back needs a timer.
func (b *Book) CapReached(c Cluster, pod *v1.Pod, now time.Time) (hold Hold, why string, aging time.Duration) {
	node, ns, total := 0, 0, 0
	count := func(n, namespace string) {
		total++
		if n == pod.Spec.NodeName {
			node++
		}
		if namespace == pod.Namespace {
			ns++
		}
	}
	for _, f := range b.inflight {
		count(f.Pod.Spec.NodeName, f.Pod.Namespace)
	}
	for uid := range c.Terminating() {
		other := c.Pod(uid)
		if _, ours := b.inflight[uid]; ours || other.DeletionTimestamp == nil {
			continue
		}
		at, ok := evictedAt(other)
		if !ok {
			continue
		}
		left := at.Add(b.othersFor).Sub(now)
		if left <= 0 {
			continue
		}
		count(other.Spec.NodeName, other.Namespace)
		if aging == 0 || left < aging {
			aging = left
		}
	}
	switch {
	case total >= b.limits.Total:
		return HoldTotal, fmt.Sprintf("%s (%d evictions in flight)", HoldTotal, total), aging
	case node >= b.limits.PerNode:
		return HoldPerNode, fmt.Sprintf("%s (%d evictions in flight on %s)", HoldPerNode, node, pod.Spec.NodeName), aging
	case ns >= b.limits.PerNamespace:
		return HoldPerNamespace, fmt.Sprintf("%s (%d evictions in flight in %s)", HoldPerNamespace, ns, pod.Namespace), aging
	}
	return "", "", 0
}

// readyOf counts the owner's pods that are Ready and not terminating.
func readyOf(c Cluster, owner types.UID) int {
	n := 0
	for uid := range c.Controlled(owner) {
		if p := c.Pod(uid); p.DeletionTimestamp == nil && PodReady(p) {
			n++
		}
	}
	return n
}

// PodReady: the pod's Ready condition is True.
func PodReady(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// finished: the pod ran to completion or failed; its controller has
// already counted it, and it takes no room.
func finished(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// evictedAt is when the pod was evicted: its DisruptionTarget condition,
// which the Eviction API sets, turned True (the deletion's time when the
// condition carries none).
func evictedAt(pod *v1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type != v1.DisruptionTarget || c.Status != v1.ConditionTrue || !strings.Contains(c.Reason, "Eviction") {
			continue
		}
		if !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time, true
		}
		if pod.DeletionTimestamp != nil {
			return pod.DeletionTimestamp.Time, true
		}
		return time.Time{}, false
	}
	return time.Time{}, false
}

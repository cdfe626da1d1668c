package enforcer

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// RecordAnnotation is the leader's record on a violating pod: what a new
// leader (after a failover, a crash or an OOM restart) needs to continue
// rather than start over. Grace periods run from the first detection, not
// from the new leader's start; a refused eviction is not asked again before
// its backoff ends; and the node promised to an evicted pod's replacement
// stays held until the replacement is bound. Only the leader writes it, and
// it is removed once the violation clears. docs/enforcement.md describes
// its fields. Evictions in flight are kept beside the Lease instead
// (inflight.go): an evicted pod, and its annotations, may be gone before
// its replacement is bound.
const RecordAnnotation = "placement-scheduler.io/enforcement-record"

// podRecord is RecordAnnotation's value, as JSON.
type podRecord struct {
	// By is the Lease of the enforcer that wrote it (namespace/name): a
	// leader continues and clears only its own Lease's records.
	By string `json:"by"`
	// Leader and Term are the term of the leader that wrote it (its
	// identity and the Lease's leaderTransitions), and Mode whether it ran
	// live: a new leader continues only a live record of the term it took
	// over from without a gap (term.continues), and re-stamps it.
	Leader string `json:"leader,omitempty"`
	Term   int    `json:"term,omitempty"`
	Mode   string `json:"mode,omitempty"`
	// Since is when each violated rule's violation was first detected.
	Since map[enforcerv1alpha1.Rule]time.Time `json:"since,omitempty"`
	// RetryAfter: the last eviction request was answered State (Detail)
	// and is not asked again before RetryAfter; Backoff is the backoff
	// that set it, which the next refusal doubles.
	RetryAfter *time.Time      `json:"retryAfter,omitempty"`
	Backoff    metav1.Duration `json:"backoff,omitzero"`
	State      string          `json:"state,omitempty"`
	Detail     string          `json:"detail,omitempty"`
}

// Record modes: records are written by live leaders only (a dry run
// writes nothing), and a record of any other mode is never continued.
const (
	modeLive   = "live"
	modeDryRun = "dry-run"
)

// maxDetail bounds the refusal text kept in a record.
const maxDetail = 512

// recordOf is t's record at now; "" when there is nothing to record.
func (e *Enforcer) recordOf(uid types.UID, t *tracked, now time.Time) string {
	r := podRecord{By: e.records.by, Mode: modeLive}
	if e.cfg.DryRun {
		r.Mode = modeDryRun
	}
	if e.term != nil {
		r.Leader, r.Term = e.term.leader, e.term.transitions
	}
	if len(t.since) > 0 {
		r.Since = make(map[enforcerv1alpha1.Rule]time.Time, len(t.since))
		for rule, at := range t.since {
			r.Since[rule] = at.UTC()
		}
	}
	if t.last != nil && !t.retryAfter.IsZero() {
		// Kept after the retry time too: the next refusal doubles it.
		at := t.retryAfter.UTC()
		r.RetryAfter, r.State, r.Detail = &at, t.last.State, t.last.Detail
		r.Backoff.Duration = e.backoff.Get(string(uid))
		if len(r.Detail) > maxDetail {
			r.Detail = r.Detail[:maxDetail]
		}
	}
	if r.Since == nil && r.RetryAfter == nil {
		return ""
	}
	data, err := json.Marshal(r)
	if err != nil { // cannot happen for these types
		return ""
	}
	return string(data)
}

// restore rebuilds, from the records on the pods, the grace clocks and
// backoffs the previous leader kept for the pods still running, when this
// leader's term continues the one that wrote them. Any other record (a
// gap without a leader, a dry run's term in between, leader election
// off) is no clock to continue: its pod's grace period starts afresh, and
// the record is replaced or cleared as this leader's own.
func (e *Enforcer) restore(logger klog.Logger, s *clusterState, now time.Time) {
	for uid, pod := range s.pods {
		value, ok := pod.Annotations[RecordAnnotation]
		if !ok {
			continue
		}
		var r podRecord
		if err := json.Unmarshal([]byte(value), &r); err != nil {
			logger.Error(err, "Ignoring an unreadable enforcement record", "pod", klog.KObj(pod), "annotation", RecordAnnotation)
			continue
		}
		if r.By != e.records.by {
			continue // another enforcer's (another Lease): not ours to continue or clear
		}
		e.records.seen(pod, value)
		if pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if !e.term.continues(r) {
			logger.V(2).Info("Not continuing an enforcement record of another term", "pod", klog.KObj(pod), "record", value)
			continue
		}
		t := &tracked{since: map[enforcerv1alpha1.Rule]time.Time{}}
		for rule, at := range r.Since {
			t.since[rule] = at
		}
		if r.RetryAfter != nil && r.State != "" {
			t.retryAfter = *r.RetryAfter
			t.last = &violationsv1alpha1.Report{State: r.State, Detail: r.Detail}
			// The next refusal doubles the predecessor's backoff.
			id := string(uid)
			for i := 0; i < 64 && e.backoff.Get(id) < r.Backoff.Duration; i++ {
				e.backoff.Next(id, now)
			}
		}
		e.tracked[uid] = t
		logger.V(2).Info("Continuing from the enforcement record", "pod", klog.KObj(pod), "record", value)
	}
}

// keepRecords brings the records in line with what this leader knows after
// a pass: the stored evictions in flight follow the book, a tracked pod's
// record follows its grace clocks and backoff, and a running pod no longer
// tracked loses its record.
func (e *Enforcer) keepRecords(ctx context.Context, s *clusterState, now time.Time) {
	if e.records.off {
		return
	}
	// Settled evictions leave the store; a failed write is retried next
	// pass (an entry kept too long holds room too long, never too little).
	data, err := entries(e.book, e.loops, nil)
	if err == nil {
		err = e.flights.save(ctx, data)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Saving the evictions in flight")
	}
	for _, uid := range e.records.recorded() {
		pod := s.pods[uid]
		switch {
		case pod == nil:
			e.records.forget(uid)
		case e.tracked[uid] == nil && pod.DeletionTimestamp == nil && !e.book.Has(uid):
			e.records.set(ctx, pod, "")
		}
	}
	for uid, t := range e.tracked {
		pod := s.pods[uid]
		if pod == nil || pod.DeletionTimestamp != nil || e.book.Has(uid) {
			continue
		}
		e.records.set(ctx, pod, e.recordOf(uid, t, now))
	}
}

// records writes the leader's records on pods (RecordAnnotation) with a
// merge patch that carries the pod's UID (a pod re-created under the same
// name is another pod). They are written in the background, off the pass,
// at the client's pace: a record lost to a crash before it is written
// costs that pod one grace period more (or one backoff less: a PDB's 429
// asked again early is harmless), never an early eviction.
type records struct {
	client kubernetes.Interface
	// off: a dry run leaves the API objects as they are.
	off bool
	// by is the Lease the records are written under (podRecord.By).
	by string

	mu sync.Mutex
	// want are the values still to write ("": remove the annotation);
	// written the last written or seen ones.
	want    map[types.UID]recordWrite
	written map[types.UID]string
	// writing serialises patches, so that an older value never lands
	// after a newer one.
	writing sync.Mutex
	// queue feeds the background writer; nil (before start, and in the
	// package's tests) writes in the caller.
	queue workqueue.TypedRateLimitingInterface[types.UID]
}

type recordWrite struct {
	namespace, name, value string
}

func newRecords(client kubernetes.Interface, le enforcerv1alpha1.LeaderElection, off bool) *records {
	return &records{client: client, off: off, by: le.LeaseNamespace + "/" + le.LeaseName, want: map[types.UID]recordWrite{}, written: map[types.UID]string{}}
}

// start writes the records in the background until ctx ends. It is called
// before the first pass.
func (r *records) start(ctx context.Context) {
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
		workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: Component + "-records"})
	go func() { <-ctx.Done(); r.queue.ShutDown() }()
	go func() {
		logger := klog.FromContext(ctx)
		for {
			uid, shutdown := r.queue.Get()
			if shutdown {
				return
			}
			if err := r.flush(ctx, uid); err != nil {
				logger.Error(err, "Writing the enforcement record; retrying", "uid", uid)
				r.queue.AddRateLimited(uid)
			} else {
				r.queue.Forget(uid)
			}
			r.queue.Done(uid)
		}
	}()
}

// seen notes the value found on pod.
func (r *records) seen(pod *v1.Pod, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written[pod.UID] = value
}

// recorded are the pods with a record written, seen or still to write.
func (r *records) recorded() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]types.UID, 0, len(r.written)+len(r.want))
	for uid, v := range r.written {
		if _, queued := r.want[uid]; v != "" || queued {
			out = append(out, uid)
		}
	}
	for uid := range r.want {
		if _, ok := r.written[uid]; !ok {
			out = append(out, uid)
		}
	}
	return out
}

// forget drops a pod that is gone.
func (r *records) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.want, uid)
	delete(r.written, uid)
}

// set asks for pod's record to be value ("": none), in the background.
func (r *records) set(ctx context.Context, pod *v1.Pod, value string) {
	if r.off || !r.wanted(pod, value) {
		return
	}
	if r.queue != nil {
		r.queue.Add(pod.UID)
		return
	}
	if err := r.flush(ctx, pod.UID); err != nil {
		klog.FromContext(ctx).Error(err, "Writing the enforcement record", "pod", klog.KObj(pod))
	}
}

// wanted records value as pod's wanted record: false when it is already
// written.
func (r *records) wanted(pod *v1.Pod, value string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written[pod.UID] == value {
		delete(r.want, pod.UID)
		return false
	}
	r.want[pod.UID] = recordWrite{namespace: pod.Namespace, name: pod.Name, value: value}
	return true
}

// flush writes uid's wanted record, if any.
func (r *records) flush(ctx context.Context, uid types.UID) error {
	r.writing.Lock()
	defer r.writing.Unlock()
	r.mu.Lock()
	w, ok := r.want[uid]
	if ok && r.written[uid] == w.value {
		delete(r.want, uid)
		ok = false
	}
	r.mu.Unlock()
	if !ok {
		return nil
	}
	var value any // nil removes the annotation
	if w.value != "" {
		value = w.value
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": uid, "annotations": map[string]any{RecordAnnotation: value},
	}})
	if err != nil {
		return err
	}
	_, err = r.client.CoreV1().Pods(w.namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: Component})
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		delete(r.want, uid)
		delete(r.written, uid)
		return nil
	case apierrors.IsConflict(err) || apierrors.IsInvalid(err):
		// The UID did not match: the name is another pod's now.
		delete(r.want, uid)
		delete(r.written, uid)
		return err
	case err != nil:
		return err
	}
	r.written[uid] = w.value
	if r.want[uid] == w {
		delete(r.want, uid)
	}
	return nil
}

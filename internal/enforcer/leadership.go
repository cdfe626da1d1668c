package enforcer

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// A record on a pod (records.go) lets a new leader continue its
// predecessor's grace periods. That is sound only while someone was
// watching: a violation that cleared while no live leader ran (the
// enforcer scaled to 0, or a dry run, which writes nothing and so clears
// nothing) and came back later would otherwise be evicted at once, its
// grace period counted from the first detection days before. So a leader
// continues a record only when its own term followed, without a gap, the
// live term that wrote (or last re-stamped) it. Every live leader
// re-stamps the records it keeps, so a violation that lasts keeps its
// clock across any number of prompt failovers.

// term is a leader's term on the Lease: the holder and the Lease's
// leaderTransitions while it holds it.
type term struct {
	leader      string
	transitions int
	// follows is the term this one took over from without a gap (the
	// predecessor's last renewal, or its release, at most maxGap before
	// this term began); nil when there was a gap, no Lease before, or no
	// leader election.
	follows *predecessor
}

// predecessor is the term a leader took over from.
type predecessor struct {
	// leader is "" when the predecessor released the Lease (its identity
	// is gone from the Lease then): the term number alone names it.
	leader      string
	transitions int
}

// continues: this term follows, without a gap, the live term that wrote
// r. A nil term (leader election disabled) continues nothing: with no
// Lease, nothing says who ran before this process, nor when.
func (t *term) continues(r podRecord) bool {
	if t == nil || t.follows == nil || r.Mode != modeLive || r.Term != t.follows.transitions {
		return false
	}
	return t.follows.leader == "" || r.Leader == t.follows.leader
}

// maxGap is the longest a prompt failover from prev leaves the Lease
// without a leader: a crashed leader's Lease expires its lease duration
// (the one it wrote, or this replica's, whichever is longer) after the
// standby last saw it renewed; the standby sees a renewal and retries each
// within a jittered retryPeriod; and 5 s more allow for the API latency
// and the skew between the two nodes' clocks (the renewal time is the
// predecessor's clock, the takeover this replica's). A release is taken
// at the next retry.
func maxGap(le enforcerv1alpha1.LeaderElection, prev resourcelock.LeaderElectionRecord) time.Duration {
	expiry := max(le.LeaseDuration.Duration, time.Duration(prev.LeaseDurationSeconds)*time.Second)
	return expiry + 2*le.RetryPeriod.Duration + 5*time.Second
}

// takeover is the term acquired as rec, under le, after prev (nil: there
// was no Lease) was read from the Lease just before.
func takeover(prev *resourcelock.LeaderElectionRecord, rec resourcelock.LeaderElectionRecord, le enforcerv1alpha1.LeaderElection) *term {
	t := &term{leader: rec.HolderIdentity, transitions: rec.LeaderTransitions}
	if prev == nil || rec.AcquireTime.Sub(prev.RenewTime.Time) > maxGap(le, *prev) {
		return t
	}
	t.follows = &predecessor{leader: prev.HolderIdentity, transitions: prev.LeaderTransitions}
	return t
}

// termLock is the Lease lock leader election runs with: it remembers the
// record each Get read, so that once this replica acquires the Lease the
// predecessor's record (holder, term, last renewal or release) is known.
// A graceful release (ReleaseOnCancel) leaves the holder empty and the
// renewal time at the release: a takeover right after it is prompt.
type termLock struct {
	resourcelock.Interface
	le enforcerv1alpha1.LeaderElection

	mu   sync.Mutex
	last *resourcelock.LeaderElectionRecord
	term *term
}

func newTermLock(lock resourcelock.Interface, le enforcerv1alpha1.LeaderElection) *termLock {
	return &termLock{Interface: lock, le: le}
}

func (l *termLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		seen := *rec
		l.last = &seen
	case apierrors.IsNotFound(err):
		l.last = nil
	}
	return rec, raw, err
}

func (l *termLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, rec)
	if err == nil {
		l.took(nil, rec)
	}
	return err
}

func (l *termLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, rec)
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.mu.Lock()
		last := l.last
		l.mu.Unlock()
		l.took(last, rec)
	}
	return err
}

// took notes the term that began with rec; renewals (the same holder)
// keep the first.
func (l *termLock) took(prev *resourcelock.LeaderElectionRecord, rec resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		l.term = takeover(prev, rec, l.le)
	}
}

// current is this replica's term (nil before it acquires the Lease).
func (l *termLock) current() *term {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// lead starts a leader's term: the records restore continues are those t
// continues (nil: none).
func (e *Enforcer) lead(ctx context.Context, t *term) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.term = t
	logger := klog.FromContext(ctx)
	if t == nil || t.follows == nil {
		logger.Info("Took the Lease after a gap or from no predecessor: every grace period starts afresh")
		return
	}
	logger.Info("Took the Lease from its predecessor without a gap: continuing its records",
		"term", t.transitions, "predecessor", t.follows.leader, "predecessorTerm", t.follows.transitions)
}

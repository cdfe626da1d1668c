package enforcer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// staleAfterResyncs is how many resync periods a leader may go without a
// successful pass before its health check fails. The loop asks for a pass
// at least once a resync, events or not, so a healthy idle leader finishes
// one every resync plus that pass's own length; three leave room for two
// slow passes (a storm's first pass takes seconds at 5000 nodes), and a
// leader whose passes keep failing hands over after three resyncs.
const staleAfterResyncs = 3

// Timings of a leader's watch over its own loop.
const (
	// watchPeriod is how often the leader checks its own health.
	watchPeriod = time.Second
	// stopTimeout is how long a failed leader waits for its loop to
	// return before it releases the Lease anyway: every write of a pass
	// goes through the loop's context, cancelled by then.
	stopTimeout = 10 * time.Second
)

// errUnhealthy marks the end of a term the leader's health check decided.
var errUnhealthy = errors.New("health check failed")

// loopHealth is the leader's health, a healthz.HealthChecker: the decision
// loop reports its progress (the term begun, the cluster listed, a pass
// done, the loop gone) and Check judges it against two bounds. A replica
// that does not lead is healthy: it only waits for the Lease.
type loopHealth struct {
	clock clock.Clock
	// syncTimeout bounds the list of the cluster (cacheSyncTimeout) and
	// staleAfter the time without a successful pass once listed.
	syncTimeout, staleAfter time.Duration

	mu      sync.Mutex
	leading bool
	began   time.Time // the term's start
	listed  time.Time // when the informers synced; zero before
	passed  time.Time // the last successful pass's end; zero before
	// pending names what has not synced yet, for the failure's message.
	pending func() []string
	// exited is why the loop ended on its own; nil while it runs.
	exited error
}

var _ healthz.HealthChecker = &loopHealth{}

func newLoopHealth(clk clock.Clock, syncTimeout, resync time.Duration) *loopHealth {
	return &loopHealth{clock: clk, syncTimeout: syncTimeout, staleAfter: staleAfterResyncs * resync}
}

// Name is the check's name under /healthz, /livez and /readyz.
func (h *loopHealth) Name() string { return "enforcement-loop" }

// Check fails while this replica leads and its loop has exited, its
// informers have not synced within syncTimeout of the term's start, or no
// pass has succeeded within staleAfter (counted from the sync before the
// first pass).
func (h *loopHealth) Check(*http.Request) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.leading {
		return nil
	}
	if h.exited != nil {
		return fmt.Errorf("the decision loop has exited: %w", h.exited)
	}
	now := h.clock.Now()
	if h.listed.IsZero() {
		if d := now.Sub(h.began); d > h.syncTimeout {
			var what string
			if h.pending != nil {
				what = ": " + strings.Join(h.pending(), ", ")
			}
			return fmt.Errorf("informers not synced %s after taking the Lease (cacheSyncTimeout %s)%s", d.Round(time.Second), h.syncTimeout, what)
		}
		return nil
	}
	last := h.passed
	if last.IsZero() {
		last = h.listed
	}
	if d := now.Sub(last); d > h.staleAfter {
		return fmt.Errorf("no successful pass for %s (the bound is %d × resync, %s)", d.Round(time.Second), staleAfterResyncs, h.staleAfter)
	}
	return nil
}

// synced reports the informers synced, and pass a successful pass.
func (h *loopHealth) synced() { h.mark(&h.listed) }
func (h *loopHealth) pass()   { h.mark(&h.passed) }

func (h *loopHealth) mark(t *time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*t = h.clock.Now()
}

// term runs loop for one leader's term and watches its health. It returns
// nil once ctx ends; or the check's failure once it fails, after it has
// cancelled loop's context and waited for loop to return (stopTimeout at
// most), so that the caller releases the Lease only when nothing is being
// decided any more. pending names what has not synced yet.
func (h *loopHealth) term(ctx context.Context, pending func() []string, loop func(context.Context) error) error {
	h.mu.Lock()
	h.leading, h.began, h.listed, h.passed, h.pending, h.exited = true, h.clock.Now(), time.Time{}, time.Time{}, pending, nil
	h.mu.Unlock()
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := loop(loopCtx)
		if loopCtx.Err() == nil { // ended on its own: the check says so
			if err == nil {
				err = errors.New("returned")
			}
			h.mu.Lock()
			h.exited = err
			h.mu.Unlock()
		}
	}()
	err := h.watch(loopCtx, done)
	if err == nil { // the term is over: a replica that does not lead is healthy
		h.mu.Lock()
		h.leading = false
		h.mu.Unlock()
		return nil
	}
	klog.FromContext(ctx).Error(err, "Health check failed: stopping the decision loop, releasing the Lease")
	stop()
	select {
	case <-done:
	case <-h.clock.After(stopTimeout):
		klog.FromContext(ctx).Error(nil, "The decision loop did not stop; releasing the Lease anyway, its writes are cancelled", "after", stopTimeout)
	}
	return fmt.Errorf("%w: %w", errUnhealthy, err)
}

// watch checks h every watchPeriod, and at once when the loop returns
// (done), until ctx ends (nil) or the check fails (its error).
func (h *loopHealth) watch(ctx context.Context, done <-chan struct{}) error {
	for {
		if err := h.Check(nil); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			done = nil
		case <-h.clock.After(watchPeriod):
		}
	}
}

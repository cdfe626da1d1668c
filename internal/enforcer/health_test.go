package enforcer

import (
	"context"
	"errors"
	"fmt"
	"k8s.io/apiserver/pkg/server/healthz"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

const (
	testSyncTimeout = 5 * time.Minute
	testResync      = time.Minute
)

// healthRig is a loopHealth on a fake clock, and a term of it under way.
type healthRig struct {
	t     *testing.T
	clock *testingclock.FakeClock
	h     *loopHealth
	// ended receives what the term returned.
	ended chan error
	// loopCtx is the context the term's loop runs with, once it runs.
	loopCtx chan context.Context
}

func newHealthRig(t *testing.T) *healthRig {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	return &healthRig{t: t, clock: clk, h: newLoopHealth(clk, testSyncTimeout, testResync), ended: make(chan error, 1), loopCtx: make(chan context.Context, 1)}
}

// lead starts a term whose loop is body; pending names what has not synced.
func (r *healthRig) lead(ctx context.Context, body func(ctx context.Context, h *loopHealth) error) {
	pending := func() []string { return []string{"*v1.Job"} }
	go func() {
		r.ended <- r.h.term(ctx, pending, func(ctx context.Context) error {
			r.loopCtx <- ctx
			return body(ctx, r.h)
		})
	}()
	select {
	case <-r.loopCtx:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the term's loop did not start")
	}
}

// healthy asserts the check passes, failing says it fails with an error
// containing each of want.
func (r *healthRig) healthy(when string) {
	r.t.Helper()
	if err := r.h.Check(nil); err != nil {
		r.t.Errorf("%s: unhealthy: %v", when, err)
	}
}

func (r *healthRig) failing(when string, want ...string) {
	r.t.Helper()
	err := r.h.Check(nil)
	if err == nil {
		r.t.Fatalf("%s: healthy, want a failure", when)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			r.t.Errorf("%s: %v, want it to say %q", when, err, w)
		}
	}
}

// endsWith waits for the term to end (stepping the clock, so that the
// watch's timer fires) and asserts it returned a health failure saying
// want.
func (r *healthRig) endsWith(want string) {
	r.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-r.ended:
			if !errors.Is(err, errUnhealthy) || !strings.Contains(err.Error(), want) {
				r.t.Fatalf("the term ended with %v, want a health failure saying %q", err, want)
			}
			return
		case <-deadline:
			r.t.Fatalf("the term did not end (want %q)", want)
		case <-time.After(10 * time.Millisecond):
			r.clock.Step(watchPeriod)
		}
	}
}

// idle is a loop that waits for its context.
func idle(ctx context.Context, _ *loopHealth) error {
	<-ctx.Done()
	return ctx.Err()
}

// A replica that does not lead is healthy, before its first term and after
// one that ended with its context (the Lease lost, a shutdown).
func TestHealthStandby(t *testing.T) {
	r := newHealthRig(t)
	r.healthy("never led")
	r.clock.Step(time.Hour)
	r.healthy("never led, an hour on")
	ctx, cancel := context.WithCancel(context.Background())
	r.lead(ctx, idle)
	cancel()
	select {
	case err := <-r.ended:
		if err != nil {
			t.Fatalf("a term ended by its context returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the term did not end with its context")
	}
	r.clock.Step(time.Hour)
	r.healthy("after a term")
}

// Informers that never sync (an informer the RBAC forbids) fail the check
// once cacheSyncTimeout is over, naming them; the term ends with the
// failure and its loop's context is cancelled.
func TestHealthInformersNotSynced(t *testing.T) {
	r := newHealthRig(t)
	r.lead(context.Background(), idle)
	r.healthy("at the term's start")
	r.clock.Step(testSyncTimeout)
	r.healthy("listing for exactly cacheSyncTimeout")
	r.clock.Step(time.Second)
	r.failing("listing for longer than cacheSyncTimeout", "informers not synced", "cacheSyncTimeout 5m0s", "*v1.Job")
	r.endsWith("*v1.Job")
}

// A slow list that ends within the bound, and passes after it, stay
// healthy well beyond cacheSyncTimeout.
func TestHealthSlowListWithinBound(t *testing.T) {
	r := newHealthRig(t)
	r.lead(context.Background(), idle)
	r.clock.Step(testSyncTimeout - time.Second)
	r.h.synced()
	for i := range 10 {
		r.clock.Step(testResync)
		r.h.pass()
		r.healthy(fmt.Sprintf("passing every resync, pass %d", i))
	}
	r.clock.Step(staleAfterResyncs * testResync)
	r.healthy("the bound after the last pass")
}

// A loop that exits while its replica still leads (a judge it could not
// build) fails the check at once, with its error, and ends the term.
func TestHealthLoopExited(t *testing.T) {
	r := newHealthRig(t)
	r.lead(context.Background(), func(ctx context.Context, h *loopHealth) error {
		h.synced()
		return errors.New("building the judge: no profile")
	})
	r.endsWith("the decision loop has exited: building the judge: no profile")
	r.failing("after the loop exited", "building the judge")
}

// No successful pass for staleAfterResyncs × resync fails the check, from
// the sync when there was no pass at all.
func TestHealthStalePass(t *testing.T) {
	r := newHealthRig(t)
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	// A pass that never ends, deaf to its context.
	r.lead(context.Background(), func(context.Context, *loopHealth) error { <-stuck; return nil })
	r.h.synced()
	bound := staleAfterResyncs * testResync
	r.clock.Step(bound)
	r.healthy("synced, no pass yet, for exactly the bound")
	r.h.pass()
	r.clock.Step(bound)
	r.healthy("the bound after the last pass")
	r.clock.Step(time.Second)
	r.failing("longer than the bound after the last pass", "no successful pass for 3m1s", "3 × resync, 3m0s")
	// The loop does not return: the term still ends, after stopTimeout.
	r.endsWith("no successful pass")
}

// Synced but never a pass: the bound counts from the sync.
func TestHealthNoFirstPass(t *testing.T) {
	r := newHealthRig(t)
	r.lead(context.Background(), idle)
	r.h.synced()
	r.clock.Step(staleAfterResyncs*testResync + time.Second)
	r.failing("no pass since the sync", "no successful pass")
	r.endsWith("no successful pass")
}

// /healthz, /livez and /readyz serve the check: ok on a standby, 500 with
// the check named on a leader that failed it.
func TestHealthEndpoints(t *testing.T) {
	r := newRig(t, nil)
	serve := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		endpoints(r.e, []healthz.HealthChecker{r.e.health}, nil).ServeHTTP(rec, httptest.NewRequest("GET", path+"?verbose", nil))
		return rec.Code, rec.Body.String()
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := serve(path); code != 200 || !strings.Contains(body, "[+]enforcement-loop ok") {
			t.Errorf("%s on a standby: %d %s", path, code, body)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- r.e.health.term(context.Background(), nil, func(context.Context) error { return errors.New("gave up") })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errUnhealthy) {
			t.Fatalf("term: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the term did not end")
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if code, body := serve(path); code != 500 || !strings.Contains(body, "[-]enforcement-loop failed") {
			t.Errorf("%s on a leader whose loop exited: %d %s", path, code, body)
		}
	}
}

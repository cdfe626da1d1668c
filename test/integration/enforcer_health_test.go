package integration

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// A leader whose Jobs informer the RBAC forbids (evictJobPods set, its role
// the shipped one minus the Jobs rule) never lists the cluster: it fails
// its health check once cacheSyncTimeout is over, releases the Lease and
// exits 1, naming the informer; the standby, holding the shipped role,
// takes over at once (not after the Lease's expiry) and passes. The real
// binary, two processes on one Lease.
func TestEnforcerLeaderThatCannotListHandsOver(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	bin, err := env.EnforcerBinary()
	if err != nil {
		t.Fatal(err)
	}
	noJobs, _ := env.EnforcerIdentityWith(t, ns, "no-jobs", func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		return slices.DeleteFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "jobs") })
	})
	full, _ := env.EnforcerIdentityWith(t, ns, "full", nil)
	const (
		syncTimeout   = 10 * time.Second
		leaseDuration = 20 * time.Second
		// What the handover adds to the bound: the health watch's period,
		// the release and the process's exit.
		slack = 5 * time.Second
	)
	config := fmt.Sprintf("evictJobPods: true\ncacheSyncTimeout: %s\nleaderElection: {leaseNamespace: %s, leaseDuration: %s, renewDeadline: 15s, retryPeriod: 1s}\n",
		syncTimeout, ns, leaseDuration)
	lease := func(ctx context.Context) (*coordinationv1.Lease, error) {
		l, err := env.Client.CoordinationV1().Leases(ns).Get(ctx, "placement-scheduler-enforcer", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return l, err
	}
	holder := func(l *coordinationv1.Lease) string {
		if l == nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}

	leader := env.StartEnforcer(t, framework.EnforcerOptions{Name: "no-jobs", Binary: bin, Config: config, Kubeconfig: noJobs})
	var first *coordinationv1.Lease
	env.Poll(t, "the enforcer without Jobs to take the Lease", func(ctx context.Context) (bool, error) {
		if leader.Exited() {
			return false, fmt.Errorf("it exited before leading: %v", leader.Err())
		}
		l, err := lease(ctx)
		if err != nil || holder(l) == "" {
			return false, err
		}
		first = l
		return true, nil
	})
	acquired := first.Spec.AcquireTime.Time
	standby := env.StartEnforcer(t, framework.EnforcerOptions{Name: "full", Binary: bin, Config: config, Kubeconfig: full})
	// A standby is healthy; so is a leader still listing within the bound.
	env.Poll(t, "the standby's /healthz", func(context.Context) (bool, error) { return standby.Healthz() == nil, nil })
	if err := leader.Healthz(); err != nil && time.Since(acquired) < syncTimeout {
		t.Errorf("the leader, listing for %v (under cacheSyncTimeout): %v", time.Since(acquired), err)
	}

	// The leader gives up once the bound is over, and not before.
	select {
	case <-leader.Done():
	case <-time.After(time.Until(acquired.Add(syncTimeout + slack))):
		t.Fatalf("the leader without Jobs still runs %v after taking the Lease (cacheSyncTimeout %v)", time.Since(acquired), syncTimeout)
	}
	exited := time.Now()
	if d := exited.Sub(acquired); d < syncTimeout {
		t.Errorf("the leader gave up %v after taking the Lease, before cacheSyncTimeout (%v)", d, syncTimeout)
	}
	var exit *exec.ExitError
	if err := leader.Err(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("the leader exited with %v, want exit status 1", leader.Err())
	}
	want := regexp.MustCompile(`placement-enforcer: released the leader lease: health check failed: informers not synced .* \(cacheSyncTimeout 10s\): \*v1\.Job`)
	if log := leader.Log(); !want.MatchString(log) {
		t.Errorf("the leader's last words do not match %s:\n%s", want, leader.LogTail(20))
	}

	// The standby takes the released Lease within a few retry periods: far
	// sooner than the Lease's expiry would let it, and within the bound
	// the design promises (leaseDuration + cacheSyncTimeout after the
	// leader took it).
	var taken *coordinationv1.Lease
	env.Poll(t, "the standby to take the Lease", func(ctx context.Context) (bool, error) {
		l, err := lease(ctx)
		if err != nil || holder(l) == "" || holder(l) == holder(first) {
			return false, err
		}
		taken = l
		return true, nil
	})
	tookOver := taken.Spec.AcquireTime.Time
	if d := tookOver.Sub(exited); d > leaseDuration/2 {
		t.Errorf("the standby took the Lease %v after the leader exited: not released (leaseDuration %v)", d, leaseDuration)
	}
	if d := tookOver.Sub(acquired); d > leaseDuration+syncTimeout {
		t.Errorf("the standby took the Lease %v after the first leader did, over leaseDuration + cacheSyncTimeout (%v)", d, leaseDuration+syncTimeout)
	}
	t.Logf("leader took the Lease, gave up after %v; the standby took over %v after its exit",
		exited.Sub(acquired).Round(10*time.Millisecond), tookOver.Sub(exited).Round(10*time.Millisecond))

	// And it enforces: it lists (it may read Jobs), passes and stays healthy.
	env.Poll(t, "the new leader's first pass", func(context.Context) (bool, error) {
		if standby.Exited() {
			return false, fmt.Errorf("the new leader exited: %v", standby.Err())
		}
		m, err := standby.Metrics()
		if err != nil {
			return false, nil
		}
		return strings.Contains(m, "placement_enforcer_leader 1\n") &&
			!strings.Contains(m, "placement_enforcer_last_successful_pass_timestamp_seconds 0\n"), nil
	})
	if err := standby.Healthz(); err != nil {
		t.Errorf("the new leader after its first pass: %v", err)
	}
}

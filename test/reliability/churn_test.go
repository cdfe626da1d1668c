package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The lease timings of the churn test: shorter than kube-scheduler's
// defaults (15s/10s/2s) so that twenty failovers take minutes, not ten;
// each failover still waits out the dead leader's lease.
const (
	churnLease = "6s"
	churnRenew = "4s"
	churnRetry = "1s"
)

// failover is one SIGKILL of the leader and what followed.
type failover struct {
	kill       time.Time
	leaseMoved time.Time
	// underLoad: pods were still being created when it was killed.
	underLoad bool
}

// Three replicas of the real binary on our lease; the one that leads is
// SIGKILLed (no lease release, as on a node failure) at random moments,
// again and again, while a stream of pods with every constraint our plugins
// decide arrives; each killed replica is replaced at once, so three keep
// running. The apiserver's record must show every pod bound exactly once,
// by whichever replica led, to a node our Filter allows.
func TestLeaderChurnUnderLoad(t *testing.T) {
	pods := intKnob(t, "RELIABILITY_CHURN_PODS", 150, 2000)
	kills := intKnob(t, "RELIABILITY_CHURN_KILLS", 3, 20)
	nodes := intKnob(t, "RELIABILITY_CHURN_NODES", 10, 40)
	seed := uint64(intKnob(t, "RELIABILITY_SEED", int(time.Now().UnixNano()%1e9), int(time.Now().UnixNano()%1e9)))
	t.Logf("%d pods, %d kills, %d nodes, seed %d (RELIABILITY_SEED)", pods, kills, nodes, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	loadAtStart := loadAverage()

	opts := installation(t, leaseArgs(churnLease, churnRenew, churnRetry)...)
	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, fleet(ns, nodes)...)
	pool := &replicaPool{t: t, opts: opts}
	replicas := []*replica{pool.start(), pool.start(), pool.start()}
	leader := pool.waitForLeader(replicas)

	// Pods arrive at a steady pace, spread over about the time the kills
	// take (a kill every ~11s: a random delay, the lease running out, the
	// take-over); once the kills are done the rest arrive at once.
	pace := time.Duration(kills) * 11 * time.Second / time.Duration(max(pods, 1))
	killsDone := make(chan struct{})
	created := make(chan error, 1)
	go func() {
		created <- createStream(pods, pace, killsDone, func(i int) *v1.Pod { return mixedPod(ns, i, nodes) })
	}()
	creating := true

	var fos []failover
	for k := range kills {
		// A random moment in the leader's term: timers inject the fault,
		// nothing here waits for a condition by sleeping.
		select {
		case <-time.After(200*time.Millisecond + time.Duration(rng.Int64N(int64(4800*time.Millisecond)))):
		case err := <-created:
			created <- err
			creating = false
		}
		holder := env.LeaseHolder(t)
		fo := failover{kill: time.Now(), underLoad: creating}
		replicas[leader].Kill()
		replicas[leader] = pool.start()
		// The new holder stamps the lease with when it acquired it (its
		// clock is the host's, as the apiserver's audit timestamps are).
		env.Poll(t, fmt.Sprintf("kill %d: the lease to move from %q", k+1, holder), func(ctx context.Context) (bool, error) {
			l, err := env.Client.CoordinationV1().Leases(framework.Namespace).Get(ctx, framework.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			h := ptr.Deref(l.Spec.HolderIdentity, "")
			if h == "" || h == holder || l.Spec.AcquireTime == nil {
				return false, nil
			}
			fo.leaseMoved = l.Spec.AcquireTime.Time
			return true, nil
		})
		fos = append(fos, fo)
		leader = pool.waitForLeader(replicas)
		t.Logf("kill %d: lease moved after %v", k+1, fo.leaseMoved.Sub(fo.kill).Round(10*time.Millisecond))
	}
	close(killsDone)
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	waitAllBound(t, ns)

	// A killed leader may have bound a pod and died before sending its
	// event; nobody else may have skipped one.
	o := checkStream(t, ns, pods, true, streamRecord{missingEventOK: func(at time.Time) bool {
		for _, fo := range fos {
			if at.After(fo.kill.Add(-10*time.Second)) && at.Before(fo.kill.Add(2*time.Second)) {
				return true
			}
		}
		return false
	}})

	// Between a kill and the lease moving nobody leads: a successful
	// binding there (past the dead leader's last in-flight requests) would
	// be a standby binding without the lease.
	var leaseGaps, bindGaps []time.Duration
	underLoad := 0
	for i, fo := range fos {
		if fo.underLoad {
			underLoad++
		}
		leaseGaps = append(leaseGaps, fo.leaseMoved.Sub(fo.kill))
		if at, ok := o.firstBindAfter(fo.kill.Add(3 * time.Second)); ok && at.Before(fo.leaseMoved) {
			t.Errorf("kill %d: a pod was bound at %s, %v after the kill and before the lease moved (%v after): bound without the lease",
				i+1, at.Format(time.RFC3339Nano), at.Sub(fo.kill), fo.leaseMoved.Sub(fo.kill))
		}
		if at, ok := o.firstBindAfter(fo.leaseMoved); ok {
			bindGaps = append(bindGaps, at.Sub(fo.kill))
		}
	}
	panics := 0
	for _, r := range pool.all {
		panics += countPanics(r.Log())
	}
	if panics > 0 {
		t.Errorf("%d panics in the replicas' logs", panics)
	}
	report(t, fmt.Sprintf("leader churn | SIGKILL of the leader ×%d (%d under load; %d more replicas exited on their own, having lost the lease), 3 replicas, lease %s/%s/%s, %d nodes | %s | lease moved after kill %s; first bind after kill %s | panics %d | heap n/a (processes killed) | load %s → %s",
		kills, underLoad, pool.selfExits, churnLease, churnRenew, churnRetry, nodes, o, spread(leaseGaps), spread(bindGaps), panics, loadAtStart, loadAverage()))
}

// replicaPool starts replicas and keeps every one it started, for their
// logs.
type replicaPool struct {
	t    *testing.T
	opts framework.SchedulerOptions
	all  []*replica
	// selfExits counts replicas that exited without being killed: a leader
	// that cannot renew its lease within the renew deadline (a loaded
	// machine) stops leading and exits, as upstream's does.
	selfExits int
}

func (p *replicaPool) start() *replica {
	r := startReplica(p.t, p.opts, fmt.Sprintf("replica-%d", len(p.all)))
	p.all = append(p.all, r)
	return r
}

// waitForLeader waits until one running replica logs that it leads and
// returns its index; it replaces any replica that exited on its own. Only
// one can lead: a replica that loses the lease exits, and every earlier
// leader was killed.
func (p *replicaPool) waitForLeader(replicas []*replica) int {
	p.t.Helper()
	leader := -1
	env.Poll(p.t, "a running replica to lead", func(context.Context) (bool, error) {
		n := 0
		for i, r := range replicas {
			if r.Exited() {
				p.t.Logf("replica %d exited on its own (%v); log tail:\n%s", i, r.Err(), r.LogTail(10))
				p.selfExits++
				replicas[i] = p.start()
				continue
			}
			if r.isLeading() {
				leader = i
				n++
			}
		}
		if n > 1 {
			return false, fmt.Errorf("%d running replicas report leading", n)
		}
		return n == 1, nil
	})
	return leader
}

// waitForLeader waits until the one replica of a test leads; it must not
// exit.
func waitForLeader(t *testing.T, r *replica) {
	t.Helper()
	env.Poll(t, "the scheduler to lead", func(context.Context) (bool, error) {
		if r.Exited() {
			return false, fmt.Errorf("the scheduler exited (%v); log tail:\n%s", r.Err(), r.LogTail(40))
		}
		return r.isLeading(), nil
	})
}

// createStream creates pods 0..n-1 (pod(i) builds pod i), one every pace
// until fast is closed, then as fast as the apiserver takes them. A create
// that fails because the apiserver (or its etcd, or the way to it) is down
// is retried until it succeeds: the stream goes on through an outage.
func createStream(n int, pace time.Duration, fast <-chan struct{}, pod func(int) *v1.Pod) error {
	tick := time.NewTicker(max(pace, time.Millisecond))
	defer tick.Stop()
	for i := range n {
		select {
		case <-tick.C:
		case <-fast:
		}
		p := pod(i)
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, env.Timeout, true, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			switch {
			case err == nil:
				return true, nil
			case apierrors.IsAlreadyExists(err):
				// An earlier attempt went through but its answer was lost.
				return true, nil
			case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
				return false, err
			default:
				return false, nil
			}
		})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// countPanics counts panics a log reports: Go's own "panic:" and
// apimachinery's recovered "Observed a panic".
func countPanics(log string) int {
	return strings.Count(log, "\npanic:") + strings.Count(log, "Observed a panic")
}

// spread is "min/median/max (n)" of ds.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	s := slices.Sorted(slices.Values(ds))
	r := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	return fmt.Sprintf("min %s / median %s / max %s (n=%d)", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}

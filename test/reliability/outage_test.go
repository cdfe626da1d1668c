package reliability

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// One scheduler, a stream of pods, and in the middle of it kube-apiserver
// stopped, or its etcd stopped, or the network between the scheduler and
// the apiserver cut, for a while. The same scheduler process must carry on
// once the control plane is back and bind every pod, none twice, without a
// restart.
//
// Its lease timings outlast the outage (and a restarted apiserver's
// start-up): a leader that cannot renew its
// lease within the renew deadline stops leading and kube-scheduler (ours
// as upstream's) then exits, for its Deployment to restart it; with the
// shipped timings (15s/10s/2s) an outage longer than 10s ends the process
// that way.
func TestControlPlaneOutages(t *testing.T) {
	outage := durationKnob(t, "RELIABILITY_OUTAGE", 3*time.Second, 20*time.Second)
	// 0: the process is SIGKILLed, as in a crash, so the outage is what
	// was asked plus the start-up; else SIGTERM and this long to drain.
	grace := durationKnob(t, "RELIABILITY_STOP_GRACE", 0, 0)
	stopHow := "SIGKILL"
	if grace > 0 {
		stopHow = fmt.Sprintf("SIGTERM (SIGKILL after %v)", grace)
	}
	pods := intKnob(t, "RELIABILITY_OUTAGE_PODS", 40, 300)
	// A restarted apiserver is unavailable for the outage plus its own
	// shutdown and start-up, each of which can take tens of seconds on a
	// loaded 2-core machine.
	renew := outage + grace + 60*time.Second
	leaseDuration := renew + 10*time.Second
	lease := leaseArgs(leaseDuration.String(), renew.String(), "2s")
	leaseDesc := fmt.Sprintf("%v/%v/2s", leaseDuration, renew)

	for _, f := range []struct {
		name     string
		viaProxy bool
		// stopsAPIServer: the fault kills kube-apiserver, which can take
		// the audit records of the bindings it was answering with it.
		stopsAPIServer bool
		down, up       func(*tcpProxy) error
	}{
		{
			name:           "kube-apiserver stopped by " + stopHow,
			stopsAPIServer: true,
			down:           func(*tcpProxy) error { return env.StopControlPlaneProcess(framework.APIServerProcess, grace) },
			up:             func(*tcpProxy) error { return env.StartControlPlaneProcess(framework.APIServerProcess) },
		},
		{
			name: "etcd stopped by " + stopHow,
			down: func(*tcpProxy) error { return env.StopControlPlaneProcess(framework.EtcdProcess, grace) },
			up:   func(*tcpProxy) error { return env.StartControlPlaneProcess(framework.EtcdProcess) },
		},
		{
			name:     "network to the apiserver cut",
			viaProxy: true,
			down:     func(p *tcpProxy) error { p.cut(); return nil },
			up:       func(p *tcpProxy) error { p.heal(); return nil },
		},
	} {
		t.Run(f.name, func(t *testing.T) {
			loadAtStart := loadAverage()
			opts := installation(t, lease...)
			var proxy *tcpProxy
			if f.viaProxy {
				proxy = startProxy(t, apiserverHostPort(t))
				opts.Kubeconfig = viaProxy(t, opts.Kubeconfig, proxy)
			}
			ns := env.NewNamespace(t, nil)
			watch := watchPods(t, ns)
			nodes := 10
			env.CreateNodes(t, fleet(ns, nodes)...)
			sched := startReplica(t, opts, "outage")
			waitForLeader(t, sched)

			// The pods span about three outages; the fault comes once a
			// third of them are created.
			pace := 3 * outage / time.Duration(pods)
			third := pods / 3
			created := make(chan error, 2)
			go func() {
				created <- createStream(third, pace, nil, func(i int) *v1.Pod { return mixedPod(ns, i, nodes) })
			}()
			if err := <-created; err != nil {
				t.Fatal(err)
			}
			go func() {
				created <- createStream(pods-third, pace, nil, func(i int) *v1.Pod { return mixedPod(ns, third+i, nodes) })
			}()
			// Whatever happens, the control plane is whole again before the
			// cleanups (registered earlier, so run later) need it.
			down := true
			t.Cleanup(func() {
				if down {
					if err := f.up(proxy); err != nil {
						t.Errorf("ending the outage: %v", err)
					}
				}
			})
			downAt := time.Now()
			if err := f.down(proxy); err != nil {
				t.Fatal(err)
			}
			stoppedAt := time.Now()
			// The outage lasts this long, by a timer: the injected fault.
			<-time.After(outage - time.Since(downAt))
			if err := f.up(proxy); err != nil {
				t.Fatal(err)
			}
			down = false
			upAt := time.Now()
			// The apiserver answers again (a restarted etcd is running
			// before the apiserver has reconnected to it).
			if err := env.WaitForAPIServer(context.Background()); err != nil {
				t.Fatal(err)
			}
			readyAt := time.Now()
			stamp := func(at time.Time) string { return at.UTC().Format("15:04:05.000") }
			t.Logf("fault from %s (in effect %s) to %s; apiserver answering %s", stamp(downAt), stamp(stoppedAt), stamp(upAt), stamp(readyAt))
			if err := <-created; err != nil {
				t.Fatal(err)
			}
			waitAllBound(t, ns)
			if sched.Exited() {
				t.Fatalf("the scheduler exited (%v)", sched.Err())
			}
			rec := streamRecord{
				// Events are best-effort: the scheduler's event
				// broadcaster (client-go events) drops an event the
				// apiserver answered with an error (etcd away, or not
				// ready yet) and retries one that met no apiserver only
				// every 10-12.5 s, 12 times. So a pod bound before the
				// control plane answered again, or in the 30 s after
				// (two retries), may lack its Scheduled event; one bound
				// later may not. Bindings are checked from pod state and
				// the audit log, not from events.
				missingEventOK: func(at time.Time) bool { return at.Before(readyAt.Add(30 * time.Second)) },
				watch:          watch,
			}
			if f.stopsAPIServer {
				rec.apiserverDown = interval{downAt, readyAt}
			}
			o := checkStream(t, ns, pods, true, rec)
			recovery := "no bind after recovery"
			if at, ok := o.firstBindAfter(upAt); ok {
				recovery = at.Sub(upAt).Round(10 * time.Millisecond).String()
			}
			panics := countPanics(sched.Log())
			if panics > 0 {
				t.Errorf("%d panics in the scheduler's log", panics)
			}
			report(t, fmt.Sprintf("%s | 1 outage of %v, lease %s, %d nodes | %s | first bind %s after recovery (apiserver answering %v after); scheduler kept running (same PID) | panics %d | heap n/a | load %s → %s",
				f.name, upAt.Sub(downAt).Round(100*time.Millisecond), leaseDesc, nodes, o, recovery, readyAt.Sub(upAt).Round(10*time.Millisecond), panics, loadAtStart, loadAverage()))
		})
	}
}

// apiserverHostPort is the apiserver's host:port.
func apiserverHostPort(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// viaProxy writes a copy of kubeconfig whose server is the proxy.
func viaProxy(t testing.TB, kubeconfig string, p *tcpProxy) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.Addr()
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-via-proxy")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

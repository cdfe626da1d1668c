// Package examples runs every scenario folder under manifests/examples
// against a full local cluster (etcd, kube-apiserver, kube-controller-manager,
// upstream kube-scheduler, KWOK: test/framework with Options.Cluster) and
// the real placement-scheduler binary, and asserts what each folder's
// check/expect.yaml (and README.md, in words) promises. The examples are the
// fixtures, so the docs cannot drift.
package examples

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placement-scheduler/placement-scheduler/internal/examples"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The one cluster this test binary runs against, and the scheduler on it.
var (
	env    *framework.Env
	sched  *framework.Scheduler
	runner *examples.Runner
)

func TestMain(m *testing.M) {
	// The audit log: every eviction request, and what every enforcer (each
	// under a ServiceAccount of its own) asked and was answered.
	audit := framework.Audit{Requests: []string{"pods/eviction"}, ServiceAccounts: true}
	opts := framework.Options{Cluster: &framework.ClusterOptions{DefaultScheduler: true, KWOK: true}, AuditPolicy: audit.Policy()}
	os.Exit(framework.Main(m, opts, setup))
}

// setup starts placement-scheduler on the cluster and applies the fleet
// every example shares.
func setup(e *framework.Env) (stop func(), err error) {
	env = e
	// make run and make demo run this config too: the shipped profile and
	// the profile-pool example's second one.
	config, err := manifests.Example("profile-pool/scheduler-config.yaml")
	if err != nil {
		return nil, err
	}
	if sched, err = env.LaunchScheduler(framework.SchedulerOptions{Name: "examples", Config: config}); err != nil {
		return nil, err
	}
	// The enforcer too, as make run and make demo run it: the enforce-*
	// examples move pods while they run. It runs as an install runs it:
	// the shipped ServiceAccount, RBAC and admission policy, nothing more.
	identity, err := env.InstallEnforcerIdentity(context.Background(), 6*time.Hour)
	if err != nil {
		sched.Stop()
		return nil, err
	}
	stopEnforcer, err := startEnforcer(config, identity)
	if err != nil {
		sched.Stop()
		return nil, err
	}
	stop = func() {
		if err := stopEnforcer(); err != nil {
			fmt.Fprintln(os.Stderr, "placement-enforcer:", err)
		}
		sched.Stop()
	}
	if runner, err = examples.NewRunner(env.Config); err != nil {
		return stop, err
	}
	return stop, runner.ApplyFleet(context.Background(), manifests.Examples())
}

// TestExamples runs each folder in its own subtest, in parallel: every
// example keeps to its own namespaces and node pool.
func TestExamples(t *testing.T) {
	exs, err := examples.Load(manifests.Examples())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	results := map[string]error{}
	for _, ex := range exs {
		t.Run(ex.Name, func(t *testing.T) {
			t.Parallel()
			err := runner.Run(t.Context(), ex)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			results[ex.Name] = err
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		// The enforce-* examples' evictions asked nothing the shipped
		// RBAC and admission policy refuse.
		checkRights(t, framework.EnforcerUser)
		if !t.Failed() {
			return
		}
		rows, err := runner.Placements(context.Background(), exs)
		if err != nil {
			t.Logf("reading placements: %v", err)
		} else {
			var b strings.Builder
			_ = examples.PrintTable(&b, rows, results)
			t.Logf("placements at failure:\n%s", b.String())
		}
		t.Logf("placement-scheduler log tail:\n%s", sched.LogTail(40))
		if err := env.Exited(); err != nil {
			t.Logf("cluster components that died: %v", err)
		}
		t.Logf("component logs: %v", env.ComponentLogs())
	})
}

// TestClusterAlive guards the run: a component that died mid-run would
// turn failures into confusing timeouts.
func TestClusterAlive(t *testing.T) {
	if err := env.Exited(); err != nil {
		t.Fatal(err)
	}
	if sched.Exited() {
		t.Fatalf("placement-scheduler exited: %v", sched.Err())
	}
	// What `make run` prints is this log, on this cluster and config.
	if lines := framework.UnhandledErrors(sched.Log()); len(lines) > 0 {
		t.Errorf("placement-scheduler logged errors on a healthy cluster:\n%s", strings.Join(lines, "\n"))
	}
}

package reliability

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// acquiredLease is what kube-scheduler's leader election logs once it
// holds the lease. The Lease object names its holder by an identity
// (hostname_uuid) that no flag sets, so which process that is only its
// own log can say.
const acquiredLease = "Successfully acquired lease"

// replica is a placement-scheduler process and a channel closed when it
// logs that it leads.
type replica struct {
	*framework.Scheduler
	leading <-chan struct{}
}

// isLeading reports whether the replica logged that it leads.
func (r *replica) isLeading() bool {
	select {
	case <-r.leading:
		return true
	default:
		return false
	}
}

// installation is the shipped manifests applied to the control plane and
// the options to run the real binary as their Deployment does: its
// ServiceAccount's credentials, the ConfigMap's config, the container's
// args, plus extra args (e.g. leader-election timings).
func installation(t *testing.T, extra ...string) framework.SchedulerOptions {
	t.Helper()
	env.StopSharedScheduler()
	in := env.InstallManifests(t)
	return framework.SchedulerOptions{
		Kubeconfig: env.ServiceAccountKubeconfig(t, framework.Namespace, framework.Name),
		Config:     in.Config,
		Args:       in.SchedulerArgs(extra...),
	}
}

// startReplica starts a scheduler that StartScheduler stops when the test
// ends (a killed one is already gone).
func startReplica(t *testing.T, opts framework.SchedulerOptions, name string) *replica {
	t.Helper()
	w := &lineWatch{phrase: []byte(acquiredLease), found: make(chan struct{})}
	opts.Name, opts.Output = name, w
	return &replica{Scheduler: env.StartScheduler(t, opts), leading: w.found}
}

// lineWatch is an io.Writer that closes found once a line containing
// phrase has been written through it.
type lineWatch struct {
	phrase []byte
	found  chan struct{}

	mu      sync.Mutex
	partial []byte
	done    bool
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		if bytes.Contains(w.partial[:i], w.phrase) {
			w.done = true
			w.partial = nil
			close(w.found)
			return len(p), nil
		}
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

// leaseArgs are leader-election flags: lease duration, renew deadline,
// retry period.
func leaseArgs(duration, renew, retry string) []string {
	return []string{
		fmt.Sprintf("--leader-elect-lease-duration=%s", duration),
		fmt.Sprintf("--leader-elect-renew-deadline=%s", renew),
		fmt.Sprintf("--leader-elect-retry-period=%s", retry),
	}
}

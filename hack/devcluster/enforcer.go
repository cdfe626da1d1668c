package main

import (
	"path/filepath"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// startEnforcer runs placement-enforcer beside the scheduler, as the
// kustomize base runs it: its own Lease, the same scheduler config sched
// (nil: the shipped one), a 10 s grace period so that changes show quickly,
// and its HTTPS endpoints on 127.0.0.1:10261, with a self-signed
// certificate kept in dir/enforcer (so that it outlives a restart, and
// kubectl placement violations can verify it). The caller stops it.
func startEnforcer(binary string, env *framework.Env, sched []byte, dir string) (*framework.Enforcer, error) {
	certDir, err := filepath.Abs(filepath.Join(dir, "enforcer"))
	if err != nil {
		return nil, err
	}
	return env.LaunchEnforcer(framework.EnforcerOptions{
		Name:            "devcluster",
		Binary:          binary,
		Config:          "gracePeriod: {nodeAffinity: 10s, podAffinity: 10s, podAntiAffinity: 10s}",
		SchedulerConfig: sched,
		SecurePort:      10261, // the enforcer's default --secure-port
		CertDir:         certDir,
	})
}

package main

import (
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// startEnforcer runs placement-enforcer beside the scheduler, as the
// kustomize base runs it: its own Lease, the same scheduler config sched
// (nil: the shipped one), a 10 s grace period so that changes show quickly,
// and its endpoints on 127.0.0.1:10261. The caller stops it.
func startEnforcer(binary string, env *framework.Env, sched []byte) (*framework.Enforcer, error) {
	return env.LaunchEnforcer(framework.EnforcerOptions{
		Name:               "devcluster",
		Binary:             binary,
		Config:             "gracePeriod: {nodeAffinity: 10s, podAffinity: 10s, podAntiAffinity: 10s}",
		SchedulerConfig:    sched,
		MetricsBindAddress: enforcerAddr,
	})
}

// enforcerAddr is where the enforcer's endpoints listen (/violations,
// /metrics).
const enforcerAddr = "127.0.0.1:10261"

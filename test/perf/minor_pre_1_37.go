//go:build k8s1.35 || k8s1.36

package perf

import (
	"fmt"
	"time"
)

// podGroupMetrics is empty: scheduler_perf of 1.35 and 1.36 collects no pod
// group series by default. (1.36's scheduler has them, alpha behind gate
// GenericWorkload, but its defaultMetricsCollectorConfig does not name them;
// 1.35 has neither the series nor metrics.WaitingOnPreemptionResult.)
func podGroupMetrics() map[string]any { return nil }

// ownWorkloadsGap: test/perf/workloads passes its Deployments' parameters to
// the pod template through createPods' templateParams, which scheduler_perf
// gained in 1.37; before, it decodes test cases strictly and rejects the
// field, and renders pod templates with .Index and .Count only.
const ownWorkloadsGap = "scheduler_perf before 1.37 has no createPods templateParams, which our pod template needs"

// CheckPodsTimeout rejects a timeout: scheduler_perf before 1.37 has no
// WithPodsSchedulingTimeout, and every createPods op waits at most 10m.
func CheckPodsTimeout(d time.Duration) error {
	if d > 0 {
		return fmt.Errorf("a createPods timeout (%s) needs scheduler_perf 1.37 or newer (WithPodsSchedulingTimeout); "+
			"this line's waits 10m: leave it unset (BENCH_PODS_TIMEOUT=0)", d)
	}
	return nil
}

// CheckCPUProfiles rejects CPU profiles: scheduler_perf before 1.37 has no
// -perf-cpuprofile flag, and its test binary would stop at the unknown flag.
func CheckCPUProfiles(want bool) error {
	if want {
		return fmt.Errorf("CPU profiles of the measured op need scheduler_perf 1.37 or newer (-perf-cpuprofile); " +
			"leave BENCH_CPU_PROFILES unset on this line")
	}
	return nil
}

//go:build !k8s1.35 && !k8s1.36

package perf

import (
	"time"

	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// podGroupMetrics are the pod group series scheduler_perf 1.37 collects by
// default (its defaultMetricsCollectorConfig gained them in 1.37).
func podGroupMetrics() map[string]any {
	return map[string]any{
		"scheduler_podgroup_scheduling_attempt_duration_seconds": []map[string]any{
			{"label": "result", "values": []string{metrics.WaitingOnPreemptionResult, metrics.ScheduledResult, metrics.UnschedulableResult, metrics.ErrorResult}},
		},
		"scheduler_podgroup_scheduling_algorithm_duration_seconds": nil,
	}
}

// ownWorkloadsGap is empty: 1.37's scheduler_perf runs test/perf/workloads.
const ownWorkloadsGap = ""

// CheckPodsTimeout accepts any timeout: 1.37's scheduler_perf takes one
// (WithPodsSchedulingTimeout).
func CheckPodsTimeout(time.Duration) error { return nil }

// CheckCPUProfiles accepts CPU profiles: scheduler_perf has -perf-cpuprofile.
func CheckCPUProfiles(bool) error { return nil }

//go:build !k8s1.35 && !k8s1.36

package perf

import (
	"time"

	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/client-go/ktesting"
)

// withPrepareCheck runs check once scheduler_perf has built a workload's
// scheduler. (1.37 moved ktesting to test/utils/client-go/ktesting.)
func withPrepareCheck(check func() error) benchmark.SchedulerPerfOption {
	return benchmark.WithPrepareFn(func(ktesting.TContext) error { return check() })
}

// podsTimeoutOption is how long each createPods op waits for its pods; none
// for d <= 0 (scheduler_perf's 10m).
func podsTimeoutOption(d time.Duration) (benchmark.SchedulerPerfOption, error) {
	if d <= 0 {
		return nil, nil
	}
	return benchmark.WithPodsSchedulingTimeout(d), nil
}

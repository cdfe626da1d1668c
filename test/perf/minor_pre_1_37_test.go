//go:build k8s1.35 || k8s1.36

package perf

import (
	"time"

	benchmark "k8s.io/kubernetes/test/integration/scheduler_perf"
	"k8s.io/kubernetes/test/utils/ktesting"
)

// withPrepareCheck runs check once scheduler_perf has built a workload's
// scheduler. (Before 1.37 ktesting is test/utils/ktesting, and 1.35 names
// the hook's type PrepareFn rather than HookFn: a func literal fits both.)
func withPrepareCheck(check func() error) benchmark.SchedulerPerfOption {
	return benchmark.WithPrepareFn(func(ktesting.TContext) error { return check() })
}

// podsTimeoutOption: scheduler_perf before 1.37 takes no createPods timeout
// (CheckPodsTimeout refuses one); none for d <= 0.
func podsTimeoutOption(d time.Duration) (benchmark.SchedulerPerfOption, error) {
	return nil, CheckPodsTimeout(d)
}

//go:build !k8s1.35

package perf

// schedulingDurationGap is empty: scheduler_perf writes a SchedulingDuration
// data item since 1.36.
const schedulingDurationGap = ""

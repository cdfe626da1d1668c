//go:build k8s1.35

package perf

// schedulingDurationGap: 1.35's scheduler_perf writes no SchedulingDuration
// data item (its collector arrived in 1.36), so the report's measured-phase
// and share-of-ceiling tables are n/a on this line.
const schedulingDurationGap = "scheduler_perf before 1.36 has no SchedulingDuration collector"

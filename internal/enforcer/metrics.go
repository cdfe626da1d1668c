package enforcer

import (
	"k8s.io/component-base/metrics"
)

// enforcerMetrics are the enforcer's metrics, in a registry of its own (no
// global state): served on /metrics by the binary.
type enforcerMetrics struct {
	registry   metrics.KubeRegistry
	violations *metrics.GaugeVec
	evictions  *metrics.CounterVec
	latency    *metrics.HistogramVec
}

func newMetrics() *enforcerMetrics {
	m := &enforcerMetrics{
		registry: metrics.NewKubeRegistry(),
		violations: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem: "placement_enforcer", Name: "violations",
			Help:           "Pods violating an enforced placement rule, by rule and state, at the last judgement.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule", "state"}),
		evictions: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem: "placement_enforcer", Name: "evictions_total",
			Help:           "Eviction requests, by rule and result (evicted, dry-run, pdb-blocked, gone, error).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule", "result"}),
		latency: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem: "placement_enforcer", Name: "detect_to_evict_seconds",
			Help:           "Time from a violation's first judgement to its pod's accepted eviction, grace period included.",
			Buckets:        metrics.ExponentialBuckets(1, 2, 12),
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule"}),
	}
	m.registry.MustRegister(m.violations, m.evictions, m.latency)
	return m
}

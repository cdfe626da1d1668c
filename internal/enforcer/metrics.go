package enforcer

import (
	"context"

	"k8s.io/component-base/metrics"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
)

// metricsPrefix prefixes the enforcer's own metrics.
const metricsPrefix = "placement_enforcer"

// Eviction results, the result label of evictions_total beside the states
// of the same name (StateDryRun, StatePDBBlocked, StateError).
const (
	resultEvicted = "evicted"
	resultGone    = "gone"
)

// enforcerMetrics are the enforcer's metrics, in a registry of its own (no
// global state): served on /metrics by the binary.
type enforcerMetrics struct {
	registry   metrics.KubeRegistry
	violations *metrics.GaugeVec
	evictions  *metrics.CounterVec
	latency    *metrics.HistogramVec
	leader     *metrics.Gauge
	placements *metrics.Counter
	looping    *metrics.GaugeVec
	lastPass   *metrics.Gauge
}

func newMetrics() *enforcerMetrics {
	m := &enforcerMetrics{
		registry: metrics.NewKubeRegistry(),
		violations: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem: metricsPrefix, Name: "violations",
			Help:           "Pods violating an enforced placement rule, by rule and state, at the last judgement.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule", "state"}),
		evictions: metrics.NewCounterVec(&metrics.CounterOpts{
			Subsystem: metricsPrefix, Name: "evictions_total",
			Help:           "Eviction requests, by rule and result (evicted, dry-run, pdb-blocked, gone, error).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule", "result"}),
		latency: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Subsystem: metricsPrefix, Name: "detect_to_evict_seconds",
			Help:           "Time from a violation's first judgement to its pod's accepted eviction, grace period included.",
			Buckets:        metrics.ExponentialBuckets(1, 2, 12),
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule"}),
		leader: metrics.NewGauge(&metrics.GaugeOpts{
			Subsystem: metricsPrefix, Name: "leader",
			Help:           "1 while this replica holds the enforcer's Lease and passes run, else 0.",
			StabilityLevel: metrics.ALPHA,
		}),
		placements: metrics.NewCounter(&metrics.CounterOpts{
			Subsystem: metricsPrefix, Name: "placements_total",
			Help:           "Replacements placed with the scheduler's framework (a Filter over every node), whatever came of them: the bulk of a pass's cost.",
			StabilityLevel: metrics.ALPHA,
		}),
		looping: metrics.NewGaugeVec(&metrics.GaugeOpts{
			Subsystem: metricsPrefix, Name: "looping_owners",
			Help:           "Owners whose pods are not evicted for a rule because their evictions for it loop (state looping), by rule, at the last pass.",
			StabilityLevel: metrics.ALPHA,
		}, []string{"rule"}),
		lastPass: metrics.NewGauge(&metrics.GaugeOpts{
			Subsystem: metricsPrefix, Name: "last_successful_pass_timestamp_seconds",
			Help:           "When this replica last finished a pass without error, in seconds since the epoch; 0 if it never has.",
			StabilityLevel: metrics.ALPHA,
		}),
	}
	m.registry.MustRegister(m.violations, m.evictions, m.latency, m.leader, m.placements, m.looping, m.lastPass)
	// Every eviction series exists from the start, at 0, so that the first
	// error is an increase Prometheus sees (increase and rate ignore a
	// series' first sample) and the alert on it fires.
	for _, r := range enforcerv1alpha1.Rules() {
		for _, res := range []string{resultEvicted, violationsv1alpha1.StateDryRun, violationsv1alpha1.StatePDBBlocked, resultGone, violationsv1alpha1.StateError} {
			m.evictions.WithLabelValues(string(r), res)
		}
	}
	return m
}

// registerBuild adds placement_enforcer_build_info to the registry.
func (m *enforcerMetrics) registerBuild(info buildinfo.Info) {
	buildinfo.Register(m.registry.MustRegister, metricsPrefix, info)
}

// leading wraps a leader's loop so that the leader gauge is 1 exactly while
// the loop runs: from the Lease's acquisition until the loop ends, whether
// the Lease was lost or the loop gave up (a judge it could not build), so
// that a replica holding the Lease without passing counts as no leader.
func (m *enforcerMetrics) leading(loop func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		m.leader.Set(1)
		defer m.leader.Set(0)
		loop(ctx)
	}
}

package plugins

import (
	"strings"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// MetricsNamespace prefixes placement-scheduler's own metrics, so that they
// never collide with kube-scheduler's (scheduler_*) on the same /metrics.
const MetricsNamespace = "placement_scheduler"

// pluginPanics counts the panics Contain turned into Error statuses. It is
// a component-base metric, as kube-scheduler's own are: such a metric does
// nothing until registered, and RegisterMetrics registers it once with
// legacyregistry, the registry kube-scheduler's /metrics serves.
var pluginPanics = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace:      MetricsNamespace,
	Name:           "plugin_panics_total",
	Help:           "Number of panics in placement-scheduler's plugins that were contained (turned into an Error status for the pod's scheduling cycle instead of crashing the scheduler), by plugin and extension point. Any increase is a bug to report.",
	StabilityLevel: metrics.ALPHA,
}, []string{"plugin", "extension_point"})

var registerMetrics sync.Once

// RegisterMetrics registers placement-scheduler's metrics with
// legacyregistry. It is idempotent; Contain calls it, so every process that
// runs our plugins exports them.
func RegisterMetrics() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(pluginPanics)
	})
}

// panicPoint is the extension_point label of a panic at point: the point
// itself, except that the queueing hints ("QueueingHint(Node/Add)") are
// counted under their kind, which keeps the label's values a fixed set
// (the log line keeps the event).
func panicPoint(point string) string {
	kind, _, _ := strings.Cut(point, "(")
	return kind
}

// initPanicSeries creates plugin's series at zero for every extension
// point its wrapper contains, so that the first panic is an increase
// Prometheus sees (rate and increase ignore a series' first sample).
func initPanicSeries(plugin string, points []string) {
	for _, p := range points {
		pluginPanics.WithLabelValues(plugin, p)
	}
}

// Package alerts tests the chart's alerting rules as rules: it renders the
// PrometheusRule charts/placement-scheduler ships (with the helm binary
// `make helm` builds) and evaluates every alert with Prometheus' own rule
// evaluation (rules.AlertingRule on the PromQL engine) over synthetic series,
// minute by minute, the way a Prometheus server would.
//
// It is a module of its own: github.com/prometheus/prometheus brings
// dependencies (cloud SDKs, gRPC, OpenTelemetry) newer than, or absent from,
// the scheduler's module graph, which must stay on Kubernetes v1.37's.
// `make test-alerts` runs it (part of `make test`).
package alerts

package testutil

import (
	"maps"

	"k8s.io/component-base/metrics/legacyregistry"
)

// CounterValue reads the counter series name{labels} (exactly those
// labels) from legacyregistry, the registry kube-scheduler's /metrics
// serves; ok is false when there is no such series.
func CounterValue(name string, labels map[string]string) (v float64, ok bool, err error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		return 0, false, err
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if maps.Equal(got, labels) {
				return m.GetCounter().GetValue(), true, nil
			}
		}
	}
	return 0, false, nil
}

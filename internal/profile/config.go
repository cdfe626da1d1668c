package profile

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// LoadConfig decodes, defaults and validates a KubeSchedulerConfiguration
// the way kube-scheduler loads --config. source names it in errors.
func LoadConfig(data []byte, source string) (*config.KubeSchedulerConfiguration, error) {
	obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: not a KubeSchedulerConfiguration: %w", source, err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("%s: want kind KubeSchedulerConfiguration, got %s", source, gvk.Kind)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("%s: invalid KubeSchedulerConfiguration: %w", source, err)
	}
	return cfg, nil
}

// FilterPlugins returns the names of the plugins prof's framework runs at
// Filter, expanded as the framework expands multiPoint: those enabled at
// filter, and those enabled at multiPoint unless filter disables them by
// name or with "*". prof is a loaded profile (LoadConfig), whose
// multiPoint already holds the defaults it keeps; a name is returned
// whether or not its plugin has a Filter, which only the registry knows.
func FilterPlugins(prof *config.KubeSchedulerProfile) sets.Set[string] {
	out := sets.New[string]()
	if prof.Plugins == nil {
		return out
	}
	disabled := sets.New[string]()
	for _, p := range prof.Plugins.Filter.Disabled {
		disabled.Insert(p.Name)
	}
	if !disabled.Has("*") {
		for _, p := range prof.Plugins.MultiPoint.Enabled {
			if !disabled.Has(p.Name) {
				out.Insert(p.Name)
			}
		}
	}
	for _, p := range prof.Plugins.Filter.Enabled {
		out.Insert(p.Name)
	}
	return out
}

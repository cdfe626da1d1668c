package profile

import (
	"fmt"

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

package explain

import (
	"fmt"
	"strings"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// PickProfile returns the profile named name; with name empty, the profile
// whose schedulerName the pod asks for, or the only profile there is.
func PickProfile(cfg *config.KubeSchedulerConfiguration, name, podSchedulerName string) (*config.KubeSchedulerProfile, error) {
	var names []string
	for i := range cfg.Profiles {
		names = append(names, cfg.Profiles[i].SchedulerName)
	}
	find := func(n string) *config.KubeSchedulerProfile {
		for i := range cfg.Profiles {
			if cfg.Profiles[i].SchedulerName == n {
				return &cfg.Profiles[i]
			}
		}
		return nil
	}
	if name != "" {
		if p := find(name); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("--profile %q: no such profile; the config has %s", name, strings.Join(names, ", "))
	}
	if p := find(podSchedulerName); p != nil {
		return p, nil
	}
	if len(cfg.Profiles) == 1 {
		return &cfg.Profiles[0], nil
	}
	return nil, fmt.Errorf("the config has several profiles (%s) and none is the pod's schedulerName %q: pick one with --profile", strings.Join(names, ", "), podSchedulerName)
}

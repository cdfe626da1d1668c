package enforcer

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
)

// loadSchedulerConfig reads and loads the KubeSchedulerConfiguration at
// path (the config's schedulerConfig), as kube-scheduler loads --config,
// and refuses one the judge cannot stand in for (checkJudgeable).
func loadSchedulerConfig(path string) (*config.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schedulerConfig: %w", err)
	}
	sched, err := profile.LoadConfig(data, path)
	if err != nil {
		return nil, err
	}
	if err := checkJudgeable(sched); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sched, nil
}

// checkJudgeable refuses a profile whose Filter runs the in-tree
// NodeAffinity or InterPodAffinity. The judge holds a profile's pods to our
// PlacementNodeAffinity and PlacementInterPodAffinity, built with the args
// the profile gives them; a profile that places with the in-tree plugin
// gives its args (an addedAffinity, say) to that one, which the judge never
// reads, so the enforcer would hold the pods to rules other than those that
// placed them. Every such profile and plugin is named, in one line.
func checkJudgeable(cfg *config.KubeSchedulerConfiguration) error {
	var problems []string
	for i := range cfg.Profiles {
		prof := &cfg.Profiles[i]
		filters := profile.FilterPlugins(prof)
		for _, row := range plugins.Set() {
			if row.Name != nodeaffinity.Name && row.Name != interpodaffinity.Name || !filters.Has(row.Replaces) {
				continue
			}
			problems = append(problems, fmt.Sprintf("profile %q runs the in-tree %s, which the enforcer cannot judge with: "+
				"disable %s and enable %s in its place (plugins.multiPoint), with its args under that name, as manifests/scheduler-config.yaml does",
				prof.SchedulerName, row.Replaces, row.Replaces, row.Name))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// profileRules are the rules prof's own Filter applies, so the enforcer
// holds its pods to them: node affinity (nodeSelector, required node
// affinity, addedAffinity) when it runs PlacementNodeAffinity, pod affinity
// and anti-affinity when it runs PlacementInterPodAffinity. A rule its
// scheduler never applies is never enforced: the replacement of a pod
// evicted for it would be placed in violation again, and evicted again,
// forever.
func profileRules(prof *config.KubeSchedulerProfile) RuleSet {
	filters := profile.FilterPlugins(prof)
	var out RuleSet
	if filters.Has(nodeaffinity.Name) {
		out |= ruleBit(enforcerv1alpha1.NodeAffinity)
	}
	if filters.Has(interpodaffinity.Name) {
		out |= ruleBit(enforcerv1alpha1.PodAffinity) | ruleBit(enforcerv1alpha1.PodAntiAffinity)
	}
	return out
}

// logUnenforced says, once per profile, which rules the enforcer will not
// enforce for its pods and why (profileRules), whatever the pods opt in to.
func logUnenforced(logger klog.Logger, cfg *config.KubeSchedulerConfiguration) {
	for i := range cfg.Profiles {
		prof := &cfg.Profiles[i]
		enforced := profileRules(prof)
		for _, r := range enforcerv1alpha1.Rules() {
			if enforced.Has(r) {
				continue
			}
			plugin := nodeaffinity.Name
			if r != enforcerv1alpha1.NodeAffinity {
				plugin = interpodaffinity.Name
			}
			logger.Info("Not enforcing a rule for a profile: its Filter does not run the plugin that applies it, so its scheduler would place a replacement in violation again",
				"profile", prof.SchedulerName, "rule", r, "plugin", plugin)
		}
	}
}

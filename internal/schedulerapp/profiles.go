package schedulerapp

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkplugins "k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// CheckConfigFile loads a --config file the way kube-scheduler does
// (options.LoadConfigFromFile: decoded, converted, defaulted) and runs
// CheckProfiles on it. A file kube-scheduler cannot load is left to
// kube-scheduler, whose error for it is the precise one: CheckConfigFile
// then returns nil.
func CheckConfigFile(logger klog.Logger, path string) error {
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	cfg, err := options.LoadConfigFromFile(logger, path)
	if err != nil {
		return nil
	}
	return CheckProfiles(cfg)
}

// CheckProfiles rejects profile shapes that kube-scheduler accepts but that
// make our plugins misbehave silently, each with an error naming the
// profile, the plugin and the fix:
//
//   - one of ours and the in-tree plugin it replaces both enabled (in one
//     slot, or ours added to a profile that keeps the defaults because "*"
//     is not disabled): every node is filtered twice, the reason a node
//     reports depends on which runs first, and both add their score
//     weights, so placements differ from upstream's;
//   - a plugin listed twice at one extension point (kube-scheduler's own
//     error, "already registered as ...", does not say what to do);
//   - a plugin name nothing registers (kube-scheduler says it "does not
//     exist"; we add the closest registered name);
//   - two profiles with one schedulerName (kube-scheduler's message does
//     not name it);
//   - args under the in-tree name (e.g. copied from an upstream config)
//     when only ours is enabled: kube-scheduler accepts them and nothing
//     reads them, so ours silently runs with defaults.
//
// It does not reject ours enabled after the other defaults (the in-tree ones
// disabled by name, "*" not): that is a valid profile whose filter order
// differs from upstream's (docs/operations.md, "Configuring a profile"), which only
// the shipped-config test holds our own configs to.
func CheckProfiles(cfg *config.KubeSchedulerConfiguration) error {
	var errs []error
	registered := frameworkplugins.NewInTreeRegistry()
	for name := range plugins.All() {
		registered[name] = nil
	}
	names := map[string]int{}
	for i, prof := range cfg.Profiles {
		if j, ok := names[prof.SchedulerName]; ok {
			errs = append(errs, fmt.Errorf("profiles[%d].schedulerName: %q is also the name of profiles[%d]: give each profile its own schedulerName", i, prof.SchedulerName, j))
		}
		names[prof.SchedulerName] = i
		if prof.Plugins == nil {
			continue
		}
		where := fmt.Sprintf("profile %q", prof.SchedulerName)
		enabled := map[string]bool{}
		for _, set := range pluginSets(prof.Plugins) {
			seen := map[string]bool{}
			for _, p := range set.set.Enabled {
				if _, ok := registered[p.Name]; !ok && p.Name != "*" {
					errs = append(errs, fmt.Errorf("%s: plugins.%s.enabled: no plugin is named %q%s", where, set.name, p.Name, suggest(p.Name, registered)))
				}
				if seen[p.Name] {
					errs = append(errs, fmt.Errorf("%s: plugins.%s.enabled lists %q twice: list it once (give its weight there)", where, set.name, p.Name))
				}
				seen[p.Name] = true
				enabled[p.Name] = true
			}
		}
		configured := map[string]bool{}
		for _, pc := range prof.PluginConfig {
			configured[pc.Name] = true
		}
		for _, row := range plugins.Set() {
			if enabled[row.Name] && enabled[row.Replaces] {
				errs = append(errs, fmt.Errorf("%s: %s replaces the in-tree %s, but both are enabled, so both would run on every pod: "+
					"disable %s in this profile (plugins.multiPoint.disabled), or disable \"*\" and list every plugin as manifests/scheduler-config.yaml does",
					where, row.Name, row.Replaces, row.Replaces))
			}
			if enabled[row.Name] && !enabled[row.Replaces] && configured[row.Replaces] && !configured[row.Name] {
				errs = append(errs, fmt.Errorf("%s: pluginConfig has args for %s, which is not enabled, so nothing would read them: "+
					"%s takes the same args; name the entry %s", where, row.Replaces, row.Name, row.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// suggest returns `: did you mean "X"?` for the registered name closest to
// name (case-insensitive edit distance at most 3), else the list of ours.
func suggest(name string, registered frameworkruntime.Registry) string {
	best, bestDist := "", 4
	for r := range registered {
		if d := editDistance(strings.ToLower(name), strings.ToLower(r)); d < bestDist || d == bestDist && r < best {
			best, bestDist = r, d
		}
	}
	if best != "" {
		return fmt.Sprintf(": did you mean %q?", best)
	}
	var ours []string
	for _, p := range plugins.Set() {
		ours = append(ours, p.Name)
	}
	return fmt.Sprintf(" (ours are %s; the in-tree ones are kube-scheduler's)", strings.Join(ours, ", "))
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

type namedSet struct {
	name string
	set  *config.PluginSet
}

func pluginSets(p *config.Plugins) []namedSet {
	return []namedSet{
		{"preEnqueue", &p.PreEnqueue}, {"queueSort", &p.QueueSort}, {"preFilter", &p.PreFilter},
		{"filter", &p.Filter}, {"postFilter", &p.PostFilter}, {"preScore", &p.PreScore}, {"score", &p.Score},
		{"reserve", &p.Reserve}, {"permit", &p.Permit}, {"preBind", &p.PreBind}, {"bind", &p.Bind},
		{"postBind", &p.PostBind}, {"multiPoint", &p.MultiPoint},
	}
}

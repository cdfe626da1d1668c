package enforcer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// The enforcer refuses, at start-up, a scheduler configuration with a
// profile whose Filter runs the in-tree NodeAffinity or InterPodAffinity:
// one line naming the file, each such profile and plugin, and the fix.
// Profiles that run ours only load.
func TestSchedulerConfigMustRunOurAffinityPlugins(t *testing.T) {
	head := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
	for _, tc := range []struct {
		name    string
		config  string
		want    []string // each in the error; none: the config loads
		notWant []string
	}{{
		name:   "the shipped config",
		config: string(manifests.SchedulerConfig()),
	}, {
		name:   "two profiles of ours, one with args",
		config: testSchedulerConfig,
	}, {
		// No plugins given: upstream's defaults, the in-tree plugins both.
		name:   "upstream's default plugins",
		config: head + "  - schedulerName: plain\n",
		want: []string{
			`profile "plain" runs the in-tree NodeAffinity, which the enforcer cannot judge with: disable NodeAffinity and enable PlacementNodeAffinity in its place (plugins.multiPoint)`,
			`profile "plain" runs the in-tree InterPodAffinity, which the enforcer cannot judge with: disable InterPodAffinity and enable PlacementInterPodAffinity in its place`,
			"as manifests/scheduler-config.yaml does",
		},
	}, {
		// Ours added, but "*" not disabled: the defaults stay, in-tree
		// ones included. The good profile before it is not named.
		name: "ours beside the defaults",
		config: head + "  - schedulerName: good\n    plugins:" + ourPlugins + "\n" +
			"  - schedulerName: both\n    plugins:\n      multiPoint:\n        enabled: [{name: PlacementNodeAffinity}, {name: PlacementInterPodAffinity}]\n",
		want:    []string{`profile "both" runs the in-tree NodeAffinity`, `profile "both" runs the in-tree InterPodAffinity`},
		notWant: []string{`"good"`},
	}, {
		// The in-tree plugin enabled at filter alone still decides there.
		name:    "the in-tree InterPodAffinity at filter",
		config:  head + "  - schedulerName: mixed\n    plugins:" + ourPlugins + "\n      filter:\n        enabled: [{name: InterPodAffinity}]\n",
		want:    []string{`profile "mixed" runs the in-tree InterPodAffinity`},
		notWant: []string{"in-tree NodeAffinity"},
	}, {
		// Ours after the other defaults, the in-tree ones disabled by
		// name ("*" not): a valid profile (docs/operations.md) that
		// filters with ours only.
		name: "the in-tree ones disabled by name",
		config: head + "  - schedulerName: by-name\n    plugins:\n      multiPoint:\n" +
			"        enabled: [{name: PlacementNodeAffinity}, {name: PlacementInterPodAffinity}]\n" +
			"        disabled: [{name: NodeAffinity}, {name: InterPodAffinity}]\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "scheduler-config.yaml")
			if err := os.WriteFile(path, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := loadSchedulerConfig(path)
			if len(tc.want) == 0 {
				if err != nil || cfg == nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("loaded, want it refused")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, path+": ") {
				t.Errorf("error is not one line starting with the file's path:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error names %q:\n%s", w, msg)
				}
			}
		})
	}
}

package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/internal/schedulerapp"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// configOptions writes configYAML, pointed at the control plane, to a file
// and returns kube-scheduler's options parsed from `--config <file>
// --secure-port 0`, and the file's path.
func configOptions(t *testing.T, configYAML []byte) (*options.Options, string) {
	t.Helper()
	cfg, err := framework.PointConfigAt(configYAML, env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	opts := options.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{"--config", path, "--secure-port", "0"}); err != nil {
		t.Fatal(err)
	}
	return opts, path
}

// setupConfig runs kube-scheduler's app.Setup, the code path the binary
// takes from --config to a built scheduler, with our plugins registered.
func setupConfig(t *testing.T, configYAML []byte) (map[string]*config.Plugins, error) {
	t.Helper()
	opts, path := configOptions(t, configYAML)
	// What cmd/scheduler runs before app.Setup.
	if err := schedulerapp.CheckConfigFile(klog.Background(), path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, sched, err := app.Setup(ctx, opts, schedulerapp.Options()...)
	if err != nil {
		return nil, err
	}
	got := map[string]*config.Plugins{}
	for name, fw := range sched.Profiles {
		got[name] = fw.ListPlugins()
	}
	return got, nil
}

// upstreamDefaultPlugins is the expanded plugin set of kube-scheduler's own
// default profile, derived from the defaulting code, with the four in-tree
// plugins renamed to ours: what every profile we ship must equal.
func upstreamDefaultPlugins(t *testing.T) *config.Plugins {
	t.Helper()
	got, err := setupConfig(t, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {leaderElect: false}\n"))
	if err != nil {
		t.Fatalf("app.Setup of the default config: %v", err)
	}
	def := got["default-scheduler"]
	if def == nil {
		t.Fatalf("default config has no default-scheduler profile: %v", got)
	}
	inTreeToOurs := map[string]string{}
	for _, p := range plugins.Set() {
		inTreeToOurs[p.Replaces] = p.Name
	}
	renamed := 0
	for _, set := range pluginSets(def) {
		for i := range set.Enabled {
			if ours, ok := inTreeToOurs[set.Enabled[i].Name]; ok {
				set.Enabled[i].Name = ours
				renamed++
			}
		}
	}
	if renamed == 0 {
		t.Fatal("upstream default profile contains none of the plugins we replace")
	}
	return def
}

func pluginSets(p *config.Plugins) []*config.PluginSet {
	return []*config.PluginSet{&p.PreEnqueue, &p.QueueSort, &p.PreFilter, &p.Filter, &p.PostFilter,
		&p.PreScore, &p.Score, &p.Reserve, &p.Permit, &p.PreBind, &p.Bind, &p.PostBind, &p.MultiPoint}
}

// schedulerConfigs lists every KubeSchedulerConfiguration YAML the manifests
// package ships, by path under manifests/, as this build's line has it
// (manifests.Read: an older line's folder overrides a file).
func schedulerConfigs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(manifests.Files(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && path == "lines" {
			return fs.SkipDir
		}
		if err != nil || d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return err
		}
		b, err := manifests.Read(path)
		if err != nil {
			return err
		}
		var head struct{ Kind string }
		if yaml.Unmarshal(b, &head) == nil && head.Kind == "KubeSchedulerConfiguration" {
			out["manifests/"+path] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no KubeSchedulerConfiguration under manifests/")
	}
	return out
}

// Every config we ship builds, and each of its profiles has exactly
// upstream's default plugin set and order at every extension point, with our
// four plugins in the in-tree slots and the same weights.
func TestShippedConfigsMatchUpstreamPluginOrder(t *testing.T) {
	want := upstreamDefaultPlugins(t)
	for path, b := range schedulerConfigs(t) {
		t.Run(path, func(t *testing.T) {
			got, err := setupConfig(t, b)
			if err != nil {
				t.Fatalf("app.Setup: %v", err)
			}
			if len(got) == 0 {
				t.Fatal("no profiles")
			}
			for profile, p := range got {
				if diff := cmp.Diff(want, p); diff != "" {
					t.Errorf("profile %q plugins differ from upstream's default order (-want +got):\n%s", profile, diff)
				}
			}
		})
	}
}

// A bad config fails at start-up with an error that names the field.
func TestBadConfigFailsNamingTheField(t *testing.T) {
	shipped := string(manifests.SchedulerConfig())
	edit := func(old, new string) []byte {
		t.Helper()
		if !strings.Contains(shipped, old) {
			t.Fatalf("shipped config no longer contains %q; update this test", old)
		}
		return []byte(strings.Replace(shipped, old, new, 1))
	}
	cases := []struct {
		name    string
		config  []byte
		wantErr []string
	}{{
		name:    "unknown field in the profile",
		config:  edit("    plugins:\n", "    pluginz: {}\n    plugins:\n"),
		wantErr: []string{`unknown field "profiles[0].pluginz"`},
	}, {
		name:    "invalid top-level value",
		config:  edit("leaderElection:\n", "percentageOfNodesToScore: 150\nleaderElection:\n"),
		wantErr: []string{"percentageOfNodesToScore", "150"},
	}, {
		name:    "unknown field in our plugin args",
		config:  edit("          hardPodAffinityWeight: 1\n", "          hardPodAffinityWieght: 1\n"),
		wantErr: []string{interpodaffinity.Name, `unknown field "hardPodAffinityWieght"`},
	}, {
		name:    "out-of-range value in our plugin args",
		config:  edit("          hardPodAffinityWeight: 1\n", "          hardPodAffinityWeight: 101\n"),
		wantErr: []string{interpodaffinity.Name, "hardPodAffinityWeight", "101", "[0, 100]"},
	}, {
		name: "invalid operator in addedAffinity",
		config: edit("    pluginConfig:\n", `    pluginConfig:
      - name: PlacementNodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
                - matchExpressions:
                    - {key: pool, operator: Bogus}
`),
		wantErr: []string{nodeaffinity.Name,
			"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := setupConfig(t, tc.config)
			if err == nil {
				t.Fatal("app.Setup succeeded, want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

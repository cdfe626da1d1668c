package manifests_test

import (
	"cmp"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// multiPoint lists a profile's multiPoint plugins as "Name" or "Name/weight".
func multiPoint(p configv1.KubeSchedulerProfile) []string {
	var out []string
	for _, e := range p.Plugins.MultiPoint.Enabled {
		s := e.Name
		if w := ptr.Deref(e.Weight, 0); w != 0 {
			s = fmt.Sprintf("%s/%d", s, w)
		}
		out = append(out, s)
	}
	return out
}

// Every scheduler config this build's line ships (the install's and the
// examples', as Read gives them) has, in each profile, exactly the default
// profile of this line's upstream minor (its defaulting code, with its
// feature gates' defaults) with our plugins in the in-tree plugins' slots
// and weights, and "*" disabled so nothing else is appended. The lines'
// configs differ only where their upstreams' defaults do; this runs on
// every line, so a line whose config drifts from its minor fails here.
func TestShippedProfilesAreTheLinesUpstreamDefault(t *testing.T) {
	var def configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&def)
	ours := map[string]string{}
	for _, p := range plugins.Set() {
		ours[p.Replaces] = p.Name
	}
	var want []string
	for _, e := range def.Profiles[0].Plugins.MultiPoint.Enabled {
		e.Name = cmp.Or(ours[e.Name], e.Name)
		want = append(want, multiPoint(configv1.KubeSchedulerProfile{Plugins: &configv1.Plugins{MultiPoint: configv1.PluginSet{Enabled: []configv1.Plugin{e}}}})...)
	}

	checked := 0
	err := fs.WalkDir(manifests.Files(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(name, "scheduler-config.yaml") || strings.HasPrefix(name, "lines/") {
			return err
		}
		b, err := manifests.Read(name)
		if err != nil {
			return err
		}
		var cfg configv1.KubeSchedulerConfiguration
		if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, p := range cfg.Profiles {
			if p.Plugins == nil {
				t.Errorf("%s: profile %s sets no plugins", name, ptr.Deref(p.SchedulerName, ""))
				continue
			}
			if diff := gocmp.Diff(want, multiPoint(p)); diff != "" {
				t.Errorf("%s (as line %s has it): profile %s's multiPoint is not this line's upstream default with ours in place (-want +got):\n%s",
					name, manifests.Base(), ptr.Deref(p.SchedulerName, ""), diff)
			}
			if d := p.Plugins.MultiPoint.Disabled; len(d) != 1 || d[0].Name != "*" {
				t.Errorf("%s: profile %s disables %v at multiPoint, want only \"*\"", name, ptr.Deref(p.SchedulerName, ""), d)
			}
			checked++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 3 {
		t.Errorf("checked %d profiles, want the shipped one and profile-pool's two", checked)
	}
}

// An older line's folder overrides exactly the files it holds; the newest
// line reads every file from its own path.
func TestReadPrefersTheLinesFile(t *testing.T) {
	got, err := manifests.Read("scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wantName := "scheduler-config.yaml"
	if manifests.Base() != "." {
		wantName = manifests.Base() + "/scheduler-config.yaml"
	}
	want, err := fs.ReadFile(manifests.Files(), wantName)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("Read(scheduler-config.yaml) is not %s", wantName)
	}
	// A file no line overrides comes from its own path.
	a, err := manifests.Read("base/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := fs.ReadFile(manifests.Files(), "base/deployment.yaml")
	if string(a) != string(b) {
		t.Error("Read(base/deployment.yaml) differs from the file")
	}
}

package podterms

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func term(key string) v1.PodAffinityTerm { return v1.PodAffinityTerm{TopologyKey: key} }

func TestEachVisitsEveryTermInPlace(t *testing.T) {
	a := &v1.Affinity{
		PodAffinity: &v1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []v1.PodAffinityTerm{term("a-req-1"), term("a-req-2")},
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term("a-pref")}},
		},
		PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []v1.PodAffinityTerm{term("anti-req")},
			PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 2, PodAffinityTerm: term("anti-pref")}},
		},
	}
	var seen []string
	Each(a, func(t *v1.PodAffinityTerm) {
		seen = append(seen, t.TopologyKey)
		t.TopologyKey += "!"
	})
	if want := []string{"a-req-1", "a-req-2", "a-pref", "anti-req", "anti-pref"}; !slices.Equal(seen, want) {
		t.Errorf("visited %v, want %v", seen, want)
	}
	got := []string{
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[1].TopologyKey,
		a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey,
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey,
	}
	if want := []string{"a-req-2!", "a-pref!", "anti-pref!"}; !slices.Equal(got, want) {
		t.Errorf("terms after the walk %v, want the edits in place %v", got, want)
	}
}

func TestEachWithoutTerms(t *testing.T) {
	for _, a := range []*v1.Affinity{nil, {}, {NodeAffinity: &v1.NodeAffinity{}}, {PodAffinity: &v1.PodAffinity{}}} {
		Each(a, func(*v1.PodAffinityTerm) { t.Errorf("called for %+v", a) })
	}
}

package podaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func TestHasTerms(t *testing.T) {
	term := v1.PodAffinityTerm{TopologyKey: "zone"}
	for _, tc := range []struct {
		name     string
		affinity *v1.Affinity
		want     bool
	}{
		{"no affinity", nil, false},
		{"node affinity only", &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}, false},
		// An empty struct has nothing to parse and nothing to judge.
		{"empty pod affinity", &v1.Affinity{PodAffinity: &v1.PodAffinity{}}, false},
		{"empty anti-affinity", &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{}}, false},
		{"required affinity", &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}}}, true},
		{"preferred anti-affinity", &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}}}, true},
	} {
		pod := &v1.Pod{Spec: v1.PodSpec{Affinity: tc.affinity}}
		if got := HasTerms(pod); got != tc.want {
			t.Errorf("%s: HasTerms = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMatchesAll(t *testing.T) {
	terms := func(ts ...v1.PodAffinityTerm) []fwk.AffinityTerm {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "own"}, Spec: v1.PodSpec{Affinity: &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ts}}}}
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		return pi.GetRequiredAffinityTerms()
	}
	app := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
	}
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "own", Labels: map[string]string{"app": "web", "tier": "front"}}}
	elsewhere := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Labels: map[string]string{"app": "web"}}}
	bySelector := terms(v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: app("web"), NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}})

	for _, tc := range []struct {
		name     string
		terms    []fwk.AffinityTerm
		pod      *v1.Pod
		nsLabels labels.Set
		want     bool
	}{
		{"no terms: no single pod is asked for", nil, web, nil, false},
		{"one term matched", terms(v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: app("web")}), web, nil, true},
		{"every term matched", terms(
			v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: app("web")},
			v1.PodAffinityTerm{TopologyKey: "host", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "front"}}}), web, nil, true},
		{"one of two terms missed", terms(
			v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: app("web")},
			v1.PodAffinityTerm{TopologyKey: "host", LabelSelector: app("db")}), web, nil, false},
		{"another namespace, no selector", terms(v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: app("web")}), elsewhere, nil, false},
		{"namespace selector, labels given", bySelector, elsewhere, labels.Set{"team": "a"}, true},
		{"namespace selector, labels not given", bySelector, elsewhere, nil, false},
	} {
		if got := MatchesAll(tc.terms, tc.pod, tc.nsLabels); got != tc.want {
			t.Errorf("%s: MatchesAll = %v, want %v", tc.name, got, tc.want)
		}
	}
}

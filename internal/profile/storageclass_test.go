package profile

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func defaultClassAt(name string, created time.Time, annotation string) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created),
		Annotations: map[string]string{annotation: "true"}}}
}

// The admission plugin's pick: the newest default (the beta annotation
// counts too), the first name among the newest; a class not annotated, or
// annotated "false", is no default.
func TestDefaultClass(t *testing.T) {
	jan, feb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	notDefault := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "aaa", CreationTimestamp: metav1.NewTime(feb.Add(time.Hour)),
		Annotations: map[string]string{defaultClassAnnotation: "false"}}}
	for _, tc := range []struct {
		name    string
		classes []*storagev1.StorageClass
		want    string
	}{
		{"none", []*storagev1.StorageClass{notDefault}, ""},
		{"newest", []*storagev1.StorageClass{defaultClassAt("old", jan, defaultClassAnnotation), notDefault, defaultClassAt("new", feb, betaDefaultClassAnnotation)}, "new"},
		{"same time: first name", []*storagev1.StorageClass{defaultClassAt("zz", feb, defaultClassAnnotation), defaultClassAt("mm", feb, defaultClassAnnotation), defaultClassAt("old", jan, defaultClassAnnotation)}, "mm"},
	} {
		got := ""
		if def := DefaultClass(tc.classes); def != nil {
			got = def.Name
		}
		if got != tc.want {
			t.Errorf("%s: default %q, want %q", tc.name, got, tc.want)
		}
	}
}

// An ephemeral volume whose template names no class gets the default
// class, as admission gives it to the claim the controller creates: the
// replacement follows that class's allowedTopologies to zone b. Without a
// default, the claim has no class, which VolumeBinding takes for an
// Immediate one nobody bound: no node fits.
func TestReplacementEphemeralVolumeGetsTheDefaultClass(t *testing.T) {
	nodes := func() []*v1.Node {
		return []*v1.Node{zoneNode("a1", "a"), zoneNode("a2", "a"), zoneNode("b1", "b"), zoneNode("b2", "b")}
	}
	pod := ephemeralPod("web-1", "a1", "")
	pod.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Spec.StorageClassName = nil
	def := provisioningClass("zonal-b", "b")
	def.Annotations = map[string]string{defaultClassAnnotation: "true"}
	p, _ := placerOver(t, nodes(), []*v1.Pod{pod}, provisioningClass("anywhere"), def)
	if got, want := feasible(t, p, pod), []string{"b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("with a default class: feasible nodes %q, want %q", got, want)
	}
	node, err := p.Place(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if node != "b1" && node != "b2" {
		t.Errorf("replacement placed on %q, want a node of zone b", node)
	}

	p, _ = placerOver(t, nodes(), []*v1.Pod{pod}, provisioningClass("anywhere"))
	if got := feasible(t, p, pod); len(got) != 0 {
		t.Errorf("without a default class: feasible nodes %q, want none", got)
	}
}

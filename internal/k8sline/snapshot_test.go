package k8sline

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestMutationSessionsKeepImageCounts: ImageLocality scales an image's
// score by how many nodes hold it; a session, and the end of one, must not
// lose those counts on the nodes it touches or clones.
func TestMutationSessionsKeepImageCounts(t *testing.T) {
	const image = "registry.example/app:v1"
	withImage := func(name string, has bool) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if has {
			n.Status.Images = []v1.ContainerImage{{Names: []string{image}, SizeBytes: 500 << 20}}
		}
		return n
	}
	s := NewSnapshot(nil, []*v1.Node{withImage("n1", true), withImage("n2", true), withImage("n3", false)})
	check := func(when string) {
		t.Helper()
		for _, name := range []string{"n1", "n2"} {
			ni, err := s.Lister().NodeInfos().Get(name)
			if err != nil {
				t.Fatal(err)
			}
			st, ok := ni.GetImageStates()[image]
			if !ok {
				t.Fatalf("%s: node %s lost its image", when, name)
			}
			if st.NumNodes != 2 {
				t.Errorf("%s: node %s says %d nodes hold %s, want 2", when, name, st.NumNodes, image)
			}
		}
	}
	check("before a session")
	for round := range 2 {
		if err := s.StartMutations(); err != nil {
			t.Fatal(err)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"}}
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddPod(pi, "n1"); err != nil {
			t.Fatal(err)
		}
		check("in a session")
		if err := s.EndMutations(); err != nil {
			t.Fatal(err)
		}
		check("after session " + string(rune('1'+round)))
	}
}

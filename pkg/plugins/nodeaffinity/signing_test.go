package nodeaffinity

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// signature renders SignPod's fragments as JSON, the way the framework folds
// them into a pod signature, so tests compare what batching would compare.
func signature(t *testing.T, pod *v1.Pod) string {
	t.Helper()
	frags, st := newPlugin(t, nil, feature.Features{}).SignPod(context.Background(), pod)
	tu.CheckStatus(t, "SignPod", st, fwk.Success, "")
	if len(frags) != 2 {
		t.Fatalf("got %d fragments, want 2", len(frags))
	}
	if frags[0].Key != "v1.Pod.Spec.Affinity.NodeAffinity" || frags[1].Key != "v1.Pod.Spec.Affinity.NodeSelector" {
		t.Fatalf("fragment keys = %q, %q", frags[0].Key, frags[1].Key)
	}
	raw, err := json.Marshal(frags)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestSignPod(t *testing.T) {
	pod := func() *tu.PodWrapper { return tu.MakePod("ns", "p") }
	zoneAB := tu.Term(tu.Expr("zone", in, "a", "b"))
	zoneBA := tu.Term(tu.Expr("zone", in, "b", "a"))
	disk := tu.Term(tu.Expr("disk", exists))

	// Exact fragment values for the simple cases: nil affinity signs as nil,
	// the nodeSelector as the map itself.
	bare := signature(t, pod().Obj())
	if want := `[{"Key":"v1.Pod.Spec.Affinity.NodeAffinity","Value":null},{"Key":"v1.Pod.Spec.Affinity.NodeSelector","Value":null}]`; bare != want {
		t.Errorf("bare pod signature = %s, want %s", bare, want)
	}
	withSel := signature(t, pod().NodeSelector(map[string]string{"zone": "a"}).Obj())
	if want := `[{"Key":"v1.Pod.Spec.Affinity.NodeAffinity","Value":null},{"Key":"v1.Pod.Spec.Affinity.NodeSelector","Value":{"zone":"a"}}]`; withSel != want {
		t.Errorf("nodeSelector signature = %s, want %s", withSel, want)
	}

	// The affinity fragment is the framework's normalized form (what upstream
	// signs): terms and values sorted, each term as a JSON string. Spelled
	// out here so that any drift from upstream's format shows.
	affPod := pod().RequiredNodeTerms(zoneBA, disk).PreferredNodeTerm(3, disk).Obj()
	frags, st := newPlugin(t, nil, feature.Features{}).SignPod(context.Background(), affPod)
	tu.CheckStatus(t, "SignPod", st, fwk.Success, "")
	raw, err := json.Marshal(frags[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Required, Preferred []string }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("affinity fragment %s: %v", raw, err)
	}
	wantRequired := []string{
		`{"MatchExpressions":["{\"key\":\"disk\",\"operator\":\"Exists\"}"],"MatchFields":[]}`,
		`{"MatchExpressions":["{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]}"],"MatchFields":[]}`,
	}
	wantPreferred := []string{
		`{"Weight":3,"Preference":{"MatchExpressions":["{\"key\":\"disk\",\"operator\":\"Exists\"}"],"MatchFields":[]}}`,
	}
	if diff := cmp.Diff(wantRequired, got.Required); diff != "" {
		t.Errorf("required part of the affinity fragment (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantPreferred, got.Preferred); diff != "" {
		t.Errorf("preferred part of the affinity fragment (-want +got):\n%s", diff)
	}

	same := []struct {
		name string
		a, b *v1.Pod
	}{
		{"term and value order do not matter", pod().RequiredNodeTerms(zoneAB, disk).Obj(), pod().RequiredNodeTerms(disk, zoneBA).Obj()},
		{"pod name, labels and namespace do not matter", pod().Label("app", "x").NodeSelector(map[string]string{"zone": "a"}).Obj(),
			tu.MakePod("other", "q").NodeSelector(map[string]string{"zone": "a"}).Obj()},
	}
	for _, tc := range same {
		if a, b := signature(t, tc.a), signature(t, tc.b); a != b {
			t.Errorf("%s: signatures differ:\n%s\n%s", tc.name, a, b)
		}
	}
	differ := []struct {
		name string
		a, b *v1.Pod
	}{
		{"nil vs empty nodeSelector", pod().Obj(), pod().NodeSelector(map[string]string{}).Obj()},
		{"nodeSelector values", pod().NodeSelector(map[string]string{"zone": "a"}).Obj(), pod().NodeSelector(map[string]string{"zone": "b"}).Obj()},
		{"required terms", pod().RequiredNodeTerms(zoneAB).Obj(), pod().RequiredNodeTerms(disk).Obj()},
		{"preferred weights", pod().PreferredNodeTerm(1, disk).Obj(), pod().PreferredNodeTerm(2, disk).Obj()},
		{"no affinity vs empty node affinity", pod().Obj(), pod().NodeAffinity(&v1.NodeAffinity{}).Obj()},
	}
	for _, tc := range differ {
		if a, b := signature(t, tc.a), signature(t, tc.b); a == b {
			t.Errorf("%s: signatures are equal: %s", tc.name, a)
		}
	}
}

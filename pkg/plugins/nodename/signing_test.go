package nodename

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestSignPod(t *testing.T) {
	for _, nodeName := range []string{"", "alpha"} {
		pod := tu.MakePod("ns", "p").NodeName(nodeName).Obj()
		got, st := newPlugin(t, feature.Features{}).SignPod(context.Background(), pod)
		tu.CheckStatus(t, "SignPod", st, fwk.Success, "")
		want := []fwk.SignFragment{{Key: "v1.Pod.Spec.NodeName", Value: nodeName}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SignPod(nodeName=%q) (-want +got):\n%s", nodeName, diff)
		}
	}
}

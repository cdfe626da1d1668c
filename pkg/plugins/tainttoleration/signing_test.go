package tainttoleration

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestSignPod(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want []v1.Toleration
	}{
		{
			name: "no tolerations gives an empty, non-nil list",
			pod:  tu.MakePod("ns", "p").Obj(),
			want: []v1.Toleration{},
		},
		{
			name: "sorted by key then value",
			pod: tu.MakePod("ns", "p").
				Toleration(tu.Tol("zone", v1.TolerationOpEqual, "b", v1.TaintEffectNoSchedule)).
				Toleration(tu.Tol("", v1.TolerationOpExists, "", "")).
				Toleration(tu.Tol("zone", v1.TolerationOpEqual, "a", v1.TaintEffectNoExecute)).
				Toleration(tu.Tol("arch", v1.TolerationOpEqual, "x", v1.TaintEffectPreferNoSchedule)).
				Obj(),
			want: []v1.Toleration{
				tu.Tol("", v1.TolerationOpExists, "", ""),
				tu.Tol("arch", v1.TolerationOpEqual, "x", v1.TaintEffectPreferNoSchedule),
				tu.Tol("zone", v1.TolerationOpEqual, "a", v1.TaintEffectNoExecute),
				tu.Tol("zone", v1.TolerationOpEqual, "b", v1.TaintEffectNoSchedule),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			frags, st := newPlugin(t, gatesOff).SignPod(context.Background(), tc.pod)
			if !tu.CheckStatus(t, "SignPod", st, fwk.Success, "") {
				return
			}
			// The key is the framework's shared one, spelled out so that a
			// rename upstream shows up here.
			if len(frags) != 1 || frags[0].Key != "v1.Pod.Spec.Tolerations" {
				t.Fatalf("fragments = %+v, want one with key %q", frags, "v1.Pod.Spec.Tolerations")
			}
			got, ok := frags[0].Value.([]v1.Toleration)
			if !ok || got == nil {
				t.Fatalf("value = %#v, want a non-nil []v1.Toleration", frags[0].Value)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.pod); diff != "" {
				t.Errorf("SignPod mutated the pod:\n%s", diff)
			}
		})
	}
}

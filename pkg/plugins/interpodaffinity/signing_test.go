package interpodaffinity

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestSignPod(t *testing.T) {
	labels := map[string]string{"app": "web"}
	tests := []struct {
		name       string
		ignore     bool
		pod        *v1.Pod
		wantFrags  []fwk.SignFragment
		wantStatus string
	}{
		{
			name:      "labels are signed",
			pod:       tu.MakePod("default", "p").Labels(labels).Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: labels}},
		},
		{
			name:      "no labels: a nil map is signed",
			pod:       tu.MakePod("default", "p").Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: map[string]string(nil)}},
		},
		{
			name:      "node affinity alone is not pod affinity",
			pod:       tu.MakePod("default", "p").Labels(labels).RequiredNodeTerms(tu.Term(tu.Expr("k", v1.NodeSelectorOpExists))).Obj(),
			wantFrags: []fwk.SignFragment{{Key: fwk.LabelsSignerName, Value: labels}},
		},
		{
			name:       "pod affinity, even empty, is not signable",
			pod:        tu.MakePod("default", "p").PodAffinity(&v1.PodAffinity{}).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:       "pod anti-affinity is not signable",
			pod:        tu.MakePod("default", "p").RequiredPodAntiAffinity(tu.AffinityTerm(zone, everything)).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:       "not signable wins over ignorePreferredTermsOfExistingPods",
			ignore:     true,
			pod:        tu.MakePod("default", "p").PodAntiAffinity(&v1.PodAntiAffinity{}).Obj(),
			wantStatus: "Unschedulable: pods with InterPodAffinity are not signable",
		},
		{
			name:   "ignorePreferredTermsOfExistingPods: nothing to sign",
			ignore: true,
			pod:    tu.MakePod("default", "p").Labels(labels).Obj(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := &InterPodAffinity{args: args{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: tc.ignore}}
			frags, st := pl.SignPod(context.Background(), tc.pod)
			if got := tu.StatusString(st); got != tc.wantStatus {
				t.Errorf("status %q, want %q", got, tc.wantStatus)
			}
			if diff := cmp.Diff(tc.wantFrags, frags); diff != "" {
				t.Errorf("fragments (-want +got):\n%s", diff)
			}
		})
	}
}

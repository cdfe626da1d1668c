package examples

import (
	"context"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The full cluster runs the disruption controller: a PodDisruptionBudget
// gets its status (without it, every eviction under a PDB is refused with
// 429, so nothing evicting through the Eviction API could work here).
func TestPodDisruptionBudgetsGetTheirStatus(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}},
	}
	if _, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	env.Poll(t, "the disruption controller to compute the PDB's status", func(ctx context.Context) (bool, error) {
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "budget", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation && got.Generation > 0, nil
	})
}

package enforcer

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// Ten pods of the namespace that another tool evicted and that stay
// terminating (a finalizer holds them) count toward limits.perNamespace
// only for limits.otherEvictionsFor: evicted long ago, they hold nothing;
// evicted just now, they hold the violating pod paced, with a pass asked
// for when they age out, after which it goes.
func TestOthersStuckEvictionsDoNotPinTheCaps(t *testing.T) {
	for _, tc := range []struct {
		name string
		ago  time.Duration
	}{
		{"evicted an hour ago", time.Hour},
		{"evicted a minute ago", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
				c.GracePeriod.NodeAffinity.Duration = 0
				c.Limits.PerNamespace = 5
				c.Limits.OtherEvictionsFor = &metav1.Duration{Duration: 5 * time.Minute}
			})
			r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd), node("c", nil)}
			r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
			at := r.clock.Now().Add(-tc.ago)
			for i := range 10 {
				s := pod(fmt.Sprintf("drained-%d", i), fmt.Sprintf("other-%d", i), "c").Obj()
				s.Finalizers = []string{"example.com/hold"}
				s.DeletionTimestamp = &metav1.Time{Time: at.Add(30 * time.Second)}
				s.Status.Conditions = append(s.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
					Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.NewTime(at)})
				r.c.Pods = append(r.c.Pods, s)
			}
			next, err := r.e.Pass(context.Background(), r.c)
			if err != nil {
				t.Fatal(err)
			}
			var got violationsv1alpha1.Report
			for _, rep := range r.e.Reports() {
				if rep.Pod == "ns/p" {
					got = rep
				}
			}
			if tc.ago > 5*time.Minute {
				if got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 1 {
					t.Fatalf("%+v, evictions %v; want evicted, the stuck pods not counted", got, r.evicted())
				}
				return
			}
			if got.State != violationsv1alpha1.StatePaced || got.Wait != "limits.perNamespace" || len(r.evictions) != 0 {
				t.Fatalf("%+v, evictions %v; want paced by limits.perNamespace", got, r.evicted())
			}
			if want := 4 * time.Minute; next <= 0 || next > want {
				t.Fatalf("next pass in %s, want within %s (when the evictions age out)", next, want)
			}
			r.clock.Step(next)
			if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 1 {
				t.Fatalf("once they aged out: %+v, evictions %v; want evicted", got, r.evicted())
			}
		})
	}
}

package enforcer

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
)

// jobPod is an ssd pod of Job owner (restartPolicy Never), opted in.
func jobPod(name, owner, nodeName string) *v1.Pod {
	p := ssdPod(name, owner, nodeName)
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner, UID: types.UID("uid-" + owner), Controller: &yes}}
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	return p
}

// job is Job name with rules as its podFailurePolicy (none when nil).
func job(name string, rules ...batchv1.PodFailurePolicyRule) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
	if rules != nil {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	}
	return j
}

var (
	ignoreDisruption = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	countDisruption = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionCount,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	failOnExitCode = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{137}}}
)

// Pods that run to completion are protected (job) by default; with
// evictJobPods, a Job's pod is evicted only when its Job's podFailurePolicy
// ignores DisruptionTarget before any rule that could match first.
func TestJobPodsProtectedUnlessTheirJobIgnoresDisruption(t *testing.T) {
	other := func(name string) *v1.Pod { // run to completion, not a Job's
		p := ssdPod(name, "wf", "a")
		p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind = "example.com/v1", "Workflow"
		p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		return p
	}
	pods := func() []*v1.Pod {
		return []*v1.Pod{
			jobPod("plain", "plain", "a"), jobPod("ignores", "ignores", "a"), jobPod("exit-first", "exit-first", "a"),
			jobPod("counts", "counts", "a"), jobPod("unknown", "unknown", "a"), other("workflow"),
		}
	}
	jobs := []*batchv1.Job{job("plain"), job("ignores", ignoreDisruption), job("exit-first", failOnExitCode, ignoreDisruption),
		job("counts", countDisruption)}
	for _, tc := range []struct {
		name    string
		consent bool
		evicted string
	}{
		{"by default", false, ""},
		{"with evictJobPods", true, "ignores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
				c.GracePeriod.NodeAffinity.Duration = 0
				c.EvictJobPods = tc.consent
			})
			r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
			r.c.Pods, r.c.Jobs = pods(), jobs
			reps := r.pass()
			for _, p := range r.c.Pods {
				got := reps[p.Name]
				if p.Name == tc.evicted {
					if got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
						t.Errorf("%s: %+v, want evicting to b", p.Name, got)
					}
					continue
				}
				if got.State != violationsv1alpha1.StateProtected || got.Detail != SkipJob {
					t.Errorf("%s: %+v, want protected (%s)", p.Name, got, SkipJob)
				}
			}
			if want := 0; tc.evicted != "" {
				want = 1
				if got := r.evicted(); len(got) != want || got[0] != tc.evicted {
					t.Errorf("evicted %v, want [%s]", got, tc.evicted)
				}
			} else if len(r.evictions) != want {
				t.Errorf("evicted %v, want none", r.evicted())
			}
		})
	}
}

// An evicted Job pod stays as a Failed pod and its Job may never replace
// it: its eviction must not hold the node's cap until the in-flight
// timeout. It settles once the Job's replacement is counted, or at once
// when the Job has finished.
func TestJobEvictionSettles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(r *rig, j1 *v1.Pod)
	}{
		{"the Job finished", func(r *rig, _ *v1.Pod) {
			r.c.Jobs[0].Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: v1.ConditionTrue}}
		}},
		{"the Job replaced the pod", func(r *rig, _ *v1.Pod) {
			repl := jobPod("j1-r", "job1", "b")
			repl.Status.Conditions = nil // running, not Ready yet
			r.c.Pods = append(r.c.Pods, repl)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
				c.GracePeriod.NodeAffinity.Duration = 0
				c.EvictJobPods = true
				c.Limits.PerNode = 1
			})
			bigB := node("b", ssd)
			r.c.Nodes = []*v1.Node{node("a", nil), bigB}
			j1, j2 := jobPod("j1", "job1", "a"), jobPod("j2", "job2", "a")
			r.c.Pods = []*v1.Pod{j1, j2}
			r.c.Jobs = []*batchv1.Job{job("job1", ignoreDisruption), job("job2", ignoreDisruption)}
			reps := r.pass()
			if reps["j1"].State != violationsv1alpha1.StateEvicting || reps["j2"].State != violationsv1alpha1.StatePaced {
				t.Fatalf("j1 %+v, j2 %+v; want j1 evicting, j2 paced by limits.perNode", reps["j1"], reps["j2"])
			}
			// The evicted pod fails and stays, as a Job's pods do.
			j1.Status.Phase = v1.PodFailed
			j1.Status.Conditions = []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
			if got := r.pass()["j2"]; got.State != violationsv1alpha1.StatePaced {
				t.Fatalf("before the Job moved on: j2 %+v, want paced", got)
			}
			tc.after(r, j1)
			if got := r.pass()["j2"]; got.State != violationsv1alpha1.StateEvicting {
				t.Fatalf("j2 %+v, want evicting: the first eviction has settled", got)
			}
		})
	}
}

func TestJobTolerates(t *testing.T) {
	onlyOther := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "ConfigIssue", Status: v1.ConditionTrue}}}
	defaultStatus := ignoreDisruption
	defaultStatus.OnPodConditions = []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget}}
	falseStatus := ignoreDisruption
	falseStatus.OnPodConditions = []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionFalse}}
	for name, tc := range map[string]struct {
		job  *batchv1.Job
		want bool
	}{
		"nil":                         {nil, false},
		"no policy":                   {job("j"), false},
		"ignores DisruptionTarget":    {job("j", ignoreDisruption), true},
		"status left to its default":  {job("j", defaultStatus), true},
		"DisruptionTarget False only": {job("j", falseStatus), false},
		"other condition first":       {job("j", onlyOther, ignoreDisruption), true},
		"counts DisruptionTarget":     {job("j", countDisruption, ignoreDisruption), false},
		"exit codes first":            {job("j", failOnExitCode, ignoreDisruption), false},
		"exit codes after":            {job("j", ignoreDisruption, failOnExitCode), true},
	} {
		if got := jobTolerates(tc.job); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

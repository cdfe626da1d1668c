package explain

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// notHelpful is the status the scheduler gives nodes preemption cannot
// help (the text of its FailedScheduling event).
const notHelpful = "Preemption is not helpful for scheduling"

// runPostFilter dry-runs the profile's DefaultPreemption for pod after
// every node failed: the evaluator's own steps (eligibility, the nodes
// whose status is Unschedulable, DryRunPreemption with the PDBs,
// SelectCandidate), everything except actuation. SelectVictimsOnNode works
// on copies (NodeInfo.Snapshot, CycleState.Clone), so the snapshot the
// rest of the explanation reads is not changed.
func runPostFilter(ctx context.Context, fw *profileFramework, state fwk.CycleState, pod *v1.Pod, m *framework.NodeToStatus) (*explainv1alpha1.PostFilter, error) {
	enabled := fw.ListPlugins().PostFilter.Enabled
	if len(enabled) == 0 {
		return &explainv1alpha1.PostFilter{Reason: "the profile has no PostFilter plugin: the scheduler does not preempt"}, nil
	}
	var pl *defaultpreemption.DefaultPreemption
	var others []string
	// The scheduler's PostFilter message joins the reasons of every
	// PostFilter plugin that rejected, in profile order: those before
	// DefaultPreemption's ("preemption: ...") and those after it.
	var before, after []string
	for _, p := range enabled {
		if dp, ok := fw.Plugins[p.Name].(*defaultpreemption.DefaultPreemption); ok && pl == nil {
			pl = dp
			continue
		}
		// DynamicResources' PostFilter frees a claim's allocation; for a
		// pod without claims it changes nothing, so it is run as the
		// scheduler runs it: on 1.35 and 1.36 it rejects with "no new
		// claims to deallocate", which the event carries, on 1.37 with no
		// reason.
		if p.Name == names.DynamicResources && len(pod.Spec.ResourceClaims) == 0 {
			if dra, ok := fw.Plugins[p.Name].(fwk.PostFilterPlugin); ok {
				if _, st := dra.PostFilter(ctx, state, pod, m); st.IsRejected() {
					if pl == nil {
						before = append(before, st.Reasons()...)
					} else {
						after = append(after, st.Reasons()...)
					}
				}
			}
			continue
		}
		others = append(others, p.Name)
	}
	postFilterMessage := func(preemption string) string {
		return strings.Join(slices.Concat(before, []string{preemption}, after), ", ")
	}
	if pl == nil && len(others) == 0 {
		return &explainv1alpha1.PostFilter{Reason: "the profile has no preemption plugin: the scheduler does not preempt"}, nil
	}
	if pl == nil {
		return &explainv1alpha1.PostFilter{Reason: fmt.Sprintf("PostFilter plugin(s) %s are not DefaultPreemption: explain cannot dry-run them", strings.Join(others, ", "))}, nil
	}
	res := &explainv1alpha1.PostFilter{Plugin: pl.Name()}
	if len(others) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("PostFilter plugin(s) %s not run: explain dry-runs DefaultPreemption only", strings.Join(others, ", ")))
	}
	if k8sline.SkipsAllPostFilter(state) {
		res.Reason = "All PostFilter plugins are skipped"
		return res, nil
	}
	ev := pl.Evaluator
	if ok, msg := ev.PodEligibleToPreemptOthers(ctx, pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		res.Reason = "the pod may not preempt: " + msg
		res.Message = postFilterMessage("preemption: " + msg)
		return res, nil
	}
	lister := fw.Snapshot.Lister().NodeInfos()
	all, err := lister.List()
	if err != nil {
		return nil, err
	}
	potential, err := m.NodesForStatusCode(lister, fwk.Unschedulable)
	if err != nil {
		return nil, err
	}
	var candidates []preemption.Candidate
	statuses := framework.NewDefaultNodeToStatus()
	if len(potential) > 0 {
		pdbs, err := ev.PdbLister.List(labels.Everything())
		if err != nil {
			return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
		}
		// The scheduler dry-runs a shortlist from a random offset and stops
		// once it has enough candidates; explain tries every node, so that
		// "why not" covers them all.
		if _, n := ev.GetOffsetAndNumCandidates(int32(len(potential))); int(n) < len(potential) {
			res.Notes = append(res.Notes, fmt.Sprintf("the scheduler stops its dry run once it has %d candidates, trying the %d nodes from a random offset, so it may nominate another of the candidates", n, len(potential)))
		}
		candidates, statuses, err = ev.DryRunPreemption(ctx, state, pod, potential, pdbs, 0, int32(len(potential)))
		if err != nil && len(candidates) == 0 {
			return nil, fmt.Errorf("preemption dry run: %w", err)
		}
	}
	// Why not, node by node: the dry run's status where it ran, else the
	// filter status that made the node one preemption cannot help.
	dryRun := map[string]*fwk.Status{}
	statuses.ForEachExplicitNode(func(name string, st *fwk.Status) { dryRun[name] = st })
	for _, ni := range all {
		name := ni.Node().Name
		var why string
		if st := m.Get(name); st.Code() != fwk.Unschedulable {
			why = fmt.Sprintf("%s: %s", notHelpful, strings.Join(st.Reasons(), "; "))
		} else if st, ok := dryRun[name]; ok {
			why = strings.Join(st.Reasons(), "; ")
		} else {
			continue
		}
		res.NotHelpful = append(res.NotHelpful, explainv1alpha1.NodeWhyNot{Node: name, Reason: why})
	}
	if len(candidates) == 0 {
		// What the scheduler's DefaultPreemption reports in this case.
		fe := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: framework.Diagnosis{NodeToStatus: statuses}}
		fe.Diagnosis.NodeToStatus.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, notHelpful))
		res.Message = postFilterMessage("preemption: " + fe.Error())
		if len(potential) == 0 {
			res.Reason = "no node failed only for reasons evicting pods could fix"
		} else {
			res.Reason = "evicting every lower-priority pod would not make the pod fit on any node"
		}
		return res, nil
	}
	for _, c := range candidates {
		res.Candidates = append(res.Candidates, explainv1alpha1.PreemptionCandidate{
			Node: c.Name(), Victims: victims(c), PDBViolations: int(c.Victims().NumPDBViolations),
		})
	}
	sort.Slice(res.Candidates, func(i, j int) bool { return res.Candidates[i].Node < res.Candidates[j].Node })
	best := ev.SelectCandidate(ctx, candidates)
	res.WouldPreempt = true
	res.Node = best.Name()
	res.Victims = victims(best)
	res.PDBViolations = int(best.Victims().NumPDBViolations)
	return res, nil
}

func victims(c preemption.Candidate) []explainv1alpha1.Victim {
	var out []explainv1alpha1.Victim
	for _, p := range c.Victims().Pods {
		out = append(out, explainv1alpha1.Victim{Pod: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Priority: corev1helpers.PodPriority(p)})
	}
	return out
}

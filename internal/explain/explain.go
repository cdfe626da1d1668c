// Package explain answers "why is this pod Pending, or why did it land
// there" by running the real scheduling framework, built from a
// KubeSchedulerConfiguration profile, over a cluster snapshot: every filter
// plugin on every node (not only up to the first failure), every score
// plugin on the feasible nodes, and the detail our own plugins add through
// pkg/plugins.FilterExplainer.
package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Explain builds the profile's framework over the cluster and runs the
// scheduling cycle for pod, recording everything.
func Explain(ctx context.Context, pod *v1.Pod, c *Cluster, profile *config.KubeSchedulerProfile) (*explainv1alpha1.PlacementExplanation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the informers
	fw, err := newFramework(ctx, c, pod, profile)
	if err != nil {
		return nil, err
	}
	return explainWith(ctx, fw, pod, c, profile)
}

// explainWith runs the cycle on a framework built by newFramework.
func explainWith(ctx context.Context, fw *profileFramework, pod *v1.Pod, c *Cluster, profile *config.KubeSchedulerProfile) (*explainv1alpha1.PlacementExplanation, error) {
	nodes, err := fw.Snapshot.Lister().NodeInfos().List()
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Node().Name < nodes[j].Node().Name })
	res := &explainv1alpha1.PlacementExplanation{
		TypeMeta: metav1.TypeMeta{APIVersion: explainv1alpha1.APIVersion, Kind: explainv1alpha1.Kind},
		Pod:      pod.Namespace + "/" + pod.Name,
		Profile:  profile.SchedulerName,
		Nodes:    len(nodes),
	}
	name := pod.Spec.SchedulerName
	if name == "" {
		name = v1.DefaultSchedulerName // what the apiserver defaults it to
	}
	if name != profile.SchedulerName {
		res.Notes = append(res.Notes, fmt.Sprintf("the pod asks for schedulerName %q, not this profile: this is what %s would do with it", name, profile.SchedulerName))
	}
	if pod.Spec.NodeName != "" {
		res.BoundTo = pod.Spec.NodeName
		res.Notes = append(res.Notes, fmt.Sprintf("the pod is bound to %s: this verdict is recomputed against today's cluster (without the pod), not the one the scheduler saw when it placed it", pod.Spec.NodeName))
	}
	res.Notes = append(res.Notes, c.Unseen...)
	state := framework.NewCycleState()
	preRes, st, prePlugins := fw.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, fmt.Errorf("PreFilter plugin %s: %w", st.Plugin(), st.AsError())
		}
		// The scheduler stops here: every node gets this status.
		res.PreFilter = append(res.PreFilter, verdict(st.Plugin(), st))
		diag := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus(), PreFilterMsg: st.Message()}
		diag.NodeToStatus.SetAbsentNodesStatus(st)
		res.SchedulerMessage = (&framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}).Error()
		for _, r := range st.Reasons() {
			res.Reasons = append(res.Reasons, explainv1alpha1.ReasonCount{Reason: r, Plugin: st.Plugin(), Nodes: len(nodes)})
		}
		if res.PostFilter, err = runPostFilter(ctx, fw, state, pod, diag.NodeToStatus); err != nil {
			return nil, err
		}
		return res, nil
	}
	if !preRes.AllNodes() {
		res.PreFilter = append(res.PreFilter, explainv1alpha1.PluginVerdict{
			Plugin:  strings.Join(sets.List(prePlugins), ","),
			Code:    "Success",
			Reasons: []string{fmt.Sprintf("narrowed the candidates to %d node(s): %s", preRes.NodeNames.Len(), strings.Join(sets.List(preRes.NodeNames), ", "))},
		})
	}
	for _, name := range sets.List(state.GetSkipFilterPlugins()) {
		res.PreFilter = append(res.PreFilter, explainv1alpha1.PluginVerdict{Plugin: name, Code: fwk.Skip.String(), Reasons: []string{"PreFilter returned Skip: Filter is not run and passes"}})
	}

	feasible, statuses, err := runFilters(ctx, fw, state, pod, nodes, preRes, prePlugins, res)
	if err != nil {
		return nil, err
	}
	res.Feasible = len(feasible)
	hints(res)
	if len(feasible) == 0 {
		if res.PostFilter, err = runPostFilter(ctx, fw, state, pod, statuses); err != nil {
			return nil, err
		}
		return res, nil
	}
	if err := runScores(ctx, fw, state, pod, feasible, res); err != nil {
		return nil, err
	}
	return res, nil
}

// runFilters calls every Filter plugin of the profile on every node, in
// profile order, and records the scheduler's own per-node status (the first
// failure) to reproduce its FailedScheduling message; those statuses are
// what PostFilter gets.
func runFilters(ctx context.Context, fw *profileFramework, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo,
	preRes *fwk.PreFilterResult, prePlugins sets.Set[string], res *explainv1alpha1.PlacementExplanation) ([]fwk.NodeInfo, *framework.NodeToStatus, error) {
	var filters []fwk.FilterPlugin
	for _, p := range fw.ListPlugins().Filter.Enabled {
		fp, ok := fw.Plugins[p.Name].(fwk.FilterPlugin)
		if !ok {
			return nil, nil, fmt.Errorf("filter plugin %s: instance not found", p.Name)
		}
		filters = append(filters, fp)
	}
	skip := state.GetSkipFilterPlugins()
	diag := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	counts := map[[2]string]int{}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		name := ni.Node().Name
		nr := explainv1alpha1.NodeResult{Node: name}
		// The scheduler's own verdict (first failure, nominated pods
		// counted) decides feasibility and its FailedScheduling message.
		var sched *fwk.Status
		if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			sched = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(prePlugins)))
			nr.ExcludedByPreFilter = sched.Message()
		} else {
			sched = fw.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if sched.Code() == fwk.Error {
				return nil, nil, fmt.Errorf("filtering node %s: %w", name, sched.AsError())
			}
		}
		nr.Feasible = sched.IsSuccess()
		ownFailure := false
		for _, pl := range filters {
			if skip.Has(pl.Name()) {
				nr.Filters = append(nr.Filters, explainv1alpha1.PluginVerdict{Plugin: pl.Name(), Code: fwk.Skip.String()})
				continue
			}
			st := pl.Filter(ctx, state, pod, ni)
			if st.Code() == fwk.Error {
				return nil, nil, fmt.Errorf("filter plugin %s on node %s: %w", pl.Name(), name, st.AsError())
			}
			v := verdict(pl.Name(), st)
			if !st.IsSuccess() {
				ownFailure = true
				if ex, ok := pl.(plugins.FilterExplainer); ok {
					for _, c := range ex.ExplainFilter(ctx, state, pod, ni) {
						v.Causes = append(v.Causes, explainv1alpha1.Cause{Message: c.Message, Fix: c.Fix})
					}
				}
				if pl.Name() == names.NodeResourcesFit {
					v.Resources = resourceFits(pod, ni, st.Reasons(), fw.SharedDRAManager())
				}
				for _, r := range st.Reasons() {
					counts[[2]string{pl.Name(), r}]++
				}
			}
			nr.Filters = append(nr.Filters, v)
		}
		if nr.Feasible {
			feasible = append(feasible, ni)
		} else {
			diag.NodeToStatus.Set(name, sched)
			if !ownFailure && nr.ExcludedByPreFilter == "" {
				nr.NominatedPods = strings.Join(sched.Reasons(), "; ")
			}
		}
		res.NodeResults = append(res.NodeResults, nr)
	}
	if len(feasible) == 0 {
		res.SchedulerMessage = (&framework.FitError{Pod: pod, NumAllNodes: len(nodes), Diagnosis: diag}).Error()
	}
	for k, n := range counts {
		res.Reasons = append(res.Reasons, explainv1alpha1.ReasonCount{Plugin: k[0], Reason: k[1], Nodes: n})
	}
	sort.Slice(res.Reasons, func(i, j int) bool {
		a, b := res.Reasons[i], res.Reasons[j]
		if a.Nodes != b.Nodes {
			return a.Nodes > b.Nodes
		}
		return a.Plugin+a.Reason < b.Plugin+b.Reason
	})
	return feasible, diag.NodeToStatus, nil
}

// runScores runs PreScore through the framework (it decides which score
// plugins Skip), then each score plugin's Score and NormalizeScore on its
// own so the raw and normalized values can be shown, weighted as the
// framework weighs them.
func runScores(ctx context.Context, fw *profileFramework, state fwk.CycleState, pod *v1.Pod, feasible []fwk.NodeInfo, res *explainv1alpha1.PlacementExplanation) error {
	if st := fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return fmt.Errorf("PreScore plugin %s: %w", st.Plugin(), st.AsError())
	}
	skip := state.GetSkipScorePlugins()
	scores := make([]explainv1alpha1.NodeScore, len(feasible))
	for i, ni := range feasible {
		scores[i].Node = ni.Node().Name
	}
	for _, p := range fw.ListPlugins().Score.Enabled {
		if skip.Has(p.Name) {
			for i := range scores {
				scores[i].Plugins = append(scores[i].Plugins, explainv1alpha1.PluginScore{Plugin: p.Name, Skipped: true, Weight: p.Weight})
			}
			continue
		}
		sp, ok := fw.Plugins[p.Name].(fwk.ScorePlugin)
		if !ok {
			return fmt.Errorf("score plugin %s: instance not found", p.Name)
		}
		list := make(fwk.NodeScoreList, len(feasible))
		raw := make([]int64, len(feasible))
		for i, ni := range feasible {
			s, st := sp.Score(ctx, state, pod, ni)
			if !st.IsSuccess() {
				return fmt.Errorf("score plugin %s on node %s: %w", p.Name, ni.Node().Name, st.AsError())
			}
			list[i] = fwk.NodeScore{Name: ni.Node().Name, Score: s}
			raw[i] = s
		}
		if ext := sp.ScoreExtensions(); ext != nil {
			if st := ext.NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
				return fmt.Errorf("score plugin %s NormalizeScore: %w", p.Name, st.AsError())
			}
		}
		for i := range scores {
			w := list[i].Score * int64(p.Weight)
			scores[i].Plugins = append(scores[i].Plugins, explainv1alpha1.PluginScore{
				Plugin: p.Name, Raw: raw[i], Normalized: list[i].Score, Weight: p.Weight, Weighted: w,
			})
			scores[i].Total += w
		}
	}
	sort.SliceStable(scores, func(i, j int) bool {
		if scores[i].Total != scores[j].Total {
			return scores[i].Total > scores[j].Total
		}
		return scores[i].Node < scores[j].Node
	})
	for i := range scores {
		scores[i].Rank = i + 1
		if i > 0 && scores[i].Total == scores[i-1].Total {
			scores[i].Rank = scores[i-1].Rank
		}
		if scores[i].Rank == 1 {
			res.Tied = append(res.Tied, scores[i].Node)
		}
	}
	res.Ranking = scores
	res.Selected = scores[0].Node
	if len(res.Tied) < 2 {
		res.Tied = nil
	}
	return nil
}

func verdict(plugin string, st *fwk.Status) explainv1alpha1.PluginVerdict {
	if st == nil {
		return explainv1alpha1.PluginVerdict{Plugin: plugin, Code: fwk.Success.String()}
	}
	return explainv1alpha1.PluginVerdict{Plugin: plugin, Code: st.Code().String(), Reasons: st.Reasons()}
}

// hints finds single changes to the pod that would make infeasible nodes
// feasible: a node counts for a change when all of its failures are causes
// carrying that very Fix (e.g. its only untolerated taint).
func hints(res *explainv1alpha1.PlacementExplanation) {
	counts := map[string]int{}
	for _, nr := range res.NodeResults {
		if nr.Feasible || nr.ExcludedByPreFilter != "" {
			continue
		}
		fix := ""
		ok := true
		for _, f := range nr.Filters {
			if f.Code == fwk.Success.String() || f.Code == fwk.Skip.String() {
				continue
			}
			if len(f.Causes) == 0 {
				ok = false
				break
			}
			for _, c := range f.Causes {
				if c.Fix == "" || (fix != "" && c.Fix != fix) {
					ok = false
					break
				}
				fix = c.Fix
			}
		}
		if ok && fix != "" {
			counts[fix]++
		}
	}
	for change, n := range counts {
		res.Hints = append(res.Hints, explainv1alpha1.Hint{Change: change, Nodes: n})
	}
	sort.Slice(res.Hints, func(i, j int) bool {
		if res.Hints[i].Nodes != res.Hints[j].Nodes {
			return res.Hints[i].Nodes > res.Hints[j].Nodes
		}
		return res.Hints[i].Change < res.Hints[j].Change
	})
}

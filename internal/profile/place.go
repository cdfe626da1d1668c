package profile

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// Placer answers, for running pods in turn, "where would the scheduler put a
// replacement if this pod were evicted", with the real framework of a
// profile over one cluster state. Each answer is reserved: the replacement
// stays in the Placer's snapshot on the node it was given, and the evicted
// pod leaves it, so later calls never promise two pods one free slot. A
// Placer is for one goroutine.
type Placer struct {
	fw *Framework
}

// NewPlacer places on fw, over its snapshot. The caller opens a mutation
// session on the snapshot before placing and ends it after the batch,
// which takes back every reservation; Placers of several profiles can
// share one session, and then one another's reservations. A Placer built
// on a snapshot the caller keeps up to date (as the scheduler's cache
// keeps one) serves batch after batch.
func NewPlacer(fw *Framework) *Placer {
	return &Placer{fw: fw}
}

// Place runs a scheduling cycle for a replacement of pod (the pod unbound,
// with its own spec and labels, and the claims its controllers would
// create for it: Framework.AsCreated) on every node but the one pod runs on, with
// pod itself removed from the cluster. It returns the node the scheduler's
// scores rank first among the feasible ones (ties to the first name) and
// reserves it, or "" when no other node fits; then nothing is reserved
// and pod stays in the snapshot.
func (p *Placer) Place(ctx context.Context, pod *v1.Pod) (string, error) {
	logger := klog.FromContext(ctx)
	snap := p.fw.Snapshot
	current := pod.Spec.NodeName
	removed := false
	if current != "" {
		if err := snap.RemovePod(logger, pod, current); err == nil {
			removed = true
		}
	}
	var node string
	err := p.fw.AsCreated(ctx, replacement(pod), func(repl *v1.Pod) error {
		var err error
		node, _, err = p.best(ctx, repl, current)
		if err == nil && node != "" {
			err = reserve(snap, repl, node)
		}
		return err
	})
	if err != nil || node == "" {
		if removed {
			if pi, perr := framework.NewPodInfo(pod); perr == nil {
				_ = snap.AddPod(pi, current)
			}
		}
		return "", err
	}
	return node, nil
}

// Assign is Place for a pod not running anywhere yet (a replica of a
// workload about to be created): it reserves the pod itself on the node the
// scores rank first and returns it, with every node that shares the top
// score (the scheduler picks one of those at random; Assign the first by
// name). "" when no node fits; nothing is reserved then.
func (p *Placer) Assign(ctx context.Context, pod *v1.Pod) (string, []string, error) {
	var node string
	var tied []string
	err := p.fw.AsCreated(ctx, pod, func(created *v1.Pod) error {
		var err error
		node, tied, err = p.best(ctx, created, "")
		if err == nil && node != "" {
			err = reserve(p.fw.Snapshot, created.DeepCopy(), node)
		}
		return err
	})
	if err != nil || node == "" {
		return "", nil, err
	}
	return node, tied, nil
}

// Preempt reserves pod on node with victims (namespace/name of pods on
// node) taken out of the snapshot: the state preemption leads to once the
// victims are gone and the nominated pod is bound there.
func (p *Placer) Preempt(ctx context.Context, pod *v1.Pod, node string, victims []string) error {
	logger := klog.FromContext(ctx)
	snap := p.fw.Snapshot
	ni, err := snap.Lister().NodeInfos().Get(node)
	if err != nil {
		return fmt.Errorf("preemption on %s: %w", node, err)
	}
	byName := map[string]*v1.Pod{}
	for _, pi := range ni.GetPods() {
		byName[pi.GetPod().Namespace+"/"+pi.GetPod().Name] = pi.GetPod()
	}
	for _, v := range victims {
		victim, ok := byName[v]
		if !ok {
			return fmt.Errorf("preemption on %s: victim %s is not on the node", node, v)
		}
		if err := snap.RemovePod(logger, victim, node); err != nil {
			return fmt.Errorf("preemption on %s: removing %s: %w", node, v, err)
		}
	}
	return reserve(snap, pod.DeepCopy(), node)
}

// Framework is the framework the Placer places with.
func (p *Placer) Framework() *Framework { return p.fw }

// Unplace undoes a Place of pod that returned node: the replacement's
// reservation is dropped and pod is back on its own node, for a pod that
// was not evicted after all (paced, refused, failed), so that later
// placements neither count its slot as free nor its target as taken.
func (p *Placer) Unplace(ctx context.Context, pod *v1.Pod, node string) error {
	logger := klog.FromContext(ctx)
	snap := p.fw.Snapshot
	repl := replacement(pod)
	repl.Spec.NodeName = node
	if err := snap.RemovePod(logger, repl, node); err != nil {
		return fmt.Errorf("dropping the reservation on %s for %s/%s: %w", node, pod.Namespace, pod.Name, err)
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		return err
	}
	if err := snap.AddPod(pi, pod.Spec.NodeName); err != nil {
		return fmt.Errorf("putting %s/%s back on %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
	}
	return nil
}

// Keep puts back, in the snapshot's open mutation session, the
// reservation an earlier batch's Place made for a replacement of pod on
// node, and returns the node it now holds. Until the replacement is bound
// the scheduler has not counted it anywhere, so a batch that did not hold
// it would promise its room a second time. That room may have been taken
// since: the scheduler breaks ties between equal nodes at random, so
// another replacement can be bound to the node promised to this one (and
// the room promised to that one is then free). A replacement that no
// longer fits on node is held where the scores now rank first among the
// nodes it fits; one that fits nowhere stays on node, over-counting it
// rather than freeing room it needs ("" when node is gone too: nothing is
// held). Ending the session takes it back, as it does Place's.
func (p *Placer) Keep(ctx context.Context, pod *v1.Pod, node string) (string, error) {
	var err error
	repl := replacement(pod)
	if aerr := p.fw.AsCreated(ctx, repl, func(created *v1.Pod) error {
		repl = created
		var ok bool
		ok, err = p.fits(ctx, repl, node)
		if err == nil && !ok {
			var best string
			if best, _, err = p.best(ctx, repl, ""); best != "" {
				node = best
			}
		}
		return nil
	}); aerr != nil {
		err = aerr // no model: held where it was promised
	}
	if _, gone := p.fw.Snapshot.Lister().NodeInfos().Get(node); gone != nil {
		return "", err // its node was deleted and no other fits
	}
	if rerr := reserve(p.fw.Snapshot, repl, node); rerr != nil {
		return "", rerr
	}
	return node, err
}

// fits runs PreFilter and node's Filter for repl.
func (p *Placer) fits(ctx context.Context, repl *v1.Pod, node string) (bool, error) {
	ni, err := p.fw.Snapshot.Lister().NodeInfos().Get(node)
	if err != nil {
		return false, nil // the node is gone
	}
	state := framework.NewCycleState()
	preRes, st, _ := p.fw.RunPreFilterPlugins(ctx, state, repl)
	if !st.IsSuccess() {
		if st.IsRejected() {
			return false, nil
		}
		return false, fmt.Errorf("PreFilter plugin %s: %w", st.Plugin(), st.AsError())
	}
	if !preRes.AllNodes() && !preRes.NodeNames.Has(node) {
		return false, nil
	}
	st = p.fw.RunFilterPluginsWithNominatedPods(ctx, state, repl, ni)
	if st.Code() == fwk.Error {
		return false, fmt.Errorf("filtering node %s: %w", node, st.AsError())
	}
	return st.IsSuccess(), nil
}

// Hold is Keep without a framework to check the fit: the reservation is
// put back on node as it was made (a profile whose framework cannot be
// built still holds its replacements' room).
func Hold(snapshot *k8sline.Snapshot, pod *v1.Pod, node string) error {
	return reserve(snapshot, replacement(pod), node)
}

// reserve adds repl, a replacement, to snapshot on node.
func reserve(snapshot *k8sline.Snapshot, repl *v1.Pod, node string) error {
	repl.Spec.NodeName = node
	pi, err := framework.NewPodInfo(repl)
	if err != nil {
		return err
	}
	if err := snapshot.AddPod(pi, node); err != nil {
		return fmt.Errorf("reserving %s for a replacement of %s/%s: %w", node, repl.Namespace, repl.Name, err)
	}
	return nil
}

// best filters repl on every node but exclude and scores the feasible ones:
// the first by name of those with the top score, and all of them.
func (p *Placer) best(ctx context.Context, repl *v1.Pod, exclude string) (string, []string, error) {
	nodes, err := p.fw.Snapshot.Lister().NodeInfos().List()
	if err != nil {
		return "", nil, err
	}
	state := framework.NewCycleState()
	preRes, st, _ := p.fw.RunPreFilterPlugins(ctx, state, repl)
	if !st.IsSuccess() {
		if st.IsRejected() {
			return "", nil, nil
		}
		return "", nil, fmt.Errorf("PreFilter plugin %s: %w", st.Plugin(), st.AsError())
	}
	var feasible []fwk.NodeInfo
	for _, ni := range nodes {
		name := ni.Node().Name
		if name == exclude || (!preRes.AllNodes() && !preRes.NodeNames.Has(name)) {
			continue
		}
		st := p.fw.RunFilterPluginsWithNominatedPods(ctx, state, repl, ni)
		if st.Code() == fwk.Error {
			return "", nil, fmt.Errorf("filtering node %s: %w", name, st.AsError())
		}
		if st.IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		return "", nil, nil
	}
	sort.Slice(feasible, func(i, j int) bool { return feasible[i].Node().Name < feasible[j].Node().Name })
	if st := p.fw.RunPreScorePlugins(ctx, state, repl, feasible); !st.IsSuccess() && !st.IsSkip() {
		return "", nil, fmt.Errorf("PreScore plugin %s: %w", st.Plugin(), st.AsError())
	}
	scores, st := p.fw.RunScorePlugins(ctx, state, repl, feasible)
	if !st.IsSuccess() {
		return "", nil, fmt.Errorf("Score plugin %s: %w", st.Plugin(), st.AsError())
	}
	best := 0
	for i := range scores {
		if scores[i].TotalScore > scores[best].TotalScore {
			best = i
		}
	}
	var tied []string
	for i := range scores {
		if scores[i].TotalScore == scores[best].TotalScore {
			tied = append(tied, scores[i].Name)
		}
	}
	return scores[best].Name, tied, nil
}

// replacement is what a controller would create in pod's place: the same
// spec and labels, not bound, not nominated, a UID of its own. The claims
// its controllers would create for it are modelled while it is placed
// (Framework.AsCreated).
func replacement(pod *v1.Pod) *v1.Pod {
	out := pod.DeepCopy()
	out.UID = types.UID(string(pod.UID) + "-replacement")
	out.Spec.NodeName = ""
	out.DeletionTimestamp = nil
	out.Status = v1.PodStatus{Phase: v1.PodPending}
	return out
}

package enforcer

import (
	"context"
	"fmt"
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/internal/podaffinity"
)

// clusterState is the enforcer's picture of the cluster, kept up to date
// from informer events instead of rebuilt for every pass. The NodeInfos
// live in the scheduler's own cache (k8s.io/kubernetes
// pkg/scheduler/backend/cache) and reach the judge through a Snapshot the
// cache updates in place, node by node, as the scheduler does before each
// cycle; so a node that did not change keeps its NodeInfo and generation,
// and our InterPodAffinity's cross-cycle caches stay valid across passes.
//
// Beside it, indexes answer "which pods can a change affect" without a scan
// of the cluster (affected sets, below), and what decisions read: owners,
// terminating pods. Every method is called with the Enforcer's lock held.
type clusterState struct {
	cache    schedcache.Cache
	snapshot *k8sline.Snapshot
	// jobs serves the Jobs of Job pods, when their eviction is allowed
	// (evictJobPods); nil otherwise.
	jobs batchlisters.JobLister

	nodes      map[string]*v1.Node
	pods       map[types.UID]*v1.Pod // every pod seen, bound or not
	namespaces map[string]*v1.Namespace
	// cached holds the version of each pod given to the cache: bound, not
	// terminating, not finished (what the scheduler's cache holds too).
	cached      map[types.UID]*v1.Pod
	byNode      map[string]sets.Set[types.UID] // bound pods, terminating too
	byNamespace map[string]sets.Set[types.UID]
	owners      map[types.UID]sets.Set[types.UID]
	terminating sets.Set[types.UID]
	unbound     sets.Set[types.UID]
	// nominated: node → the pods not bound that are nominated to it.
	nominated map[string]sets.Set[types.UID]

	// domains: label key → value → the nodes with that label.
	domains map[string]map[string]sets.Set[string]
	// watchers are the cached pods with required pod (anti-)affinity
	// terms: the pods whose verdict another pod's presence can change.
	watchers map[types.UID]*watcher
	// watching: topology key → value → the watchers whose node is in
	// that domain and that have a term with that key.
	watching map[string]map[string]sets.Set[types.UID]
	// selfAffine are the watchers that match all their own required
	// affinity terms: the first-pod-of-a-series rule lets them pass when
	// no pod anywhere matches, so a pod matching them anywhere counts.
	selfAffine sets.Set[types.UID]
	// nsSelecting are the watchers with a namespaceSelector term.
	nsSelecting sets.Set[types.UID]

	// fitGeneration moves with every change that can change where a
	// replacement fits: a node added, removed, relabelled, (un)tainted,
	// (un)cordoned or resized; a pod bound, gone, finished, relabelled,
	// resized or nominated; a namespace's labels; room held for a
	// replacement released. A no-fit answer holds while it stands still
	// (tracked.noFit). It errs towards moving: its worst mistake is a
	// placement that was not needed, never a stale fit.
	fitGeneration uint64
}

// watcher is a cached pod's required pod (anti-)affinity terms, parsed as
// the scheduler parses them.
type watcher struct {
	pod      *v1.Pod
	affinity []fwk.AffinityTerm
	terms    []fwk.AffinityTerm // affinity and anti-affinity
	keys     sets.Set[string]
}

// newClusterState returns an empty state. ctx bounds the scheduler cache's
// housekeeping goroutine.
func newClusterState(ctx context.Context) *clusterState {
	metrics.Register() // the cache's housekeeping reports the scheduler's cache metrics (idempotent)
	return &clusterState{
		cache:       k8sline.NewCache(ctx, false),
		snapshot:    k8sline.NewEmptySnapshot(),
		nodes:       map[string]*v1.Node{},
		pods:        map[types.UID]*v1.Pod{},
		namespaces:  map[string]*v1.Namespace{},
		cached:      map[types.UID]*v1.Pod{},
		byNode:      map[string]sets.Set[types.UID]{},
		byNamespace: map[string]sets.Set[types.UID]{},
		owners:      map[types.UID]sets.Set[types.UID]{},
		terminating: sets.New[types.UID](),
		unbound:     sets.New[types.UID](),
		nominated:   map[string]sets.Set[types.UID]{},
		domains:     map[string]map[string]sets.Set[string]{},
		watchers:    map[types.UID]*watcher{},
		watching:    map[string]map[string]sets.Set[types.UID]{},
		selfAffine:  sets.New[types.UID](),
		nsSelecting: sets.New[types.UID](),
	}
}

// sync brings the snapshot up to date with the cache: only the nodes that
// changed since the last sync are copied.
func (s *clusterState) sync(logger klog.Logger) error {
	return s.cache.UpdateSnapshot(logger, s.snapshot.Scheduler())
}

func (s *clusterState) nsLabels(ns string) labels.Set {
	if n := s.namespaces[ns]; n != nil {
		return n.Labels
	}
	return nil
}

// addTerminating adds to the snapshot's open mutation session the
// terminating pods still bound to a known node, and returns them for
// removeAll. The judge's snapshot leaves them out; the scheduler still
// counts them, and a placement must too.
func (s *clusterState) addTerminating() ([]*v1.Pod, error) {
	var held []*v1.Pod
	for uid := range s.terminating {
		pod := s.pods[uid]
		if pod == nil || pod.Spec.NodeName == "" || s.nodes[pod.Spec.NodeName] == nil ||
			pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			return held, fmt.Errorf("terminating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if err := s.snapshot.AddPod(pi, pod.Spec.NodeName); err != nil {
			return held, fmt.Errorf("terminating pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		held = append(held, pod)
	}
	return held, nil
}

// removeAll takes pods added by addTerminating out of the snapshot again.
func (s *clusterState) removeAll(logger klog.Logger, pods []*v1.Pod) {
	for _, pod := range pods {
		if err := s.snapshot.RemovePod(logger, pod, pod.Spec.NodeName); err != nil {
			logger.Error(err, "Taking a terminating pod out of the snapshot", "pod", klog.KObj(pod))
		}
	}
}

// inCache: the scheduler's cache holds the pod (bound, not terminating,
// not finished); the judge's snapshot leaves the rest out.
func inCache(p *v1.Pod) bool {
	return p != nil && p.Spec.NodeName != "" && p.DeletionTimestamp == nil &&
		p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// setNode records node (nil: deleted; old is the last version seen) and
// returns the pods whose verdict the change can affect: the pods on the
// node (its labels are their node rules' input), and, for each label whose
// value changed, the watchers in the old and the new domain whose terms of
// that key match a pod on the node (the node's pods moved between
// domains), plus the self-affine watchers matching a pod on it (a pod that
// enters or leaves every domain of a key changes "no pod anywhere").
func (s *clusterState) setNode(logger klog.Logger, node *v1.Node, name string) sets.Set[types.UID] {
	old := s.nodes[name]
	out := sets.New[types.UID]()
	var oldLabels, newLabels map[string]string
	if old != nil {
		oldLabels = old.Labels
	}
	if node != nil {
		newLabels = node.Labels
	}
	if node != nil || old != nil {
		if old == nil || node == nil || fitChanged(old, node) {
			s.fitGeneration++
		}
	}
	switch {
	case node == nil && old != nil:
		delete(s.nodes, name)
		if err := s.cache.RemoveNode(logger, old); err != nil {
			logger.V(4).Info("Removing node from the cache", "node", name, "err", err)
		}
	case node != nil && old == nil:
		s.nodes[name] = node
		s.cache.AddNode(logger, node)
	case node != nil:
		s.nodes[name] = node
		s.cache.UpdateNode(logger, old, node)
		if !relevantUpdate(old, node) {
			return out // status churn: no verdict or decision reads it
		}
	default:
		return out
	}
	onNode := s.byNode[name]
	for uid := range onNode {
		out.Insert(uid)
	}
	if maps.Equal(oldLabels, newLabels) {
		return out
	}
	// Reindex the node's domains and its watchers' domains.
	for k, v := range oldLabels {
		if d := s.domains[k][v]; d != nil {
			d.Delete(name)
			if d.Len() == 0 {
				delete(s.domains[k], v)
			}
		}
	}
	for k, v := range newLabels {
		if s.domains[k] == nil {
			s.domains[k] = map[string]sets.Set[string]{}
		}
		if s.domains[k][v] == nil {
			s.domains[k][v] = sets.New[string]()
		}
		s.domains[k][v].Insert(name)
	}
	for uid := range onNode {
		if w := s.watchers[uid]; w != nil {
			s.unwatch(w, oldLabels)
			s.watch(w, newLabels)
		}
	}
	// Who can see the node's pods move between domains.
	var podsOn []*v1.Pod
	for uid := range onNode {
		if p := s.cached[uid]; p != nil {
			podsOn = append(podsOn, p)
		}
	}
	if len(podsOn) == 0 {
		return out
	}
	for k := range s.watching {
		ov, oldHas := oldLabels[k]
		nv, newHas := newLabels[k]
		if oldHas == newHas && ov == nv {
			continue
		}
		for _, v := range []string{ov, nv} {
			for uid := range s.watching[k][v] {
				if s.termsOfKeyMatchAny(s.watchers[uid], k, podsOn) {
					out.Insert(uid)
				}
			}
		}
	}
	for uid := range s.selfAffine {
		for _, p := range podsOn {
			if s.matchesAllAffinity(s.watchers[uid], p) {
				out.Insert(uid)
				break
			}
		}
	}
	return out
}

// setPod records pod (nil: deleted; uid names it) and returns the pods
// whose verdict the change can affect: the pod itself and the pods that can
// see it (reach) before and after the change.
func (s *clusterState) setPod(logger klog.Logger, pod *v1.Pod, uid types.UID) sets.Set[types.UID] {
	old := s.pods[uid]
	if prev := s.cached[uid]; old != nil && pod != nil && prev != nil && inCache(pod) && !relevantUpdate(old, pod) && sameController(old, pod) {
		// Status churn (or a resize): the cache and the stored object
		// follow, but no verdict or decision reads what changed; a
		// resize can change where replacements fit.
		if !requestsEqual(prev, pod) {
			s.fitGeneration++
		}
		if err := s.cache.UpdatePod(logger, prev, pod); err != nil {
			logger.Error(err, "Updating pod in the cache", "pod", klog.KObj(pod))
		}
		s.cached[uid], s.pods[uid] = pod, pod
		if w := s.watchers[uid]; w != nil {
			w.pod = pod
		}
		return sets.New[types.UID]()
	}
	out := sets.New(uid)
	if takesRoom(old) || takesRoom(pod) {
		s.fitGeneration++
	}
	if old != nil {
		s.reach(old, out)
		s.unindexPod(old)
	}
	prev := s.cached[uid]
	switch {
	case prev != nil && inCache(pod) && prev.Spec.NodeName == pod.Spec.NodeName:
		if err := s.cache.UpdatePod(logger, prev, pod); err != nil {
			logger.Error(err, "Updating pod in the cache", "pod", klog.KObj(pod))
		}
		s.cached[uid] = pod
	default:
		if prev != nil {
			if err := s.cache.RemovePod(logger, prev); err != nil {
				logger.Error(err, "Removing pod from the cache", "pod", klog.KObj(prev))
			}
			delete(s.cached, uid)
		}
		if inCache(pod) {
			if err := s.cache.AddPod(logger, pod); err != nil {
				logger.Error(err, "Adding pod to the cache", "pod", klog.KObj(pod))
			} else {
				s.cached[uid] = pod
			}
		}
	}
	if pod == nil {
		delete(s.pods, uid)
		return out
	}
	s.pods[uid] = pod
	s.indexPod(pod)
	s.reach(pod, out)
	return out
}

// indexPod adds pod to the indexes (the cache is done by setPod).
func (s *clusterState) indexPod(p *v1.Pod) {
	add := func(m map[string]sets.Set[types.UID], k string) {
		if m[k] == nil {
			m[k] = sets.New[types.UID]()
		}
		m[k].Insert(p.UID)
	}
	if p.Spec.NodeName != "" {
		add(s.byNode, p.Spec.NodeName)
	}
	add(s.byNamespace, p.Namespace)
	if o := metav1.GetControllerOf(p); o != nil {
		if s.owners[o.UID] == nil {
			s.owners[o.UID] = sets.New[types.UID]()
		}
		s.owners[o.UID].Insert(p.UID)
	}
	if p.DeletionTimestamp != nil {
		s.terminating.Insert(p.UID)
	}
	if p.Spec.NodeName == "" {
		s.unbound.Insert(p.UID)
		if n := p.Status.NominatedNodeName; n != "" {
			add(s.nominated, n)
		}
	}
	if s.cached[p.UID] == nil || !podaffinity.HasTerms(p) {
		return
	}
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		return // never judged on these rules: reported unjudged on its own events
	}
	w := &watcher{pod: p, affinity: pi.GetRequiredAffinityTerms(), keys: sets.New[string]()}
	w.terms = append(append(w.terms, w.affinity...), pi.GetRequiredAntiAffinityTerms()...)
	if len(w.terms) == 0 {
		return
	}
	for _, t := range w.terms {
		w.keys.Insert(t.TopologyKey)
		// A term without a namespaceSelector is parsed to labels.Nothing()
		// and an empty one to Everything(): namespace labels change
		// neither, and both print as "".
		if t.NamespaceSelector != nil && t.NamespaceSelector.String() != "" {
			s.nsSelecting.Insert(p.UID)
		}
	}
	s.watchers[p.UID] = w
	if len(w.affinity) > 0 && s.matchesAllAffinity(w, p) {
		s.selfAffine.Insert(p.UID)
	}
	if n := s.nodes[p.Spec.NodeName]; n != nil {
		s.watch(w, n.Labels)
	}
}

// unindexPod removes p from the indexes.
func (s *clusterState) unindexPod(p *v1.Pod) {
	del := func(m map[string]sets.Set[types.UID], k string) {
		if set := m[k]; set != nil {
			set.Delete(p.UID)
			if set.Len() == 0 {
				delete(m, k)
			}
		}
	}
	del(s.byNode, p.Spec.NodeName)
	del(s.byNamespace, p.Namespace)
	if o := metav1.GetControllerOf(p); o != nil {
		if set := s.owners[o.UID]; set != nil {
			set.Delete(p.UID)
			if set.Len() == 0 {
				delete(s.owners, o.UID)
			}
		}
	}
	s.terminating.Delete(p.UID)
	s.unbound.Delete(p.UID)
	del(s.nominated, p.Status.NominatedNodeName)
	if w := s.watchers[p.UID]; w != nil {
		if n := s.nodes[p.Spec.NodeName]; n != nil {
			s.unwatch(w, n.Labels)
		}
		delete(s.watchers, p.UID)
		s.selfAffine.Delete(p.UID)
		s.nsSelecting.Delete(p.UID)
	}
}

func (s *clusterState) watch(w *watcher, nodeLabels map[string]string) {
	for k := range w.keys {
		v, ok := nodeLabels[k]
		if !ok {
			continue
		}
		if s.watching[k] == nil {
			s.watching[k] = map[string]sets.Set[types.UID]{}
		}
		if s.watching[k][v] == nil {
			s.watching[k][v] = sets.New[types.UID]()
		}
		s.watching[k][v].Insert(w.pod.UID)
	}
}

func (s *clusterState) unwatch(w *watcher, nodeLabels map[string]string) {
	for k := range w.keys {
		v, ok := nodeLabels[k]
		if !ok {
			continue
		}
		if set := s.watching[k][v]; set != nil {
			set.Delete(w.pod.UID)
			if set.Len() == 0 {
				delete(s.watching[k], v)
				if len(s.watching[k]) == 0 {
					delete(s.watching, k)
				}
			}
		}
	}
}

// reach adds to out the watchers whose verdict p's presence in the
// snapshot can change: those in a domain of p's node with a term of that
// domain's key matching p, and the self-affine ones p matches (their
// first-pod rule counts pods anywhere).
func (s *clusterState) reach(p *v1.Pod, out sets.Set[types.UID]) {
	if !inCache(p) {
		return
	}
	if n := s.nodes[p.Spec.NodeName]; n != nil {
		pods := []*v1.Pod{p}
		for k, byValue := range s.watching {
			v, ok := n.Labels[k]
			if !ok {
				continue
			}
			for uid := range byValue[v] {
				if s.termsOfKeyMatchAny(s.watchers[uid], k, pods) {
					out.Insert(uid)
				}
			}
		}
	}
	for uid := range s.selfAffine {
		if s.matchesAllAffinity(s.watchers[uid], p) {
			out.Insert(uid)
		}
	}
}

func (s *clusterState) termsOfKeyMatchAny(w *watcher, key string, pods []*v1.Pod) bool {
	for i := range w.terms {
		t := &w.terms[i]
		if t.TopologyKey != key {
			continue
		}
		for _, p := range pods {
			if t.Matches(p, s.nsLabels(p.Namespace)) {
				return true
			}
		}
	}
	return false
}

func (s *clusterState) matchesAllAffinity(w *watcher, p *v1.Pod) bool {
	for i := range w.affinity {
		if !w.affinity[i].Matches(p, s.nsLabels(p.Namespace)) {
			return false
		}
	}
	return true
}

// setNamespace records ns (nil: deleted) and returns the pods its change
// can affect: its pods (a namespace selector of the config opts them in or
// out) and, when its labels changed, every watcher with a
// namespaceSelector term.
func (s *clusterState) setNamespace(ns *v1.Namespace, name string) sets.Set[types.UID] {
	old := s.namespaces[name]
	if ns == nil {
		delete(s.namespaces, name)
	} else {
		s.namespaces[name] = ns
	}
	out := sets.New(s.byNamespace[name].UnsortedList()...)
	var oldLabels, newLabels map[string]string
	if old != nil {
		oldLabels = old.Labels
	}
	if ns != nil {
		newLabels = ns.Labels
	}
	if !maps.Equal(oldLabels, newLabels) || (old == nil) != (ns == nil) {
		s.fitGeneration++ // a replacement's namespaceSelector terms read them
		out.Insert(s.nsSelecting.UnsortedList()...)
		// Whether such a watcher matches its own terms can change too.
		for uid := range s.nsSelecting {
			w := s.watchers[uid]
			if len(w.affinity) > 0 && s.matchesAllAffinity(w, w.pod) {
				s.selfAffine.Insert(uid)
			} else {
				s.selfAffine.Delete(uid)
			}
		}
	}
	return out
}

// pdbReach returns the pods a PodDisruptionBudget covers: its verdict on
// their evictions changes.
func (s *clusterState) pdbReach(pdb *policyv1.PodDisruptionBudget) sets.Set[types.UID] {
	out := sets.New[types.UID]()
	if pdb == nil {
		return out
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return out
	}
	for uid := range s.byNamespace[pdb.Namespace] {
		if p := s.pods[uid]; p != nil && sel.Matches(labels.Set(p.Labels)) {
			out.Insert(uid)
		}
	}
	return out
}

// domainNodes returns the nodes in node's domain of each key, node
// included: what a pod's required terms with those keys can see from it.
func (s *clusterState) domainNodes(node *v1.Node, keys sets.Set[string]) sets.Set[string] {
	out := sets.New(node.Name)
	for k := range keys {
		if v, ok := node.Labels[k]; ok {
			for name := range s.domains[k][v] {
				out.Insert(name)
			}
		}
	}
	return out
}

// fitChanged: an update of a node that can change what fits on it or
// beside it: labels (affinity, domains), taints, cordon, allocatable.
func fitChanged(old, cur *v1.Node) bool {
	return !maps.Equal(old.Labels, cur.Labels) || !equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) ||
		old.Spec.Unschedulable != cur.Spec.Unschedulable || !equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable)
}

// takesRoom: a placement counts the pod, or may have: bound (terminating
// and finished ones too: a placement holds the terminating ones), or
// nominated to a node.
func takesRoom(p *v1.Pod) bool {
	return p != nil && (p.Spec.NodeName != "" || p.Status.NominatedNodeName != "")
}

// requestsEqual: two versions of a pod request the same resources, as
// declared and as the kubelet reports them (an in-place resize).
func requestsEqual(a, b *v1.Pod) bool {
	for _, opts := range []resourcehelper.PodResourcesOptions{{}, {UseStatusResources: true}} {
		if !equality.Semantic.DeepEqual(resourcehelper.PodRequests(a, opts), resourcehelper.PodRequests(b, opts)) {
			return false
		}
	}
	return true
}

// sameController: both versions have the same controller (or none); an
// adopted or orphaned pod changes its owner's counts and its protection.
func sameController(a, b *v1.Pod) bool {
	ca, cb := metav1.GetControllerOf(a), metav1.GetControllerOf(b)
	return (ca == nil) == (cb == nil) && (ca == nil || ca.UID == cb.UID)
}

// The book of evictions (package evictions) reads the state through these.

// Pod is the pod with uid, or nil.
func (s *clusterState) Pod(uid types.UID) *v1.Pod { return s.pods[uid] }

// Controlled are the pods whose controller is owner.
func (s *clusterState) Controlled(owner types.UID) sets.Set[types.UID] { return s.owners[owner] }

// Terminating are the pods with a deletion timestamp.
func (s *clusterState) Terminating() sets.Set[types.UID] { return s.terminating }

// Counted: the scheduler's cache holds the pod.
func (s *clusterState) Counted(pod *v1.Pod) bool { return inCache(pod) }

// Replacement: a Job replaces its pod once, unless it has finished, is
// suspended or is gone (when the Jobs are not watched, no Job pod is ever
// evicted); every other controller keeps its number of pods.
func (s *clusterState) Replacement(pod *v1.Pod) evictions.Replacement {
	o := metav1.GetControllerOf(pod)
	if o == nil || !isJob(o) || s.jobs == nil {
		return evictions.ReplacedWhenReady
	}
	job := s.job(pod)
	if job == nil || job.UID != o.UID || (job.Spec.Suspend != nil && *job.Spec.Suspend) {
		return evictions.NotReplaced
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget ||
			c.Type == batchv1.JobSuccessCriteriaMet) && c.Status == v1.ConditionTrue {
			return evictions.NotReplaced
		}
	}
	return evictions.ReplacedOnce
}

// job is the Job that controls pod, or nil (not a Job's pod, Jobs not
// watched, or not found).
func (s *clusterState) job(pod *v1.Pod) *batchv1.Job {
	o := metav1.GetControllerOf(pod)
	if o == nil || !isJob(o) || s.jobs == nil {
		return nil
	}
	job, err := s.jobs.Jobs(pod.Namespace).Get(o.Name)
	if err != nil {
		return nil
	}
	return job
}

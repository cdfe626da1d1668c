package enforcer

import (
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer/evictions"
)

// This file is the cluster state's intake: what the informers report is
// recorded (changes), filtered (relevantUpdate) and applied to the state
// at the start of the next pass (drain).

// changes are what the informers reported since the last pass: the latest
// version of each object (nil: deleted), applied to the state at the start
// of the next pass. Handlers only record, so they never wait for a pass.
type changes struct {
	mu         sync.Mutex
	nodes      map[string]*v1.Node
	pods       map[types.UID]*v1.Pod
	namespaces map[string]*v1.Namespace
	pdbs       []*policyv1.PodDisruptionBudget // every version seen, old and new
	// full asks for every pod to be judged: the first pass, and the
	// informers' resync (the periodic backstop).
	full bool
}

func newChanges() *changes {
	return &changes{nodes: map[string]*v1.Node{}, pods: map[types.UID]*v1.Pod{}, namespaces: map[string]*v1.Namespace{}, full: true}
}

// record notes obj (deleted: it is gone).
func (ch *changes) record(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch o := obj.(type) {
	case *v1.Node:
		if deleted {
			ch.nodes[o.Name] = nil
		} else {
			ch.nodes[o.Name] = o
		}
	case *v1.Pod:
		if deleted {
			ch.pods[o.UID] = nil
		} else {
			ch.pods[o.UID] = o
		}
	case *v1.Namespace:
		if deleted {
			ch.namespaces[o.Name] = nil
		} else {
			ch.namespaces[o.Name] = o
		}
	case *policyv1.PodDisruptionBudget:
		ch.pdbs = append(ch.pdbs, o)
	}
}

// resync asks the next pass to judge every pod.
func (ch *changes) resync() {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.full = true
}

// drain applies the recorded changes to s and returns the pods they can
// affect, and whether every pod is to be judged.
func (ch *changes) drain(logger klog.Logger, s *clusterState) (sets.Set[types.UID], bool) {
	ch.mu.Lock()
	nodes, pods, namespaces, pdbs, full := ch.nodes, ch.pods, ch.namespaces, ch.pdbs, ch.full
	ch.nodes, ch.pods, ch.namespaces, ch.pdbs, ch.full = map[string]*v1.Node{}, map[types.UID]*v1.Pod{}, map[string]*v1.Namespace{}, nil, false
	ch.mu.Unlock()
	out := sets.New[types.UID]()
	add := func(set sets.Set[types.UID]) {
		for uid := range set {
			out.Insert(uid)
		}
	}
	for name, ns := range namespaces {
		add(s.setNamespace(ns, name))
	}
	for name, n := range nodes {
		add(s.setNode(logger, n, name))
	}
	for uid, p := range pods {
		add(s.setPod(logger, p, uid))
	}
	for _, pdb := range pdbs {
		add(s.pdbReach(pdb))
	}
	return out, full
}

// isResync: an update whose object did not change is the informers'
// resync.
func isResync(old, cur any) bool {
	o, ok1 := old.(metav1.Object)
	c, ok2 := cur.(metav1.Object)
	return ok1 && ok2 && o.GetResourceVersion() == c.GetResourceVersion()
}

// relevantUpdate reports whether an update can change a judgement or a
// decision: for pods their labels, annotations, node, deletion, phase or
// Ready condition; for nodes their labels, taints, cordon, allocatable or
// Ready condition.
// Container status churn and node heartbeats start no pass; an update
// whose object did not change is the informers' resync, the periodic
// backstop, and always starts one.
func relevantUpdate(old, cur any) bool {
	switch o := old.(type) {
	case *v1.Pod:
		c, ok := cur.(*v1.Pod)
		if !ok {
			return true
		}
		if o.ResourceVersion == c.ResourceVersion {
			return true // a resync: the periodic backstop
		}
		return !maps.Equal(o.Labels, c.Labels) || !sameAnnotations(o.Annotations, c.Annotations) ||
			o.Spec.NodeName != c.Spec.NodeName || (o.DeletionTimestamp == nil) != (c.DeletionTimestamp == nil) ||
			o.Status.Phase != c.Status.Phase || evictions.PodReady(o) != evictions.PodReady(c)
	case *v1.Node:
		c, ok := cur.(*v1.Node)
		if !ok {
			return true
		}
		if o.ResourceVersion == c.ResourceVersion {
			return true
		}
		// What changes where a replacement fits (an uncordon, say) can
		// end a no-fit: it starts a pass too.
		return fitChanged(o, c) || nodeReady(o) != nodeReady(c)
	}
	return true
}

// sameAnnotations compares pod annotations but for the enforcer's own
// record, which no verdict or decision reads from the informers (a leader
// reads it once, at its start): writing it starts no pass.
func sameAnnotations(a, b map[string]string) bool {
	if len(a)-len(b) > 1 || len(b)-len(a) > 1 {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; k != RecordAnnotation && (!ok || v != w) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; k != RecordAnnotation && !ok {
			return false
		}
	}
	return true
}

//go:build k8s1.35 || k8s1.36

package k8sline

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Snapshot is the scheduler's snapshot with a mutation session: pods added
// and removed between StartMutations and EndMutations are taken back by
// EndMutations. 1.35 and 1.36's snapshot has no session (1.37 added it), so
// this one keeps its own: the first change of a node in a session saves a
// copy of its NodeInfo, and EndMutations puts every saved copy back as it
// was, generation included, so caches keyed on generations stay valid.
// While a session has changed anything, the lists of nodes with affinity
// pods are computed from the nodes, since the snapshot's own lists do not
// follow pods added or removed by hand.
type Snapshot struct {
	s     *cache.Snapshot
	open  bool
	saved map[*framework.NodeInfo]*framework.NodeInfo
}

// NewSnapshot builds a snapshot of pods on nodes.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	return &Snapshot{s: cache.NewSnapshot(pods, nodes)}
}

// NewEmptySnapshot builds a snapshot for a scheduler cache to fill
// (cache.UpdateSnapshot on Scheduler()).
func NewEmptySnapshot() *Snapshot { return &Snapshot{s: cache.NewEmptySnapshot()} }

// Scheduler is the snapshot itself, for the scheduler cache to update
// (outside a mutation session).
func (s *Snapshot) Scheduler() *cache.Snapshot { return s.s }

// Lister is what the framework and plugins read.
func (s *Snapshot) Lister() fwk.SharedLister { return sessionLister{Snapshot: s.s, session: s} }

// FrameworkOptions hand the snapshot to a framework as its lister.
func (s *Snapshot) FrameworkOptions() []frameworkruntime.Option {
	return []frameworkruntime.Option{frameworkruntime.WithSnapshotSharedLister(s.Lister())}
}

// StartMutations opens a mutation session.
func (s *Snapshot) StartMutations() error {
	if s.open {
		return errors.New("cannot stack mutations")
	}
	s.open, s.saved = true, map[*framework.NodeInfo]*framework.NodeInfo{}
	return nil
}

// EndMutations takes back every change of the session.
func (s *Snapshot) EndMutations() error {
	if !s.open {
		return errors.New("no mutation session to end")
	}
	for ni, was := range s.saved {
		*ni = *was
	}
	s.open, s.saved = false, nil
	return nil
}

// AddPod adds pi on node, within a session.
func (s *Snapshot) AddPod(pi fwk.PodInfo, node string) error {
	ni, err := s.touch(node, "AddPod")
	if err != nil {
		return err
	}
	ni.AddPodInfo(pi)
	return nil
}

// RemovePod removes pod from node, within a session.
func (s *Snapshot) RemovePod(logger klog.Logger, pod *v1.Pod, node string) error {
	ni, err := s.touch(node, "RemovePod")
	if err != nil {
		return err
	}
	return ni.RemovePod(logger, pod)
}

// touch returns node's NodeInfo for a change, saving it first.
func (s *Snapshot) touch(node, op string) (*framework.NodeInfo, error) {
	if !s.open {
		return nil, fmt.Errorf("%s() called outside of mutation session", op)
	}
	got, err := s.s.Get(node)
	if err != nil {
		return nil, err
	}
	ni, ok := got.(*framework.NodeInfo)
	if !ok {
		return nil, fmt.Errorf("node %q: unexpected NodeInfo type %T", node, got)
	}
	if _, done := s.saved[ni]; !done {
		was := ni.Snapshot().(*framework.NodeInfo)
		keepImageCounts(ni, was)
		s.saved[ni] = was
	}
	return ni, nil
}

// sessionLister is the snapshot as the framework reads it, with the
// affinity lists recomputed while a session has changed nodes.
type sessionLister struct {
	*cache.Snapshot
	session *Snapshot
}

func (l sessionLister) NodeInfos() fwk.NodeInfoLister { return l }

func (l sessionLister) changed() bool { return len(l.session.saved) > 0 }

func (l sessionLister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	if !l.changed() {
		return l.Snapshot.NodeInfos().HavePodsWithAffinityList()
	}
	return l.having(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithAffinity()) > 0 })
}

func (l sessionLister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	if !l.changed() {
		return l.Snapshot.NodeInfos().HavePodsWithRequiredAntiAffinityList()
	}
	return l.having(func(ni fwk.NodeInfo) bool { return len(ni.GetPodsWithRequiredAntiAffinity()) > 0 })
}

func (l sessionLister) having(keep func(fwk.NodeInfo) bool) ([]fwk.NodeInfo, error) {
	all, err := l.Snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}
	var out []fwk.NodeInfo
	for _, ni := range all {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out, nil
}

//go:build !k8s1.35 && !k8s1.36

package k8sline

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Snapshot is the scheduler's snapshot with a mutation session: pods added
// and removed between StartMutations and EndMutations are taken back by
// EndMutations. 1.37's snapshot has the session itself.
type Snapshot struct {
	s *cache.Snapshot
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
func (s *Snapshot) Lister() fwk.SharedLister { return s.s }

// FrameworkOptions hand the snapshot to a framework: as its lister and, for
// the preemption dry run, as its mutable lister.
func (s *Snapshot) FrameworkOptions() []frameworkruntime.Option {
	return []frameworkruntime.Option{
		frameworkruntime.WithSnapshotSharedLister(s.s),
		frameworkruntime.WithMutableSnapshotLister(s.s),
	}
}

// StartMutations opens a mutation session. The session works on clones
// of the NodeInfos, which keep their image counts (keepImageCounts).
func (s *Snapshot) StartMutations() error {
	before, err := s.s.NodeInfos().List()
	if err != nil {
		return err
	}
	if err := s.s.StartMutations(); err != nil {
		return err
	}
	for _, orig := range before {
		got, err := s.s.Get(orig.Node().Name)
		if err != nil {
			return err
		}
		if clone, ok := got.(*framework.NodeInfo); ok {
			keepImageCounts(orig, clone)
		}
	}
	return nil
}

// EndMutations takes back every change of the session.
func (s *Snapshot) EndMutations() error { return s.s.EndMutations() }

// AddPod adds pi on node, within a session.
func (s *Snapshot) AddPod(pi fwk.PodInfo, node string) error { return s.s.AddPod(pi, node) }

// RemovePod removes pod from node, within a session.
func (s *Snapshot) RemovePod(logger klog.Logger, pod *v1.Pod, node string) error {
	return s.s.RemovePod(logger, pod, node)
}

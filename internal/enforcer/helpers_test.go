package enforcer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/profile"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Test scaffolding: a whole pass or a judge over a list of objects, with
// the namespaces served by a fake clientset. Run keeps one state from its
// informers instead; none of this is linked into placement-enforcer.

// Cluster is the objects a Pass judges.
type Cluster struct {
	Nodes      []*v1.Node
	Pods       []*v1.Pod
	Namespaces []*v1.Namespace
	// Jobs are served to the pass when the config lets Job pods be
	// evicted, as Run's Job informer serves them.
	Jobs []*batchv1.Job
}

// Pass judges every opted-in pod of c and acts on those due. It returns how
// soon the next pass is needed for a grace period or backoff to be re-read
// (0: no timer pending; events and the resync will call again). It builds
// its state from c; Run keeps one state from its informers instead and
// judges only what each change can affect. The judge and the placers read
// the namespaces and nodes from a fake clientset.
func (e *Enforcer) Pass(ctx context.Context, c *Cluster) (time.Duration, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the judge's and placers' informers
	logger := klog.FromContext(ctx)
	s := newClusterState(ctx)
	if e.cfg.EvictJobPods {
		jobs := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
		for _, job := range c.Jobs {
			if err := jobs.Add(job); err != nil {
				return 0, err
			}
		}
		s.jobs = batchlisters.NewJobLister(jobs)
	}
	objs := make([]runtime.Object, 0, len(c.Namespaces)+len(c.Nodes))
	for _, ns := range c.Namespaces {
		s.setNamespace(ns, ns.Name)
		objs = append(objs, ns)
	}
	for _, n := range c.Nodes {
		s.setNode(logger, n, n.Name)
		objs = append(objs, n)
	}
	for _, pod := range c.Pods {
		s.setPod(logger, pod, pod.UID)
	}
	if err := s.sync(logger); err != nil {
		return 0, err
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	j, err := newJudge(ctx, e.sched, factory, s)
	if err != nil {
		return 0, fmt.Errorf("building the judge: %w", err)
	}
	pl, err := testPlacing(ctx, client, factory)
	if err != nil {
		return 0, err
	}
	return e.pass(ctx, s, j, pl, nil, true)
}

// testPlacing is a placing over a fake clientset's informers, until ctx
// ends.
func testPlacing(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (*placing, error) {
	src, err := profile.NewSources(ctx, client, factory)
	if err != nil {
		return nil, err
	}
	return newPlacing(ctx, src), nil
}

// NewJudge snapshots pods and nodes as the scheduler's cache would hold them
// (bound pods only; terminating pods are left out, since they are on their
// way out and a verdict must not depend on them) and builds the plugins of
// every profile in cfg. factory serves the Namespace lister
// InterPodAffinity needs; NewJudge starts it and waits for its caches.
func NewJudge(ctx context.Context, cfg *config.KubeSchedulerConfiguration, factory informers.SharedInformerFactory, nodes []*v1.Node, pods []*v1.Pod) (*Judge, error) {
	s := newClusterState(ctx)
	logger := klog.FromContext(ctx)
	for _, n := range nodes {
		s.setNode(logger, n, n.Name)
	}
	for _, p := range pods {
		s.setPod(logger, p, p.UID)
	}
	if err := s.sync(logger); err != nil {
		return nil, err
	}
	return newJudge(ctx, cfg, factory, s)
}

// stepRig is a rig whose passes run as Run's do: one state kept across
// passes from recorded changes (ch), judging only what they can affect.
type stepRig struct {
	*rig
	ctx context.Context
	s   *clusterState
	j   *Judge
	pl  *placing
	ch  *changes
}

// newStepRig records nodes and pods for the first step; the namespace ns
// is served to the judge and the placers.
func newStepRig(t testing.TB, mutate func(*enforcerv1alpha1.EnforcerConfiguration), nodes []*v1.Node, pods []*v1.Pod) *stepRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sr := &stepRig{rig: newRig(t, mutate), ctx: ctx, s: newClusterState(ctx), ch: newChanges()}
	for _, n := range nodes {
		sr.ch.record(n, false)
	}
	for _, p := range pods {
		sr.ch.record(p, false)
	}
	client := fake.NewClientset(tu.MakeNamespace("ns", nil))
	factory := informers.NewSharedInformerFactory(client, 0)
	var err error
	if sr.j, err = newJudge(ctx, testConfig(t), factory, sr.s); err != nil {
		t.Fatal(err)
	}
	if sr.pl, err = testPlacing(ctx, client, factory); err != nil {
		t.Fatal(err)
	}
	return sr
}

// step applies the recorded changes and runs a pass, as Run's loop does.
func (sr *stepRig) step() map[string]violationsv1alpha1.Report {
	sr.t.Helper()
	if _, err := sr.e.step(sr.ctx, sr.s, sr.j, sr.pl, sr.ch); err != nil {
		sr.t.Fatal(err)
	}
	out := map[string]violationsv1alpha1.Report{}
	for _, rep := range sr.e.Reports() {
		out[strings.TrimPrefix(rep.Pod, "ns/")] = rep
	}
	return out
}

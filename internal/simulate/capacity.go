package simulate

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// DefaultCapacityLimit bounds a capacity search: each replica runs every
// filter and score on every node, so a tiny pod on a large cluster would
// otherwise take minutes.
const DefaultCapacityLimit = 1000

// MaxReplicas places further replicas of obj, the one workload of a file,
// one at a time through profile's framework over c, each reserved before
// the next as Run does, until one stays Pending or limit replicas are
// placed (limit 0: no bound but the nodes' room, which ends the search
// anyway). The replicas come after any the cluster runs: the workload's
// own spec.replicas is not placed first. The PlacementSimulation holds every replica
// placed and the one that stays Pending, with its explanation.
func MaxReplicas(ctx context.Context, c *explain.Cluster, profile *config.KubeSchedulerProfile, obj runtime.Object, namespace string, limit int, opts Options) (*simulatev1alpha1.PlacementSimulation, []string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the placer's informers
	src, notes, err := newReplicaSource(obj, namespace, c, limit)
	if err != nil {
		return nil, nil, err
	}
	s, err := newSession(ctx, c, profile, opts)
	if err != nil {
		return nil, nil, err
	}
	capy := &simulatev1alpha1.Capacity{Workload: src.workload, Limit: limit, StoppedBy: simulatev1alpha1.StoppedUnschedulable}
	preempted := false
	for i := 0; ; i++ {
		if limit > 0 && i == limit {
			capy.StoppedBy = simulatev1alpha1.StoppedLimit
			break
		}
		r, err := src.next()
		if err != nil {
			return nil, nil, err
		}
		rr, err := s.place(ctx, r)
		if err != nil {
			return nil, nil, err
		}
		if rr.Node == "" {
			capy.Reason = rr.Reason
			break
		}
		if len(rr.Preempts) > 0 {
			preempted = true
		}
		if preempted {
			capy.Preempting++
		} else {
			capy.Fits++
		}
		if opts.Progress != nil {
			opts.Progress(i+1, limit)
		}
	}
	capy.ByNode, capy.ByTopology = shares(s.res.Replicas, capy.Fits)
	s.res.Capacity = capy
	return s.res, notes, nil
}

// shares counts placed replicas per node and per topology value; the
// first fits of them were placed without preemption.
func shares(replicas []simulatev1alpha1.ReplicaResult, fits int) (byNode, byTopology []simulatev1alpha1.Share) {
	count := func(key func(simulatev1alpha1.ReplicaResult) string) []simulatev1alpha1.Share {
		idx := map[string]int{}
		out := []simulatev1alpha1.Share{}
		for i, rr := range replicas {
			if rr.Node == "" {
				continue
			}
			k := key(rr)
			j, ok := idx[k]
			if !ok {
				j = len(out)
				idx[k] = j
				out = append(out, simulatev1alpha1.Share{Name: k})
			}
			if i < fits {
				out[j].Fits++
			} else {
				out[j].Preempting++
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			a, b := out[i].Fits+out[i].Preempting, out[j].Fits+out[j].Preempting
			if a != b {
				return a > b
			}
			return out[i].Name < out[j].Name
		})
		return out
	}
	return count(func(rr simulatev1alpha1.ReplicaResult) string { return rr.Node }),
		count(func(rr simulatev1alpha1.ReplicaResult) string { return orDash(rr.Topology) })
}

// replicaSource hands out the replicas of one workload in turn, as many as
// asked, named after the workload's controller's pods and skipping names
// the cluster already has (a StatefulSet's next ordinal is after its
// running ones).
type replicaSource struct {
	obj       runtime.Object
	namespace string
	c         *explain.Cluster
	workload  string
	taken     map[string]bool
	// made are the replicas built so far; i is the next index to hand out.
	made []Replica
	i    int
}

func newReplicaSource(obj runtime.Object, namespace string, c *explain.Cluster, limit int) (*replicaSource, []string, error) {
	if _, ok := obj.(*appsv1.DaemonSet); ok {
		return nil, nil, fmt.Errorf("DaemonSet/%s has no replica count (one pod per node)", obj.(*appsv1.DaemonSet).Name)
	}
	taken := map[string]bool{}
	for _, p := range c.Pods {
		taken[p.Namespace+"/"+p.Name] = true
	}
	s := &replicaSource{obj: obj.DeepCopyObject(), namespace: namespace, c: c, taken: taken}
	// The first batch adds the workload's controller to c, before the
	// placer is built over it; its notes are the workload's. A
	// StatefulSet's controller creates each replica's claims from its
	// volumeClaimTemplates before the pod, and the placer sees only the
	// claims in c when it is built: they are all made now, for as many
	// replicas as the search can reach (the limit, else one more than the
	// nodes hold pods).
	first := 16
	if set, ok := obj.(*appsv1.StatefulSet); ok && len(set.Spec.VolumeClaimTemplates) > 0 {
		if first = limit; first == 0 {
			first = podRoom(c) + 1
		}
		for name := range taken {
			if strings.HasPrefix(name, set.Namespace+"/"+set.Name+"-") {
				first++ // a running ordinal is skipped
			}
		}
	}
	notes, err := s.grow(first)
	if err != nil {
		return nil, nil, err
	}
	if len(s.made) > 0 {
		s.workload = s.made[0].Workload
	}
	return s, notes, nil
}

func (s *replicaSource) next() (Replica, error) {
	for {
		for ; s.i < len(s.made); s.i++ {
			r := s.made[s.i]
			if !s.taken[r.Pod.Namespace+"/"+r.Pod.Name] {
				s.i++
				return r, nil
			}
		}
		if _, err := s.grow(2 * len(s.made)); err != nil {
			return Replica{}, err
		}
	}
}

// podRoom is how many more pods the nodes' allocatable pods admit.
func podRoom(c *explain.Cluster) int {
	on := map[string]int{}
	for _, p := range c.Pods {
		if p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
			on[p.Spec.NodeName]++
		}
	}
	room := 0
	for _, n := range c.Nodes {
		if free := int(n.Status.Allocatable.Pods().Value()) - on[n.Name]; free > 0 {
			room += free
		}
	}
	return room
}

// grow builds the first n replicas of the workload (Workloads does, so they
// are the pods its controller would create); doubling n keeps the total
// work linear in the replicas handed out.
func (s *replicaSource) grow(n int) ([]string, error) {
	obj := s.obj.DeepCopyObject()
	count := int32(n)
	switch t := obj.(type) {
	case *appsv1.Deployment:
		t.Spec.Replicas = &count
	case *appsv1.ReplicaSet:
		t.Spec.Replicas = &count
	case *appsv1.StatefulSet:
		t.Spec.Replicas = &count
	case *batchv1.Job:
		t.Spec.Parallelism, t.Spec.Completions = &count, nil
	case *v1.Pod:
		// Copies of a bare pod, NAME-N, as cluster-capacity replicates a
		// pod spec.
		made, notes, err := Workloads([]runtime.Object{t}, s.namespace, s.c)
		if err != nil || len(made) != 1 {
			return nil, err
		}
		s.made = make([]Replica, n)
		for i := range s.made {
			p := made[0].Pod.DeepCopy()
			p.Name = fmt.Sprintf("%s-%d", t.Name, i)
			p.UID = types.UID("simulate-" + p.Namespace + "-" + p.Name)
			s.made[i] = Replica{Pod: p, Workload: made[0].Workload}
		}
		return notes, nil
	}
	made, notes, err := Workloads([]runtime.Object{obj}, s.namespace, s.c)
	if err != nil {
		return nil, err
	}
	if len(made) != n {
		return nil, fmt.Errorf("%s: %d replica(s) asked, %d made", obj.GetObjectKind().GroupVersionKind().Kind, n, len(made))
	}
	s.made = made
	return notes, nil
}

// printCapacity writes the answer, what stopped the search and the
// replicas' distribution over nodes and topology values.
func printCapacity(w io.Writer, r *simulatev1alpha1.PlacementSimulation) error {
	c := r.Capacity
	fmt.Fprintf(w, "Capacity: %d more replica(s) of %s fit as the cluster is; %d more by preempting lower-priority pods (%d in all).\n",
		c.Fits, c.Workload, c.Preempting, c.Fits+c.Preempting)
	switch c.StoppedBy {
	case simulatev1alpha1.StoppedLimit:
		fmt.Fprintf(w, "Stopped at the limit of %d replica(s) (--max-replicas-limit): more may fit.\n", c.Limit)
	default:
		last := r.Replicas[len(r.Replicas)-1]
		fmt.Fprintf(w, "Stopped: the next replica, %s, stays Pending (pending reason 1 below).\n", last.Pod)
	}
	if len(c.ByNode) == 0 {
		return nil
	}
	topo := map[string]string{}
	for _, rr := range r.Replicas {
		topo[rr.Node] = orDash(rr.Topology)
	}
	preempting := c.Preempting > 0
	head := func(first ...string) string {
		h := append(first, "FITS")
		if preempting {
			h = append(h, "PREEMPTING")
		}
		return strings.Join(h, "\t")
	}
	row := func(s simulatev1alpha1.Share, first ...string) string {
		cells := append(first, strconv.Itoa(s.Fits))
		if preempting {
			cells = append(cells, strconv.Itoa(s.Preempting))
		}
		return strings.Join(cells, "\t")
	}
	fmt.Fprintln(w)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, head("NODE", topologyHeader(r.TopologyKey)))
	for _, s := range c.ByNode {
		fmt.Fprintln(tw, row(s, s.Name, topo[s.Name]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(tw, head(topologyHeader(r.TopologyKey)))
	for _, s := range c.ByTopology {
		fmt.Fprintln(tw, row(s, s.Name))
	}
	return tw.Flush()
}

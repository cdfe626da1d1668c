// Package simulate answers what-if questions about many pods at once: where
// every replica of a workload would land, where the pods of drained nodes
// would go, what a change to the node pool does, by placing each pod in
// turn through the real framework of a scheduler profile
// (internal/explain.Placer, the placer the enforcer's fit check uses),
// each placement reserved before the next. It only reads the cluster.
package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	simulatev1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/simulate/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// Options tune a run.
type Options struct {
	// TopologyKey is the node label reported per replica (default the zone).
	TopologyKey string
	// Progress, when set, is called after each replica.
	Progress func(done, total int)
	// Explain names replicas (namespace/name) to explain just before they
	// are placed; Explained receives each explanation (the ranking the
	// placement is made on). A comparison asks it for the replicas that
	// land differently.
	Explain   map[string]bool
	Explained func(pod string, e *explainv1alpha1.PlacementExplanation)
}

// Run places replicas in scheduling-queue order (priority first, then as
// given) through profile's framework over c, each reserved before the next
// so the replicas' own (anti-)affinity and spreading count. A replica no
// node fits gets the preemption dry run; when preemption would help, its
// victims leave the snapshot and the replica takes the nominated node.
func Run(ctx context.Context, c *explain.Cluster, profile *config.KubeSchedulerProfile, replicas []Replica, opts Options) (*simulatev1alpha1.PlacementSimulation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the placer's informers
	s, err := newSession(ctx, c, profile, opts)
	if err != nil {
		return nil, err
	}
	order := make([]Replica, len(replicas))
	copy(order, replicas)
	sort.SliceStable(order, func(i, j int) bool {
		return corev1helpers.PodPriority(order[i].Pod) > corev1helpers.PodPriority(order[j].Pod)
	})
	for i, r := range order {
		if _, err := s.place(ctx, r); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(order))
		}
	}
	return s.res, nil
}

// session places replicas one at a time on one placer, each reserved
// before the next, and collects the PlacementSimulation.
type session struct {
	placer   *explain.Placer
	opts     Options
	labelsOf map[string]map[string]string
	res      *simulatev1alpha1.PlacementSimulation
	// An explanation holds for the next replica with the same labels and
	// spec (the replicas of a workload but a DaemonSet's, pinned each to
	// its node) as long as nothing was reserved in between.
	explained  map[string]cached
	generation int
	reasons    map[string]int
}

type cached struct {
	generation int
	res        *explainv1alpha1.PlacementExplanation
}

// newSession builds profile's placer over c; its informers run until ctx
// is cancelled.
func newSession(ctx context.Context, c *explain.Cluster, profile *config.KubeSchedulerProfile, opts Options) (*session, error) {
	if opts.TopologyKey == "" {
		opts.TopologyKey = v1.LabelTopologyZone
	}
	placer, err := explain.NewPlacer(ctx, c, profile)
	if err != nil {
		return nil, err
	}
	labelsOf := map[string]map[string]string{}
	for _, n := range c.Nodes {
		labelsOf[n.Name] = n.Labels
	}
	return &session{
		placer:   placer,
		opts:     opts,
		labelsOf: labelsOf,
		res: &simulatev1alpha1.PlacementSimulation{
			TypeMeta:    metav1.TypeMeta{APIVersion: simulatev1alpha1.APIVersion, Kind: simulatev1alpha1.Kind},
			Profile:     profile.SchedulerName,
			Nodes:       len(c.Nodes),
			TopologyKey: opts.TopologyKey,
			Replicas:    []simulatev1alpha1.ReplicaResult{},
		},
		explained: map[string]cached{},
		reasons:   map[string]int{},
	}, nil
}

// place places one replica (preempting when that is what the scheduler
// would do), records it in the PlacementSimulation and returns its row.
func (s *session) place(ctx context.Context, r Replica) (simulatev1alpha1.ReplicaResult, error) {
	res := s.res
	rr := simulatev1alpha1.ReplicaResult{Pod: r.Pod.Namespace + "/" + r.Pod.Name, Workload: r.Workload, From: r.From}
	if s.opts.Explained != nil && s.opts.Explain[rr.Pod] {
		// Asked before the placement: the ranking it is made on.
		e, err := s.placer.Explain(ctx, r.Pod)
		if err != nil {
			return rr, fmt.Errorf("explaining %s: %w", rr.Pod, err)
		}
		s.opts.Explained(rr.Pod, e)
	}
	node, tied, err := s.placer.Assign(ctx, r.Pod)
	if err != nil {
		return rr, fmt.Errorf("placing %s: %w", rr.Pod, err)
	}
	if node != "" {
		s.generation++
		res.Placed++
		rr.Node = node
		if len(tied) > 1 {
			rr.Tied = len(tied)
			res.Ties++
		}
	} else {
		key, err := sameAs(r.Pod)
		if err != nil {
			return rr, err
		}
		ex, ok := s.explained[key]
		if !ok || ex.generation != s.generation {
			e, err := s.placer.Explain(ctx, r.Pod)
			if err != nil {
				return rr, fmt.Errorf("explaining %s: %w", rr.Pod, err)
			}
			ex = cached{generation: s.generation, res: e}
			s.explained[key] = ex
		}
		if pf := ex.res.PostFilter; pf != nil && pf.WouldPreempt {
			if err := s.placer.Preempt(ctx, r.Pod, pf.Node, pf.Victims); err != nil {
				return rr, err
			}
			s.generation++
			res.Preempting++
			rr.Node = pf.Node
			for _, v := range pf.Victims {
				rr.Preempts = append(rr.Preempts, v.Pod)
			}
		} else {
			res.Pending++
			rr.Reason = reasonOf(ex.res)
			if k, ok := s.reasons[rr.Reason]; ok {
				res.Reasons[k].Replicas++
			} else {
				s.reasons[rr.Reason] = len(res.Reasons)
				res.Reasons = append(res.Reasons, simulatev1alpha1.PendingReason{Reason: rr.Reason, Replicas: 1, Explanation: ex.res})
			}
		}
	}
	if rr.Node != "" {
		rr.Topology = s.labelsOf[rr.Node][s.opts.TopologyKey]
	}
	res.Replicas = append(res.Replicas, rr)
	return rr, nil
}

// sameAs keys pods that the scheduler cannot tell apart: same namespace,
// labels and spec.
func sameAs(p *v1.Pod) (string, error) {
	raw, err := json.Marshal(struct {
		NS     string
		Labels map[string]string
		Spec   v1.PodSpec
	}{p.Namespace, p.Labels, p.Spec})
	if err != nil {
		return "", fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return string(raw), nil
}

// reasonOf is the FailedScheduling message the scheduler would give.
func reasonOf(e *explainv1alpha1.PlacementExplanation) string {
	msg := e.SchedulerMessage
	if e.PostFilter != nil && e.PostFilter.Message != "" {
		msg += " " + e.PostFilter.Message
	}
	return msg
}

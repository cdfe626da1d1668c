package equivalence

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// shrink greedily simplifies sc while a mismatch with the given key persists:
// it tries dropping one element (node, pod, namespace, event, term, label,
// taint, toleration, ...) at a time and keeps every reduction that still
// reproduces, until none does or the attempt budget is spent.
func shrink(e *env, sc *Scenario, key string, cmp comparator) (*Scenario, int) {
	const budget = 4000
	still := func(c *Scenario) bool {
		for _, m := range run(e, c, cmp) {
			if m.key() == key {
				return true
			}
		}
		return false
	}
	attempts := 0
	cur := reduceGreedily(CloneScenario(sc), &attempts, budget, reductions, CloneScenario, func(c *Scenario) bool {
		attempts++
		return still(c)
	})
	return cur, attempts
}

// reduceGreedily applies to cur the first of reductions(cur) that still
// reproduces, on a clone, and starts over from the result, until no
// reduction does or *attempts reaches budget. still counts its own
// attempts (a replay costs one whatever its outcome); a reduction that
// changes nothing (returns false) is not tried.
func reduceGreedily[T any, R ~func(T) bool](cur T, attempts *int, budget int, reductions func(T) []R, clone func(T) T, still func(T) bool) T {
	for progress := true; progress && *attempts < budget; {
		progress = false
		for _, mut := range reductions(cur) {
			if *attempts >= budget {
				break
			}
			cand := clone(cur)
			if !mut(cand) {
				continue
			}
			if still(cand) {
				cur, progress = cand, true
				break
			}
		}
	}
	return cur
}

// reduction mutates a copy of the scenario; false means "not applicable".
type reduction func(*Scenario) bool

func dropAt[T any](s *[]T, i int) bool {
	if i >= len(*s) {
		return false
	}
	*s = slices.Delete(*s, i, i+1)
	return true
}

func dropKey(m map[string]string, k string) bool {
	if _, ok := m[k]; !ok {
		return false
	}
	delete(m, k)
	return true
}

// reductions lists every one-step simplification of sc, coarse ones first.
func reductions(sc *Scenario) []reduction {
	var rs []reduction
	add := func(r func(*Scenario) bool) { rs = append(rs, r) }

	// Whole nodes (with their pods), then pods, namespaces, ops, events.
	for i := range sc.Nodes {
		add(func(c *Scenario) bool {
			name := c.Nodes[i].Name
			c.Nodes = slices.Delete(c.Nodes, i, i+1)
			c.Pods = slices.DeleteFunc(c.Pods, func(p *v1.Pod) bool { return p.Spec.NodeName == name })
			c.ScoreNodes = slices.DeleteFunc(c.ScoreNodes, func(n string) bool { return n == name })
			return true
		})
	}
	for i := range sc.Pods {
		add(func(c *Scenario) bool { return dropAt(&c.Pods, i) })
	}
	for i := range sc.Namespaces {
		add(func(c *Scenario) bool { return dropAt(&c.Namespaces, i) })
	}
	for i := range sc.Preemption {
		add(func(c *Scenario) bool { return dropAt(&c.Preemption, i) })
		for j := range sc.Preemption[i].Steps {
			add(func(c *Scenario) bool { return dropAt(&c.Preemption[i].Steps, j) })
		}
	}
	for i := range sc.Events {
		add(func(c *Scenario) bool { return dropAt(&c.Events, i) })
	}
	for i := range sc.Nominated {
		add(func(c *Scenario) bool { return dropAt(&c.Nominated, i) })
	}
	for i := range sc.ScoreNodes {
		add(func(c *Scenario) bool { return dropAt(&c.ScoreNodes, i) })
	}

	// Args and switches.
	for i := range argsFields(&sc.Setup) {
		add(func(c *Scenario) bool {
			f := argsFields(&c.Setup)[i]
			r := !f.IsNil()
			f.SetZero()
			return r
		})
	}
	add(func(c *Scenario) bool { r := c.NoStateChecks; c.NoStateChecks = false; return r })
	add(func(c *Scenario) bool { r := c.ArgsAsYAML; c.ArgsAsYAML = false; return r })
	add(func(c *Scenario) bool {
		r := c.Gates.InPlacePodVerticalScalingSchedulerPreemption
		c.Gates.InPlacePodVerticalScalingSchedulerPreemption = false
		return r
	})
	add(func(c *Scenario) bool {
		r := c.Gates.TaintTolerationComparisonOperators
		c.Gates.TaintTolerationComparisonOperators = false
		return r
	})
	if a := sc.NodeAffinityArgs; a != nil && a.AddedAffinity != nil {
		add(func(c *Scenario) bool {
			r := c.NodeAffinityArgs.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
			c.NodeAffinityArgs.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
			return r
		})
		add(func(c *Scenario) bool {
			r := c.NodeAffinityArgs.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil
			c.NodeAffinityArgs.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
			return r
		})
	}

	// The incoming pod.
	podReductions(add, func(c *Scenario) *v1.Pod { return c.Pod }, sc.Pod)
	add(func(c *Scenario) bool { r := c.Pod.Spec.NodeName != ""; c.Pod.Spec.NodeName = ""; return r })

	// Existing pods' details.
	for i := range sc.Pods {
		podReductions(add, func(c *Scenario) *v1.Pod {
			if i < len(c.Pods) {
				return c.Pods[i]
			}
			return nil
		}, sc.Pods[i])
	}

	// Nodes' details.
	for i, n := range sc.Nodes {
		nodeReductions(add, func(c *Scenario) *v1.Node { return c.Nodes[i] }, n)
	}
	for i, ns := range sc.Namespaces {
		for k := range ns.Labels {
			add(func(c *Scenario) bool { return dropKey(c.Namespaces[i].Labels, k) })
		}
	}
	return rs
}

// nodeReductions drops a node's labels and taints one at a time.
func nodeReductions[S any](add func(func(*S) bool), get func(*S) *v1.Node, n *v1.Node) {
	for k := range n.Labels {
		add(func(c *S) bool { return dropKey(get(c).Labels, k) })
	}
	for j := range n.Spec.Taints {
		add(func(c *S) bool { return dropAt(&get(c).Spec.Taints, j) })
	}
}

// podReductions simplifies a pod: labels, inter-pod and node affinity terms,
// node selector, tolerations, nodeName, conditions. get returns the pod in
// the candidate (nil if it is gone).
func podReductions[S any](add func(func(*S) bool), get func(*S) *v1.Pod, p *v1.Pod) {
	for k := range p.Labels {
		add(func(c *S) bool { q := get(c); return q != nil && dropKey(q.Labels, k) })
	}
	add(func(c *S) bool {
		q := get(c)
		if q == nil || q.Spec.NodeSelector == nil {
			return false
		}
		q.Spec.NodeSelector = nil
		return true
	})
	for k := range p.Spec.NodeSelector {
		add(func(c *S) bool { q := get(c); return q != nil && dropKey(q.Spec.NodeSelector, k) })
	}
	for i := range p.Spec.Tolerations {
		add(func(c *S) bool { q := get(c); return q != nil && dropAt(&q.Spec.Tolerations, i) })
	}
	add(func(c *S) bool {
		q := get(c)
		r := q != nil && q.Status.Conditions != nil
		if r {
			q.Status.Conditions = nil
		}
		return r
	})
	a := p.Spec.Affinity
	if a == nil {
		return
	}
	if a.NodeAffinity != nil {
		na := func(c *S) *v1.NodeAffinity { return get(c).Spec.Affinity.NodeAffinity }
		add(func(c *S) bool { get(c).Spec.Affinity.NodeAffinity = nil; return true })
		if req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			add(func(c *S) bool { na(c).RequiredDuringSchedulingIgnoredDuringExecution = nil; return true })
			for i, term := range req.NodeSelectorTerms {
				add(func(c *S) bool {
					return dropAt(&na(c).RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, i)
				})
				for j := range term.MatchExpressions {
					add(func(c *S) bool {
						return dropAt(&na(c).RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i].MatchExpressions, j)
					})
				}
				for j := range term.MatchFields {
					add(func(c *S) bool {
						return dropAt(&na(c).RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i].MatchFields, j)
					})
				}
			}
		}
		if a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
			add(func(c *S) bool { na(c).PreferredDuringSchedulingIgnoredDuringExecution = nil; return true })
			for i := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				add(func(c *S) bool { return dropAt(&na(c).PreferredDuringSchedulingIgnoredDuringExecution, i) })
			}
		}
	}
	if a.PodAffinity != nil {
		add(func(c *S) bool { q := get(c); q.Spec.Affinity.PodAffinity = nil; return true })
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			add(func(c *S) bool {
				return dropAt(&get(c).Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, i)
			})
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			add(func(c *S) bool {
				return dropAt(&get(c).Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, i)
			})
		}
	}
	if a.PodAntiAffinity != nil {
		add(func(c *S) bool { q := get(c); q.Spec.Affinity.PodAntiAffinity = nil; return true })
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			add(func(c *S) bool {
				return dropAt(&get(c).Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, i)
			})
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			add(func(c *S) bool {
				return dropAt(&get(c).Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, i)
			})
		}
	}
}

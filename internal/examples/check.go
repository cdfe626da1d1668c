package examples

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
)

// pollInterval is how often an expectation is re-read; nothing sleeps.
const pollInterval = 200 * time.Millisecond

// Run applies the example step by step and waits for each step's
// expectations. The error names the example, step, expectation and, on
// timeout, what was last seen instead.
func (r *Runner) Run(ctx context.Context, ex Example) error {
	for i, st := range ex.Spec.Steps {
		for _, f := range st.Apply {
			if err := r.ApplyFile(ctx, ex.FS, path.Join(ex.Dir, f)); err != nil {
				return fmt.Errorf("example %s step %d: %w", ex.Name, i, err)
			}
		}
		for j, e := range st.Expect {
			if err := r.Wait(ctx, ex.Spec.Namespace, e, ex.Spec.timeout()); err != nil {
				return fmt.Errorf("example %s step %d (after applying %s) expect[%d]: %w",
					ex.Name, i, strings.Join(st.Apply, ", "), j, err)
			}
		}
	}
	return nil
}

// Wait polls until e holds, for at most timeout.
func (r *Runner) Wait(ctx context.Context, defaultNS string, e Expectation, timeout time.Duration) error {
	ns := e.namespace(defaultNS)
	var why string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		why, err = r.check(ctx, ns, e)
		if err != nil {
			return false, err
		}
		return why == "", nil
	})
	if err != nil {
		return fmt.Errorf("waited %s for %s in namespace %s; last seen: %s: %w", timeout, e.describe(), ns, why, err)
	}
	return nil
}

func (e Expectation) describe() string {
	if e.Evicted != "" {
		return fmt.Sprintf("pod %s to be evicted by the taint-eviction controller", e.Evicted)
	}
	var parts []string
	if e.Count != nil {
		parts = append(parts, fmt.Sprintf("exactly %d pod(s)", *e.Count))
	} else {
		parts = append(parts, "pods")
	}
	parts = append(parts, "matching "+e.Pods)
	if e.Pending != "" {
		parts = append(parts, fmt.Sprintf("Pending with %q", e.Pending))
	} else {
		parts = append(parts, "bound and Running")
	}
	if len(e.Nodes) > 0 {
		parts = append(parts, "on "+strings.Join(e.Nodes, "|"))
	}
	if len(e.NodeLabels) > 0 {
		parts = append(parts, fmt.Sprintf("on nodes labelled %v", e.NodeLabels))
	}
	if e.SpreadBy != "" {
		s := "one per " + e.SpreadBy
		if e.GroupBy != "" {
			s += " within each " + e.GroupBy
		}
		parts = append(parts, s)
	}
	if e.SameNodesAs != "" {
		parts = append(parts, "on the nodes of "+e.SameNodesAs)
	}
	if e.ScheduledBy != "" {
		parts = append(parts, "scheduled by "+e.ScheduledBy)
	}
	if e.Event != "" {
		parts = append(parts, "each with a "+e.Event+" event")
	}
	return strings.Join(parts, ", ")
}

// check returns "" if e holds, else what does not hold yet. err is for
// failures that polling cannot fix (bad selector, API errors).
func (r *Runner) check(ctx context.Context, ns string, e Expectation) (string, error) {
	if e.Evicted != "" {
		return r.checkEvicted(ctx, ns, e.Evicted)
	}
	pods, err := r.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: e.Pods})
	if err != nil {
		return "", err
	}
	if e.Count != nil && len(pods.Items) != *e.Count {
		return fmt.Sprintf("%d pod(s): %s", len(pods.Items), podSummary(pods.Items)), nil
	}
	if e.Count == nil && len(pods.Items) == 0 {
		return "no pods yet", nil
	}
	if e.Pending != "" {
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				return fmt.Sprintf("pod %s was bound to %s", p.Name, p.Spec.NodeName), nil
			}
			msg, unschedulable := unschedulableMessage(&p)
			if !unschedulable || !strings.Contains(msg, e.Pending) {
				return fmt.Sprintf("pod %s: not yet unschedulable with that reason (PodScheduled: %q)", p.Name, msg), nil
			}
		}
		return "", nil
	}
	nodes, err := r.nodes(ctx)
	if err != nil {
		return "", err
	}
	groups := map[string]sets.Set[string]{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != v1.PodRunning {
			return fmt.Sprintf("pod %s not yet bound and Running (node %q, phase %s)", p.Name, p.Spec.NodeName, p.Status.Phase), nil
		}
		node, ok := nodes[p.Spec.NodeName]
		if !ok {
			return fmt.Sprintf("pod %s is on %s, which does not exist", p.Name, p.Spec.NodeName), nil
		}
		if len(e.Nodes) > 0 && !slices.Contains(e.Nodes, node.Name) {
			return fmt.Sprintf("pod %s is on %s, not one of %v", p.Name, node.Name, e.Nodes), nil
		}
		for k, v := range e.NodeLabels {
			if got, ok := node.Labels[k]; !ok || got != v {
				return fmt.Sprintf("pod %s is on %s, whose %s is %q, want %q", p.Name, node.Name, k, got, v), nil
			}
		}
		if e.SpreadBy != "" {
			value, ok := node.Labels[e.SpreadBy]
			if !ok {
				return fmt.Sprintf("pod %s is on %s, which has no %s label", p.Name, node.Name, e.SpreadBy), nil
			}
			group := p.Labels[e.GroupBy]
			if groups[group] == nil {
				groups[group] = sets.New[string]()
			}
			if groups[group].Has(value) {
				return fmt.Sprintf("pod %s shares %s=%s with another pod%s", p.Name, e.SpreadBy, value, groupNote(e.GroupBy, group)), nil
			}
			groups[group].Insert(value)
		}
		if e.Event != "" {
			evs, err := r.events(ctx, ns, p.Name, e.Event)
			if err != nil {
				return "", err
			}
			if len(evs) == 0 {
				return fmt.Sprintf("pod %s has no %s event yet", p.Name, e.Event), nil
			}
		}
		if e.ScheduledBy != "" {
			by, err := r.scheduledBy(ctx, &p)
			if err != nil {
				return "", err
			}
			if by != e.ScheduledBy {
				return fmt.Sprintf("pod %s: Scheduled event reported by %q", p.Name, by), nil
			}
		}
	}
	if e.SameNodesAs != "" {
		others, err := r.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: e.SameNodesAs})
		if err != nil {
			return "", err
		}
		want, got := sets.New[string](), sets.New[string]()
		for _, p := range others.Items {
			want.Insert(p.Spec.NodeName)
		}
		for _, p := range pods.Items {
			got.Insert(p.Spec.NodeName)
		}
		if !want.Equal(got) {
			return fmt.Sprintf("on nodes %v, %s on %v", sets.List(got), e.SameNodesAs, sets.List(want)), nil
		}
	}
	return "", nil
}

func groupNote(key, value string) string {
	if key == "" {
		return ""
	}
	return fmt.Sprintf(" of the same %s=%s", key, value)
}

func (r *Runner) checkEvicted(ctx context.Context, ns, name string) (string, error) {
	evs, err := r.events(ctx, ns, name, "TaintManagerEviction")
	if err != nil {
		return "", err
	}
	if len(evs) == 0 {
		p, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Sprintf("no TaintManagerEviction event for %s (pod: %v)", name, err), nil
		}
		return fmt.Sprintf("no TaintManagerEviction event for %s yet (node %q, phase %s)", name, p.Spec.NodeName, p.Status.Phase), nil
	}
	_, err = r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	default:
		return fmt.Sprintf("pod %s marked for eviction but not gone yet", name), nil
	}
}

// scheduledBy returns who reported pod's Scheduled event ("" if none yet).
func (r *Runner) scheduledBy(ctx context.Context, pod *v1.Pod) (string, error) {
	evs, err := r.events(ctx, pod.Namespace, pod.Name, "Scheduled")
	if err != nil || len(evs) == 0 {
		return "", err
	}
	if evs[0].ReportingController != "" {
		return evs[0].ReportingController, nil
	}
	return evs[0].Source.Component, nil
}

// events lists the events with reason about the named object in ns.
func (r *Runner) events(ctx context.Context, ns, name, reason string) ([]v1.Event, error) {
	sel := fields.Set{"involvedObject.name": name, "reason": reason}.AsSelector().String()
	list, err := r.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, err
	}
	// Newest last, so callers reading [len-1] see the latest.
	sort.SliceStable(list.Items, func(i, j int) bool {
		return eventTime(&list.Items[i]).Before(eventTime(&list.Items[j]))
	})
	return list.Items, nil
}

func eventTime(ev *v1.Event) time.Time {
	if !ev.EventTime.IsZero() {
		return ev.EventTime.Time
	}
	return ev.LastTimestamp.Time
}

func (r *Runner) nodes(ctx context.Context) (map[string]*v1.Node, error) {
	list, err := r.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*v1.Node, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// unschedulableMessage returns the PodScheduled condition's message and
// whether the scheduler marked the pod Unschedulable.
func unschedulableMessage(p *v1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled {
			return c.Message, c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
		}
	}
	return "", false
}

func podSummary(pods []v1.Pod) string {
	if len(pods) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(pods))
	for _, p := range pods {
		node := p.Spec.NodeName
		if node == "" {
			node = "unbound"
		}
		parts = append(parts, fmt.Sprintf("%s@%s(%s)", p.Name, node, p.Status.Phase))
	}
	return strings.Join(parts, " ")
}

// RunAll runs every example concurrently (each confines itself to its own
// namespaces and pool) and returns each one's result by name.
func (r *Runner) RunAll(ctx context.Context, exs []Example) map[string]error {
	type result struct {
		name string
		err  error
	}
	ch := make(chan result, len(exs))
	for _, ex := range exs {
		go func() { ch <- result{ex.Name, r.Run(ctx, ex)} }()
	}
	out := make(map[string]error, len(exs))
	for range exs {
		res := <-ch
		out[res.name] = res.err
	}
	return out
}

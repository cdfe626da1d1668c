package simulate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// Edits are what-if changes to the cluster, applied to the snapshot before
// anything is placed; the real cluster is never touched. Targets are a
// node name, or a label selector (anything with =, != or " in ") naming
// every node it matches.
type Edits struct {
	// AddNodes copies of Like: empty nodes with its labels, operator
	// taints and capacity, fresh names (LIKE-sim-N) and hostname labels,
	// Ready and schedulable, each with the DaemonSet pods it would get.
	AddNodes int
	Like     string
	// Labels are "TARGET:k=v[,k2=v2,k3-]" (k- removes k), Taints
	// "TARGET:k=v:Effect" or "TARGET:k:Effect-" (removes it).
	Labels []string
	Taints []string
	// Cordon marks targets unschedulable; Remove drops them and the pods
	// bound to them.
	Cordon []string
	Remove []string
}

// Empty: no edit asked for.
func (e *Edits) Empty() bool {
	return e.AddNodes == 0 && e.Like == "" && len(e.Labels)+len(e.Taints)+len(e.Cordon)+len(e.Remove) == 0
}

// Apply returns a copy of c with the edits made (c and its nodes are not
// changed), and one line per edit saying what it did. Copies are added
// first, so the other edits may name them; removals come last.
func (e *Edits) Apply(c *explain.Cluster) (*explain.Cluster, []string, error) {
	out := *c
	out.Nodes = append([]*v1.Node(nil), c.Nodes...)
	var done []string
	var like *v1.Node
	var added []string
	var cleared []v1.Taint
	if e.AddNodes != 0 || e.Like != "" {
		if e.AddNodes <= 0 || e.Like == "" {
			return nil, nil, fmt.Errorf("--add-nodes N and --like NODE go together, with N > 0")
		}
		like = find(out.Nodes, e.Like)
		if like == nil {
			return nil, nil, fmt.Errorf("--like %s: no such node in the cluster: name an existing node to copy", e.Like)
		}
		names := map[string]bool{}
		for _, n := range out.Nodes {
			names[n.Name] = true
		}
		for i := 1; len(added) < e.AddNodes; i++ {
			name := like.Name + "-sim-" + strconv.Itoa(i)
			if names[name] {
				continue
			}
			var cp *v1.Node
			cp, cleared = copyNode(like, name)
			out.Nodes = append(out.Nodes, cp)
			added = append(added, name)
		}
		done = append(done, "") // said once the copies have their DaemonSet pods, below
	}
	for _, l := range e.Labels {
		target, change, err := split("--label", l, "NODE:k=v")
		if err != nil {
			return nil, nil, err
		}
		if err := e.each(&out, "--label "+l, target, func(n *v1.Node) error { return relabel(n, change) }, &done, "labelled "+change); err != nil {
			return nil, nil, err
		}
	}
	for _, t := range e.Taints {
		target, change, err := split("--taint", t, "NODE:k=v:Effect")
		if err != nil {
			return nil, nil, err
		}
		if err := e.each(&out, "--taint "+t, target, func(n *v1.Node) error { return retaint(n, change) }, &done, "tainted "+change); err != nil {
			return nil, nil, err
		}
	}
	for _, target := range e.Cordon {
		if err := e.each(&out, "--cordon "+target, target, func(n *v1.Node) error { n.Spec.Unschedulable = true; return nil }, &done, "cordoned"); err != nil {
			return nil, nil, err
		}
	}
	for _, target := range e.Remove {
		gone, err := match(out.Nodes, "--remove-node "+target, target)
		if err != nil {
			return nil, nil, err
		}
		keep := out.Nodes[:0:0]
		for _, n := range out.Nodes {
			if !gone[n.Name] {
				keep = append(keep, n)
			}
		}
		out.Nodes = keep
		pods := out.Pods[:0:0]
		dropped := 0
		for _, p := range out.Pods {
			if gone[p.Spec.NodeName] {
				dropped++
				continue
			}
			pods = append(pods, p)
		}
		out.Pods = pods
		done = append(done, fmt.Sprintf("removed %s with its %d pod(s) (not re-placed: --drain places a node's pods elsewhere)", nodeList(sortedKeys(gone)), dropped))
	}
	if like != nil {
		// The DaemonSet controller judges each copy as the other edits
		// left it.
		daemons, err := bindDaemonPods(&out, added)
		if err != nil {
			return nil, nil, err
		}
		done[0] = fmt.Sprintf("added %d node(s) like %s: %s (%s)", len(added), like.Name, nodeList(added), describeCopies(like, cleared, added, daemons))
	}
	return &out, done, nil
}

// each applies f to a copy of every node target names, in out.
func (e *Edits) each(out *explain.Cluster, flag, target string, f func(*v1.Node) error, done *[]string, what string) error {
	hit, err := match(out.Nodes, flag, target)
	if err != nil {
		return err
	}
	for i, n := range out.Nodes {
		if !hit[n.Name] {
			continue
		}
		cp := n.DeepCopy()
		if err := f(cp); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		out.Nodes[i] = cp
	}
	*done = append(*done, fmt.Sprintf("%s %s", what, nodeList(sortedKeys(hit))))
	return nil
}

// split cuts "TARGET:CHANGE" at the first colon (node names, selectors
// and label keys hold none).
func split(flag, s, form string) (string, string, error) {
	target, change, ok := strings.Cut(s, ":")
	if !ok || target == "" || change == "" {
		return "", "", fmt.Errorf("%s %q: want %s (a node name or label selector, a colon, the change)", flag, s, form)
	}
	return target, change, nil
}

// isSelector: target is a label selector rather than a node name.
func isSelector(target string) bool {
	return strings.ContainsAny(target, "=!") || strings.Contains(target, " in ") || strings.Contains(target, " notin ")
}

// match returns the names of the nodes target names; none is an error.
func match(nodes []*v1.Node, flag, target string) (map[string]bool, error) {
	hit := map[string]bool{}
	if !isSelector(target) {
		if find(nodes, target) == nil {
			return nil, fmt.Errorf("%s: no node named %s in the cluster: name an existing node or give a label selector", flag, target)
		}
		hit[target] = true
		return hit, nil
	}
	sel, err := labels.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a valid label selector: %w", flag, target, err)
	}
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			hit[n.Name] = true
		}
	}
	if len(hit) == 0 {
		return nil, fmt.Errorf("%s: selector %s matches no node: check the labels with kubectl get nodes --show-labels", flag, target)
	}
	return hit, nil
}

func find(nodes []*v1.Node, name string) *v1.Node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// relabel applies kubectl-label style changes: k=v sets, k- removes.
func relabel(n *v1.Node, change string) error {
	for _, kv := range strings.Split(change, ",") {
		if k, ok := strings.CutSuffix(kv, "-"); ok && !strings.Contains(kv, "=") {
			delete(n.Labels, k)
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%q: want k=v or k-", kv)
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("label value %q: %s", v, strings.Join(errs, "; "))
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[k] = v
	}
	return nil
}

// retaint applies a kubectl-taint style change: k[=v]:Effect adds or
// replaces the taint of that key and effect; k[:Effect]- removes it.
func retaint(n *v1.Node, change string) error {
	remove := strings.HasSuffix(change, "-")
	change = strings.TrimSuffix(change, "-")
	kv, effect, hasEffect := strings.Cut(change, ":")
	key, value, _ := strings.Cut(kv, "=")
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("taint key %q: %s", key, strings.Join(errs, "; "))
	}
	switch v1.TaintEffect(effect) {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		if hasEffect || !remove {
			return fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", change)
		}
	}
	kept := n.Spec.Taints[:0:0]
	for _, t := range n.Spec.Taints {
		if t.Key == key && (effect == "" || string(t.Effect) == effect) {
			continue
		}
		kept = append(kept, t)
	}
	if !remove {
		kept = append(kept, v1.Taint{Key: key, Value: value, Effect: v1.TaintEffect(effect)})
	}
	n.Spec.Taints = kept
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeList names up to five nodes and counts the rest.
func nodeList(nodes []string) string {
	const show = 5
	if len(nodes) <= show {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:show], ", "), len(nodes)-show)
}

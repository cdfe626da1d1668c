// Package testutil holds the fixture builders shared by every test in the
// module: unit tests, the equivalence suite, integration tests and benchmarks.
// Keep one builder per object kind here rather than local copies.
package testutil

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SchedulerName is the schedulerName pods use to opt in to placement-scheduler.
const SchedulerName = "placement-scheduler"

// NodeWrapper builds a *v1.Node fluently.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node with the given name and the hostname label set to
// the name, as kubelet does.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{v1.LabelHostname: name},
	}}}
}

// Obj returns the built node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Label sets one label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper {
	metav1.SetMetaDataLabel(&n.ObjectMeta, k, v)
	return n
}

// Labels sets several labels.
func (n *NodeWrapper) Labels(kv map[string]string) *NodeWrapper {
	for k, v := range kv {
		n.Label(k, v)
	}
	return n
}

// NoLabels removes every label, including the hostname one.
func (n *NodeWrapper) NoLabels() *NodeWrapper {
	n.ObjectMeta.Labels = nil
	return n
}

// Taint appends a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Capacity sets capacity and allocatable for cpu, memory and pods, so that
// the node can be scheduled to by the resource plugins.
func (n *NodeWrapper) Capacity(cpu, memory string, pods int64) *NodeWrapper {
	rl := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(memory),
		v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	n.Status.Capacity = rl
	n.Status.Allocatable = rl.DeepCopy()
	return n
}

// Ready marks the node Ready.
func (n *NodeWrapper) Ready() *NodeWrapper {
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	return n
}

// PodWrapper builds a *v1.Pod fluently.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod with one pause container.
func MakePod(namespace, name string) *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name:  "pause",
			Image: "registry.k8s.io/pause:3.10",
		}}},
	}}
}

// Obj returns the built pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// UID sets the UID (in-process tests need distinct UIDs; the apiserver sets its own).
func (p *PodWrapper) UID(uid string) *PodWrapper { p.ObjectMeta.UID = types.UID(uid); return p }

// Label sets one label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	metav1.SetMetaDataLabel(&p.ObjectMeta, k, v)
	return p
}

// Labels sets several labels.
func (p *PodWrapper) Labels(kv map[string]string) *PodWrapper {
	for k, v := range kv {
		p.Label(k, v)
	}
	return p
}

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(s string) *PodWrapper { p.Spec.SchedulerName = s; return p }

// Placement opts the pod in to placement-scheduler.
func (p *PodWrapper) Placement() *PodWrapper { return p.SchedulerName(SchedulerName) }

// NodeName sets spec.nodeName (an assigned pod).
func (p *PodWrapper) NodeName(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// NodeSelector sets spec.nodeSelector (nil stays nil; an empty map is kept).
func (p *PodWrapper) NodeSelector(m map[string]string) *PodWrapper { p.Spec.NodeSelector = m; return p }

// Condition appends a status condition, e.g. the PodResizePending/Deferred
// condition that the deferred-resize feature gate looks at.
func (p *PodWrapper) Condition(t v1.PodConditionType, status v1.ConditionStatus, reason string) *PodWrapper {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: status, Reason: reason})
	return p
}

// ResizeDeferred marks the pod as having an in-place resize deferred by the
// kubelet (condition PodResizePending with reason Deferred).
func (p *PodWrapper) ResizeDeferred() *PodWrapper {
	return p.Condition(v1.PodResizePending, v1.ConditionTrue, v1.PodReasonDeferred)
}

// Toleration appends a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// Tol is shorthand for a toleration (tolerationSeconds unset). Empty strings
// are kept as-is, since "" key, operator and effect each have a meaning.
func Tol(key string, op v1.TolerationOperator, value string, effect v1.TaintEffect) v1.Toleration {
	return v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
}

// Request sets cpu and memory requests on the first container.
func (p *PodWrapper) Request(cpu, memory string) *PodWrapper {
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse(cpu),
		v1.ResourceMemory: resource.MustParse(memory),
	}
	return p
}

func (p *PodWrapper) affinity() *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

// NodeAffinity sets spec.affinity.nodeAffinity.
func (p *PodWrapper) NodeAffinity(na *v1.NodeAffinity) *PodWrapper {
	p.affinity().NodeAffinity = na
	return p
}

// RequiredNodeTerms sets required node affinity to the given ORed terms.
func (p *PodWrapper) RequiredNodeTerms(terms ...v1.NodeSelectorTerm) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: terms}
	return p
}

// PreferredNodeTerm appends a preferred node affinity term.
func (p *PodWrapper) PreferredNodeTerm(weight int32, term v1.NodeSelectorTerm) *PodWrapper {
	a := p.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &v1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(
		a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		v1.PreferredSchedulingTerm{Weight: weight, Preference: term})
	return p
}

// PodAffinity sets spec.affinity.podAffinity.
func (p *PodWrapper) PodAffinity(pa *v1.PodAffinity) *PodWrapper {
	p.affinity().PodAffinity = pa
	return p
}

// PodAntiAffinity sets spec.affinity.podAntiAffinity.
func (p *PodWrapper) PodAntiAffinity(pa *v1.PodAntiAffinity) *PodWrapper {
	p.affinity().PodAntiAffinity = pa
	return p
}

// Expr is shorthand for a node selector requirement.
func Expr(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// Term builds a node selector term from matchExpressions.
func Term(exprs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: exprs}
}

// FieldTerm builds a node selector term from matchFields.
func FieldTerm(fields ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: fields}
}

// MakeNamespace builds a namespace with labels.
func MakeNamespace(name string, labels map[string]string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

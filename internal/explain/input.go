package explain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/placement-scheduler/placement-scheduler/internal/podterms"
)

// DecodeObjects reads YAML (several documents) or JSON: single objects and
// Lists (what `kubectl get ... -o yaml` writes), flattened. source names the
// input in errors.
func DecodeObjects(r io.Reader, source string) ([]runtime.Object, error) {
	return decodeObjects(r, source, func(runtime.Object) {})
}

// DecodeSnapshot is DecodeObjects for a cluster snapshot: each object is
// trimmed (Trim) as soon as it is decoded, as the live lists are page by
// page, so what placement never reads does not pile up while a large
// snapshot is read.
func DecodeSnapshot(r io.Reader, source string) ([]runtime.Object, error) {
	return decodeObjects(r, source, Trim)
}

func decodeObjects(r io.Reader, source string, each func(runtime.Object)) ([]runtime.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	deser := scheme.Codecs.UniversalDeserializer()
	var out []runtime.Object
	for doc := 1; ; doc++ {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d is not valid YAML or JSON: %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw.Raw), []byte("null")) {
			continue
		}
		obj, _, err := deser.Decode(raw.Raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if l, ok := obj.(*v1.List); ok {
			for i, item := range l.Items {
				o, _, err := deser.Decode(item.Raw, nil, nil)
				if err != nil {
					return nil, fmt.Errorf("%s: document %d, items[%d]: %w", source, doc, i, err)
				}
				each(o)
				out = append(out, o)
			}
			continue
		}
		for _, o := range flattenTypedList(obj) {
			each(o)
			out = append(out, o)
		}
	}
}

// flattenTypedList expands typed lists (PodList, NodeList...) into items.
func flattenTypedList(obj runtime.Object) []runtime.Object {
	var out []runtime.Object
	switch l := obj.(type) {
	case *v1.PodList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1.NodeList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *v1.NamespaceList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		out = append(out, obj)
	}
	return out
}

// ClusterFrom sorts decoded objects into a Cluster.
func ClusterFrom(objs []runtime.Object) *Cluster {
	c := &Cluster{}
	for _, o := range objs {
		switch t := o.(type) {
		case *v1.Node:
			c.Nodes = append(c.Nodes, t)
		case *v1.Pod:
			c.Pods = append(c.Pods, t)
		case *v1.Namespace:
			c.Namespaces = append(c.Namespaces, t)
		default:
			c.Others = append(c.Others, o)
		}
	}
	return c
}

// PodOf returns the pod obj describes: a Pod, or the pod template of a
// Deployment, ReplicaSet, StatefulSet, DaemonSet or Job (named after it,
// with its namespace). The pod is not created anywhere.
func PodOf(obj runtime.Object) (*v1.Pod, error) {
	var meta *v1.Pod
	var tmpl *v1.PodTemplateSpec
	switch t := obj.(type) {
	case *v1.Pod:
		return t.DeepCopy(), nil
	case *appsv1.Deployment:
		tmpl, meta = &t.Spec.Template, &v1.Pod{ObjectMeta: t.ObjectMeta}
	case *appsv1.ReplicaSet:
		tmpl, meta = &t.Spec.Template, &v1.Pod{ObjectMeta: t.ObjectMeta}
	case *appsv1.StatefulSet:
		tmpl, meta = &t.Spec.Template, &v1.Pod{ObjectMeta: t.ObjectMeta}
	case *appsv1.DaemonSet:
		tmpl, meta = &t.Spec.Template, &v1.Pod{ObjectMeta: t.ObjectMeta}
	case *batchv1.Job:
		tmpl, meta = &t.Spec.Template, &v1.Pod{ObjectMeta: t.ObjectMeta}
	default:
		return nil, fmt.Errorf("kind %s has no pod template: give a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet or Job", obj.GetObjectKind().GroupVersionKind().Kind)
	}
	pod := &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
	pod.Name = meta.Name
	pod.Namespace = meta.Namespace
	return pod, nil
}

// MergeMatchLabelKeys does for a pod that is not created what the apiserver
// does when it is (MatchLabelKeysInPodAffinity): each pod (anti-)affinity
// term's matchLabelKeys and mismatchLabelKeys become In / NotIn requirements
// on the pod's own label values, so the scheduler sees the same terms.
func MergeMatchLabelKeys(pod *v1.Pod) {
	podterms.Each(pod.Spec.Affinity, func(t *v1.PodAffinityTerm) {
		if t.LabelSelector == nil || (len(t.MatchLabelKeys) == 0 && len(t.MismatchLabelKeys) == 0) {
			return
		}
		for _, k := range t.MatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
					metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
			}
		}
		for _, k := range t.MismatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
					metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: []string{v}})
			}
		}
	})
}

// ResolvePriority does for a pod that is not created what the apiserver's
// Priority admission does when it is: spec.priority (and, unless set,
// spec.preemptionPolicy) from its priorityClassName, or from the cluster's
// globalDefault class. Without it a what-if pod would have priority 0 and
// the preemption dry run would be about another pod. It returns notes on
// what it could not resolve.
func ResolvePriority(pod *v1.Pod, c *Cluster) ([]string, error) {
	if pod.Spec.Priority != nil {
		return nil, nil
	}
	var classes []*schedulingv1.PriorityClass
	for _, o := range c.Others {
		if pc, ok := o.(*schedulingv1.PriorityClass); ok {
			classes = append(classes, pc)
		}
	}
	var class *schedulingv1.PriorityClass
	for _, pc := range classes {
		if pod.Spec.PriorityClassName != "" && pc.Name == pod.Spec.PriorityClassName ||
			pod.Spec.PriorityClassName == "" && pc.GlobalDefault {
			class = pc
			break
		}
	}
	switch {
	case class != nil:
	case pod.Spec.PriorityClassName == "":
		return nil, nil // priority 0, as the apiserver gives it
	case len(classes) == 0:
		return []string{fmt.Sprintf("PriorityClasses not known (not readable, or not in the snapshot): the pod's priorityClassName %s is taken as priority 0", pod.Spec.PriorityClassName)}, nil
	default:
		return nil, fmt.Errorf("spec.priorityClassName %q: no such PriorityClass in the cluster: fix the name or create the class", pod.Spec.PriorityClassName)
	}
	pod.Spec.PriorityClassName = class.Name
	value := class.Value
	pod.Spec.Priority = &value
	if pod.Spec.PreemptionPolicy == nil && class.PreemptionPolicy != nil {
		pod.Spec.PreemptionPolicy = class.PreemptionPolicy
	}
	return nil, nil
}

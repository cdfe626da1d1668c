package simulate

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// Replica is one pod to place: a pod a workload's controller would create,
// or the replacement of a drained pod.
type Replica struct {
	Pod *v1.Pod
	// Workload names what the pod belongs to: Kind/name.
	Workload string
	// From is the node a drained pod ran on; empty for a new replica.
	From string
}

// templateHash stands for the pod-template-hash a Deployment's ReplicaSet
// stamps on its pods, so that terms keyed on it (matchLabelKeys) group the
// workload's replicas together as they will once created.
const templateHash = "simulated"

// Workloads turns decoded objects into the replicas their controllers
// would create, in order, each a pod of its namespace (namespace when the
// object has none): Deployment, ReplicaSet and StatefulSet spec.replicas,
// a Job's parallelism (at most its completions), a DaemonSet's pod per node
// it should run on, a Pod as itself. Each workload's own controller object
// is added to c (as the apiserver will hold it once created), since default
// topology spreading finds a pod's siblings through it; so is each claim a
// StatefulSet's controller creates from its volumeClaimTemplates before
// the pod (statefulStorage), for the volume plugins to judge. Priorities are
// resolved from c's PriorityClasses as admission would; the notes say what
// could not be.
func Workloads(objs []runtime.Object, namespace string, c *explain.Cluster) ([]Replica, []string, error) {
	var out []Replica
	var notes []string
	for _, obj := range objs {
		meta, err := metaOf(obj)
		if err != nil {
			return nil, nil, err
		}
		if meta.Namespace == "" {
			meta.Namespace = namespace
		}
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		what := kind + "/" + meta.Name
		if meta.Name == "" {
			return nil, nil, fmt.Errorf("%s: metadata.name is empty: name the workload", kind)
		}
		tmpl, count, err := template(obj, c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(tmpl.Spec.Containers) == 0 {
			return nil, nil, fmt.Errorf("%s: the pod template has no containers (spec.template.spec.containers): give a workload with a pod template", what)
		}
		// Admission sets the priority once, for every pod of the template.
		prio := &v1.Pod{Spec: *tmpl.Spec.DeepCopy()}
		n, err := explain.ResolvePriority(prio, c)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", what, err)
		}
		notes = append(notes, n...)
		tmpl = tmpl.DeepCopy()
		tmpl.Spec.Priority, tmpl.Spec.PriorityClassName, tmpl.Spec.PreemptionPolicy = prio.Spec.Priority, prio.Spec.PriorityClassName, prio.Spec.PreemptionPolicy
		owner := controllerOf(obj, meta, c)
		if _, ok := obj.(*appsv1.DaemonSet); ok {
			out = append(out, daemonPods(meta, tmpl, owner, c)...)
			continue
		}
		var storage *statefulStorage
		if set, ok := obj.(*appsv1.StatefulSet); ok {
			storage = newStatefulStorage(set, meta.Namespace, c)
		}
		for i := 0; i < count; i++ {
			idx := i
			if storage != nil {
				idx = ordinal(storage.set, i)
			}
			pod := &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
			pod.Namespace = meta.Namespace
			pod.Name = podName(obj, meta.Name, idx)
			pod.Labels = withLabels(pod.Labels, podLabels(obj, meta.Name, idx))
			if storage != nil {
				// The controller creates the claims before the pod.
				for _, pvc := range storage.attach(pod, idx) {
					c.Others = append(c.Others, pvc)
				}
			}
			out = append(out, Replica{Pod: finish(pod, owner), Workload: what})
		}
		if storage != nil {
			if n := storage.note(); n != "" {
				notes = append(notes, n)
			}
		}
	}
	return out, notes, nil
}

func metaOf(obj runtime.Object) (*metav1.ObjectMeta, error) {
	switch t := obj.(type) {
	case *v1.Pod:
		return &t.ObjectMeta, nil
	case *appsv1.Deployment:
		return &t.ObjectMeta, nil
	case *appsv1.ReplicaSet:
		return &t.ObjectMeta, nil
	case *appsv1.StatefulSet:
		return &t.ObjectMeta, nil
	case *appsv1.DaemonSet:
		return &t.ObjectMeta, nil
	case *batchv1.Job:
		return &t.ObjectMeta, nil
	}
	return nil, fmt.Errorf("kind %s has no pod template: give a Deployment, StatefulSet, ReplicaSet, Job, DaemonSet or Pod (or a List of them)", obj.GetObjectKind().GroupVersionKind().Kind)
}

// template returns obj's pod template and how many pods its controller
// runs at once.
func template(obj runtime.Object, c *explain.Cluster) (*v1.PodTemplateSpec, int, error) {
	replicas := func(r *int32) int {
		if r == nil {
			return 1 // the apiserver's default
		}
		return int(*r)
	}
	switch t := obj.(type) {
	case *v1.Pod:
		return &v1.PodTemplateSpec{ObjectMeta: t.ObjectMeta, Spec: t.Spec}, 1, nil
	case *appsv1.Deployment:
		return &t.Spec.Template, replicas(t.Spec.Replicas), nil
	case *appsv1.ReplicaSet:
		return &t.Spec.Template, replicas(t.Spec.Replicas), nil
	case *appsv1.StatefulSet:
		return &t.Spec.Template, replicas(t.Spec.Replicas), nil
	case *appsv1.DaemonSet:
		return &t.Spec.Template, len(c.Nodes), nil
	case *batchv1.Job:
		n := replicas(t.Spec.Parallelism)
		if t.Spec.Completions != nil && int(*t.Spec.Completions) < n {
			n = int(*t.Spec.Completions)
		}
		return &t.Spec.Template, n, nil
	}
	return nil, 0, fmt.Errorf("no pod template")
}

// podName is the pod's name: StatefulSet pods are NAME-ORDINAL (i is the
// ordinal), as their controller names them; others get NAME-N (their real
// names are random).
func podName(obj runtime.Object, name string, i int) string {
	if _, ok := obj.(*v1.Pod); ok {
		return name
	}
	return name + "-" + strconv.Itoa(i)
}

// podLabels are the labels a workload's controller adds to its pods.
func podLabels(obj runtime.Object, name string, i int) map[string]string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: templateHash}
	case *appsv1.StatefulSet:
		pod := name + "-" + strconv.Itoa(i)
		return map[string]string{appsv1.StatefulSetPodNameLabel: pod, appsv1.PodIndexLabel: strconv.Itoa(i)}
	case *batchv1.Job:
		return map[string]string{batchv1.JobNameLabel: name}
	}
	return nil
}

func withLabels(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// controllerOf is the controller reference the workload's pods carry, and
// records the controller object in c unless c has one of that kind and
// name already: a Deployment's pods belong to a ReplicaSet it creates.
func controllerOf(obj runtime.Object, meta *metav1.ObjectMeta, c *explain.Cluster) *metav1.OwnerReference {
	uid := meta.UID
	if uid == "" {
		uid = types.UID("simulate-" + meta.Namespace + "-" + meta.Name)
	}
	var ctrl runtime.Object
	var ref metav1.OwnerReference
	switch t := obj.(type) {
	case *v1.Pod:
		return nil
	case *appsv1.Deployment:
		rs := &appsv1.ReplicaSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
			ObjectMeta: metav1.ObjectMeta{Name: meta.Name + "-" + templateHash, Namespace: meta.Namespace, UID: uid + "-rs"},
			Spec:       appsv1.ReplicaSetSpec{Replicas: t.Spec.Replicas, Selector: t.Spec.Selector, Template: t.Spec.Template},
		}
		ctrl, ref = rs, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}
	case *appsv1.ReplicaSet:
		cp := t.DeepCopy()
		cp.Namespace, cp.UID = meta.Namespace, uid
		ctrl, ref = cp, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: meta.Name, UID: uid}
	case *appsv1.StatefulSet:
		cp := t.DeepCopy()
		cp.Namespace, cp.UID = meta.Namespace, uid
		ctrl, ref = cp, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: meta.Name, UID: uid}
	case *appsv1.DaemonSet:
		ref = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: meta.Name, UID: uid}
	case *batchv1.Job:
		ref = metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: meta.Name, UID: uid}
	}
	if ctrl != nil && !holds(c, ctrl) {
		c.Others = append(c.Others, ctrl)
	}
	yes := true
	ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	return &ref
}

// holds: c has an object of ctrl's kind, namespace and name.
func holds(c *explain.Cluster, ctrl runtime.Object) bool {
	m, _ := metaOfController(ctrl)
	for _, o := range c.Others {
		om, ok := metaOfController(o)
		if ok && om.Namespace == m.Namespace && om.Name == m.Name &&
			fmt.Sprintf("%T", o) == fmt.Sprintf("%T", ctrl) {
			return true
		}
	}
	return false
}

func metaOfController(o runtime.Object) (*metav1.ObjectMeta, bool) {
	switch t := o.(type) {
	case *appsv1.ReplicaSet:
		return &t.ObjectMeta, true
	case *appsv1.StatefulSet:
		return &t.ObjectMeta, true
	}
	return nil, false
}

// finish gives pod what the apiserver would: a UID, Pending status, its
// owner, and the merge of its affinity terms' matchLabelKeys.
func finish(pod *v1.Pod, owner *metav1.OwnerReference) *v1.Pod {
	pod.UID = types.UID("simulate-" + pod.Namespace + "-" + pod.Name)
	pod.Spec.NodeName = ""
	pod.ResourceVersion = ""
	pod.Status = v1.PodStatus{Phase: v1.PodPending}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	explain.MergeMatchLabelKeys(pod)
	return pod
}

// daemonTolerations are the tolerations the DaemonSet controller adds to
// every pod it creates.
var daemonTolerations = []v1.Toleration{
	{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	{Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodePIDPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
	{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
}

// daemonPods are the pods the DaemonSet controller would create: one per
// node whose labels the template's node selector and required node
// affinity match and whose NoSchedule/NoExecute taints it tolerates, each
// pinned to its node by a metadata.name field term, as the controller does.
func daemonPods(meta *metav1.ObjectMeta, tmpl *v1.PodTemplateSpec, owner *metav1.OwnerReference, c *explain.Cluster) []Replica {
	var out []Replica
	what := "DaemonSet/" + meta.Name
	for _, node := range c.Nodes {
		pod := &v1.Pod{ObjectMeta: *tmpl.ObjectMeta.DeepCopy(), Spec: *tmpl.Spec.DeepCopy()}
		pod.Namespace = meta.Namespace
		pod.Name = meta.Name + "-" + node.Name
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations...)
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
			continue
		}
		if !toleratesHard(pod.Spec.Tolerations, node.Spec.Taints) {
			continue
		}
		pinToNode(pod, node.Name)
		out = append(out, Replica{Pod: finish(pod, owner), Workload: what})
	}
	return out
}

// pinToNode sets every required node affinity term's field requirements to
// metadata.name = node (adding one term when there is none).
func pinToNode(pod *v1.Pod, node string) {
	req := v1.NodeSelectorRequirement{Key: metav1.ObjectNameField, Operator: v1.NodeSelectorOpIn, Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &v1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = []v1.NodeSelectorRequirement{req}
	}
}

// toleratesHard: every NoSchedule and NoExecute taint has a toleration, by
// the Equal and Exists operators (the DaemonSet controller's check; the
// scheduler's TaintToleration filter judges the placement itself).
func toleratesHard(tols []v1.Toleration, taints []v1.Taint) bool {
	for _, t := range taints {
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for _, tol := range tols {
			if tol.Effect != "" && tol.Effect != t.Effect {
				continue
			}
			switch {
			case tol.Key == "" && tol.Operator == v1.TolerationOpExists,
				tol.Key == t.Key && tol.Operator == v1.TolerationOpExists,
				tol.Key == t.Key && (tol.Operator == v1.TolerationOpEqual || tol.Operator == "") && tol.Value == t.Value:
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// FileNamespaces takes the Namespace objects out of objs, as `kubectl apply
// -f` of the same files would create them before the workloads that live
// in them: each one the cluster lacks is added to a copy of c, with its
// labels (namespaceSelectors read them), and named in a note. It returns
// the other objects and c itself when nothing was added.
func FileNamespaces(objs []runtime.Object, c *explain.Cluster) ([]runtime.Object, *explain.Cluster, []string) {
	have := map[string]bool{}
	for _, ns := range c.Namespaces {
		have[ns.Name] = true
	}
	var rest []runtime.Object
	var added []*v1.Namespace
	var notes []string
	for _, obj := range objs {
		ns, ok := obj.(*v1.Namespace)
		if !ok {
			rest = append(rest, obj)
			continue
		}
		if have[ns.Name] {
			continue
		}
		have[ns.Name] = true
		cp := ns.DeepCopy()
		cp.Status.Phase = v1.NamespaceActive
		added = append(added, cp)
		notes = append(notes, fmt.Sprintf("namespace %s is created by the given files, not yet by the cluster: placed as if it existed", ns.Name))
	}
	if len(added) == 0 {
		return rest, c, nil
	}
	cp := *c
	cp.Namespaces = append(slices.Clip(c.Namespaces), added...)
	return rest, &cp, notes
}

package placementcmd

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// liveCluster lists, read-only, what the scheduler's informers would hold.
// Nodes are required. Namespaced kinds are listed across all namespaces
// when the caller may, else in namespace only (a user with rights in one
// namespace); what could not be read is recorded in Cluster.Unseen with
// what the explanation then leaves out. Cluster-scoped kinds other than
// nodes are read when allowed.
func liveCluster(ctx context.Context, c kubernetes.Interface, namespace string) (*explain.Cluster, error) {
	all := metav1.ListOptions{}
	nodes, err := c.CoreV1().Nodes().List(ctx, all)
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("cannot list nodes (%v): explain needs get/list on nodes (a ClusterRole); or explain a snapshot with --from-file", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list nodes (%v): check that the cluster is reachable and --kubeconfig/--context", err)
	}
	cl := &explain.Cluster{}
	for i := range nodes.Items {
		cl.Nodes = append(cl.Nodes, &nodes.Items[i])
	}

	pods, err := c.CoreV1().Pods("").List(ctx, all)
	if apierrors.IsForbidden(err) {
		pods, err = c.CoreV1().Pods(namespace).List(ctx, all)
		if err == nil {
			cl.Unseen = append(cl.Unseen, fmt.Sprintf("pods in namespaces other than %s not visible (no cluster-wide list on pods): their requests, required anti-affinity, topology spread and the nodes they hold are not counted, so more may look feasible or free than is", namespace))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list pods in namespace %s: %w", namespace, err)
	}
	for i := range pods.Items {
		cl.Pods = append(cl.Pods, &pods.Items[i])
	}

	nss, err := c.CoreV1().Namespaces().List(ctx, all)
	switch {
	case apierrors.IsForbidden(err):
		// The apiserver labels every namespace with its name; a
		// namespaceSelector can still match on that.
		ns, gerr := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if gerr != nil {
			ns = &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{v1.LabelMetadataName: namespace}}}
		}
		cl.Namespaces = append(cl.Namespaces, ns)
		cl.Unseen = append(cl.Unseen, "namespaces not listable: affinity terms with a namespaceSelector see only "+namespace+describeSelf(gerr))
	case err != nil:
		return nil, fmt.Errorf("cannot list namespaces: %w", err)
	default:
		for i := range nss.Items {
			cl.Namespaces = append(cl.Namespaces, &nss.Items[i])
		}
	}

	// Namespaced kinds: all namespaces, else the pod's own (which is what
	// its PVCs, claims and owners' selectors live in). Cluster-scoped ones
	// (namespaced false) ignore the namespace.
	type lister = func(ns string) (runtime.Object, error)
	kinds := []struct {
		what       string
		namespaced bool
		list       lister
	}{
		{"PersistentVolumeClaims", true, func(ns string) (runtime.Object, error) {
			return c.CoreV1().PersistentVolumeClaims(ns).List(ctx, all)
		}},
		{"Services", true, func(ns string) (runtime.Object, error) { return c.CoreV1().Services(ns).List(ctx, all) }},
		{"ReplicationControllers", true, func(ns string) (runtime.Object, error) {
			return c.CoreV1().ReplicationControllers(ns).List(ctx, all)
		}},
		{"ReplicaSets", true, func(ns string) (runtime.Object, error) { return c.AppsV1().ReplicaSets(ns).List(ctx, all) }},
		{"StatefulSets", true, func(ns string) (runtime.Object, error) { return c.AppsV1().StatefulSets(ns).List(ctx, all) }},
		{"CSIStorageCapacities", true, func(ns string) (runtime.Object, error) {
			return c.StorageV1().CSIStorageCapacities(ns).List(ctx, all)
		}},
		{"ResourceClaims", true, func(ns string) (runtime.Object, error) { return c.ResourceV1().ResourceClaims(ns).List(ctx, all) }},
		// A replica's claims from templates are modelled from them.
		{"ResourceClaimTemplates", true, func(ns string) (runtime.Object, error) {
			return c.ResourceV1().ResourceClaimTemplates(ns).List(ctx, all)
		}},
		{"PodDisruptionBudgets", true, func(ns string) (runtime.Object, error) {
			return c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, all)
		}},
		{"PersistentVolumes", false, func(string) (runtime.Object, error) { return c.CoreV1().PersistentVolumes().List(ctx, all) }},
		{"StorageClasses", false, func(string) (runtime.Object, error) { return c.StorageV1().StorageClasses().List(ctx, all) }},
		{"CSINodes", false, func(string) (runtime.Object, error) { return c.StorageV1().CSINodes().List(ctx, all) }},
		{"CSIDrivers", false, func(string) (runtime.Object, error) { return c.StorageV1().CSIDrivers().List(ctx, all) }},
		{"ResourceSlices", false, func(string) (runtime.Object, error) { return c.ResourceV1().ResourceSlices().List(ctx, all) }},
		{"DeviceClasses", false, func(string) (runtime.Object, error) { return c.ResourceV1().DeviceClasses().List(ctx, all) }},
		{"PriorityClasses", false, func(string) (runtime.Object, error) { return c.SchedulingV1().PriorityClasses().List(ctx, all) }},
	}
	var otherNS, unreadable []string
	for _, k := range kinds {
		l, err := k.list("")
		if apierrors.IsForbidden(err) && k.namespaced {
			l, err = k.list(namespace)
			if err == nil {
				otherNS = append(otherNS, k.what)
			}
		}
		if apierrors.IsNotFound(err) {
			continue // the API is not served: there are none
		}
		if apierrors.IsForbidden(err) {
			unreadable = append(unreadable, k.what)
			continue
		}
		if err := addItems(cl, l, err); err != nil {
			return nil, err
		}
	}
	if len(otherNS) > 0 {
		cl.Unseen = append(cl.Unseen, fmt.Sprintf("%s read in namespace %s only", joinList(otherNS), namespace))
	}
	if len(unreadable) > 0 {
		cl.Unseen = append(cl.Unseen, fmt.Sprintf("%s not readable: plugins that need them judge without them", joinList(unreadable)))
	}
	return cl, nil
}

func describeSelf(err error) string {
	if err != nil {
		return " (and of its labels only kubernetes.io/metadata.name, as it is not readable either)"
	}
	return ""
}

func addItems(cl *explain.Cluster, l runtime.Object, err error) error {
	if err != nil {
		return fmt.Errorf("listing cluster objects: %w", err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return err
	}
	cl.Others = append(cl.Others, items...)
	return nil
}

func joinList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}

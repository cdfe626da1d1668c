package placementcmd

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// liveCluster lists, read-only, what the scheduler's informers would hold.
// Nodes are required. Namespaced kinds are listed across all namespaces
// when the caller may, else in namespace only (a user with rights in one
// namespace); what could not be read is recorded in Cluster.Unseen with
// what the explanation then leaves out. Cluster-scoped kinds other than
// nodes are read when allowed.
func liveCluster(ctx context.Context, c kubernetes.Interface, namespace string) (*explain.Cluster, error) {
	cl := &explain.Cluster{}
	err := eachListed(ctx, func(opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, opts)
	}, func(o runtime.Object) { cl.Nodes = append(cl.Nodes, o.(*v1.Node)) })
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("cannot list nodes (%v): explain needs get/list on nodes (a ClusterRole); or explain a snapshot with --from-file", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list nodes (%v): check that the cluster is reachable and --kubeconfig/--context", err)
	}

	pods := func(ns string) ([]*v1.Pod, error) {
		var out []*v1.Pod
		err := eachListed(ctx, func(opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Pods(ns).List(ctx, opts)
		}, func(o runtime.Object) { out = append(out, o.(*v1.Pod)) })
		return out, err
	}
	cl.Pods, err = pods("")
	if apierrors.IsForbidden(err) {
		cl.Pods, err = pods(namespace)
		if err == nil {
			cl.Unseen = append(cl.Unseen, fmt.Sprintf("pods in namespaces other than %s not visible (no cluster-wide list on pods): their requests, required anti-affinity, topology spread and the nodes they hold are not counted, so more may look feasible or free than is", namespace))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list pods in namespace %s: %w", namespace, err)
	}

	var nss []*v1.Namespace
	err = eachListed(ctx, func(opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Namespaces().List(ctx, opts)
	}, func(o runtime.Object) { nss = append(nss, o.(*v1.Namespace)) })
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
		cl.Namespaces = nss
	}

	// Namespaced kinds: all namespaces, else the pod's own (which is what
	// its PVCs, claims and owners' selectors live in). Cluster-scoped ones
	// (namespaced false) ignore the namespace.
	type lister = func(ns string, opts metav1.ListOptions) (runtime.Object, error)
	kinds := []struct {
		what       string
		namespaced bool
		list       lister
	}{
		{"PersistentVolumeClaims", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().PersistentVolumeClaims(ns).List(ctx, opts)
		}},
		{"Services", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services(ns).List(ctx, opts)
		}},
		{"ReplicationControllers", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().ReplicationControllers(ns).List(ctx, opts)
		}},
		{"ReplicaSets", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().ReplicaSets(ns).List(ctx, opts)
		}},
		{"StatefulSets", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().StatefulSets(ns).List(ctx, opts)
		}},
		// simulate --add-nodes gives new nodes their DaemonSet pods.
		{"DaemonSets", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.AppsV1().DaemonSets(ns).List(ctx, opts)
		}},
		{"CSIStorageCapacities", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.StorageV1().CSIStorageCapacities(ns).List(ctx, opts)
		}},
		{"ResourceClaims", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.ResourceV1().ResourceClaims(ns).List(ctx, opts)
		}},
		// A replica's claims from templates are modelled from them.
		{"ResourceClaimTemplates", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.ResourceV1().ResourceClaimTemplates(ns).List(ctx, opts)
		}},
		{"PodDisruptionBudgets", true, func(ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.PolicyV1().PodDisruptionBudgets(ns).List(ctx, opts)
		}},
		{"PersistentVolumes", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().PersistentVolumes().List(ctx, opts)
		}},
		{"StorageClasses", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.StorageV1().StorageClasses().List(ctx, opts)
		}},
		{"CSINodes", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.StorageV1().CSINodes().List(ctx, opts)
		}},
		{"CSIDrivers", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.StorageV1().CSIDrivers().List(ctx, opts)
		}},
		{"ResourceSlices", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.ResourceV1().ResourceSlices().List(ctx, opts)
		}},
		{"DeviceClasses", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.ResourceV1().DeviceClasses().List(ctx, opts)
		}},
		{"PriorityClasses", false, func(_ string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.SchedulingV1().PriorityClasses().List(ctx, opts)
		}},
	}
	// A kind's items, read in namespace ns (every namespace: ""); nothing
	// of a list that fails part-way.
	listKind := func(list lister, ns string) ([]runtime.Object, error) {
		var out []runtime.Object
		err := eachListed(ctx, func(opts metav1.ListOptions) (runtime.Object, error) { return list(ns, opts) },
			func(o runtime.Object) { out = append(out, o) })
		return out, err
	}
	var otherNS, unreadable []string
	for _, k := range kinds {
		items, err := listKind(k.list, "")
		if apierrors.IsForbidden(err) && k.namespaced {
			items, err = listKind(k.list, namespace)
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
		if err != nil {
			return nil, fmt.Errorf("listing cluster objects: %w", err)
		}
		cl.Others = append(cl.Others, items...)
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

// pageSize is the number of objects a LIST asks for at a time (kubectl's
// --chunk-size default): a page is trimmed before the next arrives, so a
// large cluster's whole unpaged list never sits in memory.
const pageSize = 500

// eachListed lists with list page by page (limit and continue, as kubectl
// does; an apiserver that does not page answers in one) and hands each
// item to add once Trim has dropped what placement does not read. At most
// one page beyond the one being trimmed is read ahead.
func eachListed(ctx context.Context, list func(metav1.ListOptions) (runtime.Object, error), add func(runtime.Object)) error {
	p := pager.New(pager.SimplePageFunc(list))
	p.PageSize = pageSize
	p.PageBufferSize = 1
	return p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		explain.Trim(o)
		add(o)
		return nil
	})
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

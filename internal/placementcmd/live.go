package placementcmd

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
)

// liveCluster lists, read-only, what the scheduler's informers would hold.
// Nodes, pods and namespaces are required; the rest is read when allowed
// (a user without access to, say, StorageClasses still gets an answer for
// the plugins that do not need them).
func liveCluster(ctx context.Context, c kubernetes.Interface) (*explain.Cluster, error) {
	all := metav1.ListOptions{}
	nodes, err := c.CoreV1().Nodes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("cannot list nodes (%v): check that the cluster is reachable and --kubeconfig/--context", err)
	}
	pods, err := c.CoreV1().Pods("").List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("cannot list pods in all namespaces: %w", err)
	}
	nss, err := c.CoreV1().Namespaces().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("cannot list namespaces: %w", err)
	}
	cl := &explain.Cluster{}
	for i := range nodes.Items {
		cl.Nodes = append(cl.Nodes, &nodes.Items[i])
	}
	for i := range pods.Items {
		cl.Pods = append(cl.Pods, &pods.Items[i])
	}
	for i := range nss.Items {
		cl.Namespaces = append(cl.Namespaces, &nss.Items[i])
	}
	optional := []func() (runtime.Object, error){
		func() (runtime.Object, error) { return c.CoreV1().PersistentVolumeClaims("").List(ctx, all) },
		func() (runtime.Object, error) { return c.CoreV1().PersistentVolumes().List(ctx, all) },
		func() (runtime.Object, error) { return c.CoreV1().Services("").List(ctx, all) },
		func() (runtime.Object, error) { return c.CoreV1().ReplicationControllers("").List(ctx, all) },
		func() (runtime.Object, error) { return c.AppsV1().ReplicaSets("").List(ctx, all) },
		func() (runtime.Object, error) { return c.AppsV1().StatefulSets("").List(ctx, all) },
		func() (runtime.Object, error) { return c.StorageV1().StorageClasses().List(ctx, all) },
		func() (runtime.Object, error) { return c.StorageV1().CSINodes().List(ctx, all) },
		func() (runtime.Object, error) { return c.StorageV1().CSIDrivers().List(ctx, all) },
		func() (runtime.Object, error) { return c.StorageV1().CSIStorageCapacities("").List(ctx, all) },
		func() (runtime.Object, error) { return c.ResourceV1().ResourceClaims("").List(ctx, all) },
		func() (runtime.Object, error) { return c.ResourceV1().ResourceSlices().List(ctx, all) },
		func() (runtime.Object, error) { return c.ResourceV1().DeviceClasses().List(ctx, all) },
	}
	for _, list := range optional {
		l, err := list()
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("listing cluster objects: %w", err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		cl.Others = append(cl.Others, items...)
	}
	return cl, nil
}

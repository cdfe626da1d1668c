package examples

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
)

// FieldManager owns what Apply writes, as kubectl's does for kubectl apply.
const FieldManager = "placement-examples"

// Runner applies example files and checks expectations against one cluster.
type Runner struct {
	Client  kubernetes.Interface
	dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewRunner builds a Runner for the cluster cfg points at.
func NewRunner(cfg *rest.Config) (*Runner, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Runner{
		Client:  client,
		dynamic: dyn,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
	}, nil
}

// ApplyFile server-side applies every object in a YAML file (multi-document,
// kind: List expanded), in file order, like `kubectl apply --server-side`.
func (r *Runner) ApplyFile(ctx context.Context, fsys fs.FS, name string) error {
	objs, err := readObjects(fsys, name)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := r.apply(ctx, obj); err != nil {
			return fmt.Errorf("%s: %s %s: %w", name, obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// ApplyFleet applies the fleet folder of fsys and waits until its nodes
// are schedulable.
func (r *Runner) ApplyFleet(ctx context.Context, fsys fs.FS) error {
	files, err := fs.Glob(fsys, path.Join(FleetDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no YAML in %s/", FleetDir)
	}
	var names []string
	for _, f := range files {
		if err := r.ApplyFile(ctx, fsys, f); err != nil {
			return err
		}
		objs, err := readObjects(fsys, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() == "Node" {
				names = append(names, o.GetName())
			}
		}
	}
	return r.waitForNodesReady(ctx, names)
}

// fleetWait bounds the wait for the fleet to become schedulable.
const fleetWait = 2 * time.Minute

// waitForNodesReady polls until every named node is Ready (KWOK reports
// it) and carries no node.kubernetes.io/not-ready taint (the node
// lifecycle controller lifts the one admission put on the new node).
func (r *Runner) waitForNodesReady(ctx context.Context, names []string) error {
	var notReady []string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, fleetWait, true, func(ctx context.Context) (bool, error) {
		nodes, err := r.nodes(ctx)
		if err != nil {
			return false, err
		}
		notReady = notReady[:0]
		for _, name := range names {
			if n := nodes[name]; n == nil || !schedulable(n) {
				notReady = append(notReady, name)
			}
		}
		return len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waited %s for the fleet to be Ready without the not-ready taint (KWOK reports Ready, the node lifecycle controller lifts the taint); still not: %v: %w",
			fleetWait, notReady, err)
	}
	return nil
}

func schedulable(n *v1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			ready = c.Status == v1.ConditionTrue
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeNotReady || t.Key == v1.TaintNodeUnreachable {
			return false
		}
	}
	return ready
}

func (r *Runner) apply(ctx context.Context, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("no API for %s (is this a Kubernetes object?): %w", gvk, err)
	}
	var res dynamic.ResourceInterface = r.dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == "namespace" {
		if obj.GetNamespace() == "" {
			return errors.New("metadata.namespace: empty; examples name their namespace so they apply as-is")
		}
		res = r.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	data, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
	if err != nil {
		return err
	}
	if _, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: ptr.To(true)}); err != nil {
		return err
	}
	if gvk.Group == "" && gvk.Kind == "Namespace" {
		// The ServiceAccount admission plugin rejects pods until the
		// serviceaccount controller has created the namespace's default
		// account, and examples put pods right after their namespace.
		return r.waitForDefaultServiceAccount(ctx, obj.GetName())
	}
	return nil
}

// serviceAccountWait bounds the wait for a new namespace's default account.
const serviceAccountWait = 60 * time.Second

func (r *Runner) waitForDefaultServiceAccount(ctx context.Context, ns string) error {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, serviceAccountWait, true, func(ctx context.Context) (bool, error) {
		_, err := r.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waited %s for ServiceAccount %s/default (kube-controller-manager's serviceaccount-controller creates it): %w", serviceAccountWait, ns, err)
	}
	return nil
}

func readObjects(fsys fs.FS, name string) ([]*unstructured.Unstructured, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			continue
		}
		out = append(out, obj)
	}
}

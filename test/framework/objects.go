package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Poll calls cond until it returns true or e.Timeout passes, and fails the
// test naming what it waited for. An error from cond fails at once.
func (e *Env) Poll(t testing.TB, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), pollInterval, e.Timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// NewNamespace creates a namespace for the calling test, named after it. Its
// cleanup deletes the test's pods first (envtest runs no namespace
// controller, so deleting the namespace alone would leave them Pending for
// later tests' schedulers to pick up), then the namespace.
func (e *Env) NewNamespace(t testing.TB, labels map[string]string) string {
	t.Helper()
	name := sanitize(t.Name()) + "-" + rand.String(5)
	_, err := e.Client.CoreV1().Namespaces().Create(context.Background(), testutil.MakeNamespace(name, labels), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		err := e.Client.CoreV1().Pods(name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
		if err != nil {
			t.Errorf("deleting pods of %s: %v", name, err)
		}
		if err := e.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// SchedulableNode is a node the default plugins accept (Ready, room for
// pods), named <ns>-<name> so that it is unique to the test owning ns.
func SchedulableNode(ns, name string) *testutil.NodeWrapper {
	return testutil.MakeNode(ns+"-"+name).Capacity("8", "32Gi", 110).Ready()
}

// CreateNodes creates cluster-scoped nodes and deletes them when the test
// ends.
func (e *Env) CreateNodes(t testing.TB, nodes ...*v1.Node) {
	t.Helper()
	for _, n := range nodes {
		if _, err := e.Client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", n.Name, err)
		}
		name := n.Name
		t.Cleanup(func() {
			err := e.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting node %s: %v", name, err)
			}
		})
	}
}

// SetNodeLabel sets the label key of node to value, or removes it when
// value is "" (a node relabelled under running pods).
func (e *Env) SetNodeLabel(t testing.TB, node, key, value string) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{key: nil}}}
	if value != "" {
		patch["metadata"].(map[string]any)["labels"].(map[string]any)[key] = value
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, raw, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling node %s %s=%q: %v", node, key, value, err)
	}
}

// CreatePod creates a pod through the apiserver (so admission and
// defaulting, e.g. the matchLabelKeys merge, apply) and returns what was
// stored. NewNamespace's cleanup deletes it.
func (e *Env) CreatePod(t testing.TB, pod *v1.Pod) *v1.Pod {
	t.Helper()
	got, err := e.Client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return got
}

// Create creates typed objects of any kind through the dynamic client and,
// when the test ends, deletes them, first clearing finalizers that no
// controller here would ever remove (pvc-protection, pv-protection, a
// claim's delete-protection).
func (e *Env) Create(t testing.TB, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		u, err := toUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		ri := e.Resource(t, u)
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", ObjectKey(u), err)
		}
		t.Cleanup(func() {
			_, err := ri.Patch(ctx, u.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clearing finalizers of %s: %v", ObjectKey(u), err)
			}
			if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", ObjectKey(u), err)
			}
		})
	}
}

// toUnstructured is a typed object as the dynamic client takes it.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}

// Resource is the dynamic client for obj's kind (and namespace, if it has
// one), found through discovery.
func (e *Env) Resource(t testing.TB, obj *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	ri, err := e.resource(obj)
	if err != nil {
		t.Fatal(err)
	}
	return ri
}

func (e *Env) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := e.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	if ns := obj.GetNamespace(); ns != "" {
		return e.dynamic.Resource(m.Resource).Namespace(ns), nil
	}
	return e.dynamic.Resource(m.Resource), nil
}

// ObjectKey names obj as "Kind namespace/name" for messages.
func ObjectKey(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

// WaitForPod polls the pod until cond holds, and returns it.
func (e *Env) WaitForPod(t testing.TB, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, e.Timeout, true, func(ctx context.Context) (bool, error) {
		p, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		state := "<not found>"
		if last != nil {
			state = fmt.Sprintf("nodeName=%q conditions=%+v", last.Spec.NodeName, last.Status.Conditions)
		}
		t.Fatalf("pod %s/%s: waiting for %s: %v; last seen: %s", ns, name, what, err, state)
	}
	return last
}

// WaitForBound waits until the pod is bound and returns its node's name.
func (e *Env) WaitForBound(t testing.TB, ns, name string) string {
	t.Helper()
	return e.WaitForPod(t, ns, name, "binding", func(p *v1.Pod) bool { return p.Spec.NodeName != "" }).Spec.NodeName
}

// WaitForUnschedulable waits until the scheduler has marked the pod
// PodScheduled=False/Unschedulable and returns the condition's message.
func (e *Env) WaitForUnschedulable(t testing.TB, ns, name string) string {
	t.Helper()
	p := e.WaitForPod(t, ns, name, "PodScheduled=False", func(p *v1.Pod) bool {
		c := PodCondition(p, v1.PodScheduled)
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable
	})
	return PodCondition(p, v1.PodScheduled).Message
}

// PodCondition returns the pod's condition of type ct, or nil.
func PodCondition(p *v1.Pod, ct v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == ct {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// PodEvents lists the events recorded for a pod.
func (e *Env) PodEvents(t testing.TB, ns, name string) []v1.Event {
	t.Helper()
	sel := fields.Set{"involvedObject.kind": "Pod", "involvedObject.name": name}.AsSelector().String()
	list, err := e.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	return list.Items
}

// WaitForEvent waits for an event with the given reason on the pod whose
// message contains substr, and returns it.
func (e *Env) WaitForEvent(t testing.TB, ns, pod, reason, substr string) v1.Event {
	t.Helper()
	var found v1.Event
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, e.Timeout, true, func(context.Context) (bool, error) {
		for _, ev := range e.PodEvents(t, ns, pod) {
			if ev.Reason == reason && strings.Contains(ev.Message, substr) {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event containing %q for pod %s/%s: %v; events: %+v", reason, substr, ns, pod, err, e.PodEvents(t, ns, pod))
	}
	return found
}

// LeaseHolder returns the holder of the placement-scheduler lease, "" if it
// has none or does not exist.
func (e *Env) LeaseHolder(t testing.TB) string {
	t.Helper()
	l, err := e.Client.CoordinationV1().Leases(Namespace).Get(context.Background(), Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatalf("reading lease %s/%s: %v", Namespace, Name, err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// WaitForLeaseHolder waits until the placement-scheduler lease has a holder
// other than not ("" for any holder) and returns it.
func (e *Env) WaitForLeaseHolder(t testing.TB, not string) string {
	t.Helper()
	var holder string
	e.Poll(t, fmt.Sprintf("lease %s/%s to have a holder other than %q", Namespace, Name, not), func(context.Context) (bool, error) {
		holder = e.LeaseHolder(t)
		return holder != "" && holder != not, nil
	})
	return holder
}

// ServiceAccountToken returns a fresh token of the ServiceAccount ns/name
// from the TokenRequest API, as a pod's projected token would be.
func (e *Env) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	token, err := e.serviceAccountToken(context.Background(), ns, name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func (e *Env) serviceAccountToken(ctx context.Context, ns, name string, ttl time.Duration) (string, error) {
	tr, err := e.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))}},
		metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("TokenRequest for %s/%s: %w", ns, name, err)
	}
	return tr.Status.Token, nil
}

// ServiceAccountKubeconfig writes a kubeconfig for the control plane that
// authenticates as the ServiceAccount ns/name and returns its path.
func (e *Env) ServiceAccountKubeconfig(t testing.TB, ns, name string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: e.ServiceAccountToken(t, ns, name)}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: name}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig-"+ns+"-"+name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

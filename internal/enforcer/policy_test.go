//go:build !k8s1.35 && !k8s1.36

package enforcer

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	admissionregistrationdefaults "k8s.io/kubernetes/pkg/apis/admissionregistration/v1"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// The shipped enforcer's user name, as the policy's matchCondition names it.
const policyUser = "system:serviceaccount:placement-scheduler:placement-scheduler-enforcer"

// policyAdmission is the apiserver's own ValidatingAdmissionPolicy plugin
// with the shipped policy and its binding (manifests/base/
// enforcer-policy.yaml) as its only ones, read from a fake clientset that
// also holds namespace ns.
func policyAdmission(t *testing.T, ns string) *validating.Plugin {
	t.Helper()
	data, err := fs.ReadFile(manifests.Files(), "base/enforcer-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver's defaults for these kinds, as it stores them.
	defaults := runtime.NewScheme()
	if err := admissionregistrationdefaults.RegisterDefaults(defaults); err != nil {
		t.Fatal(err)
	}
	objs := []runtime.Object{&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("manifests/base/enforcer-policy.yaml: %v", err)
		}
		defaults.Default(obj)
		objs = append(objs, obj)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	p, err := validating.NewPlugin(nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	p.SetExternalKubeInformerFactory(factory)
	p.SetExternalKubeClientSet(client)
	p.SetRESTMapper(meta.NewDefaultRESTMapper(nil))
	p.SetDynamicClient(dynamicfake.NewSimpleDynamicClient(scheme.Scheme))
	p.SetDrainedNotification(stop)
	p.SetUnconditionalAuthorizer(authorizerfactory.NewAlwaysAllowAuthorizer())
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return p
}

// admit asks p about op on pod (old before it; an Eviction for the
// eviction subresource) by userName.
func admit(p *validating.Plugin, op admission.Operation, sub string, obj, old runtime.Object, userName string) error {
	kind := v1.SchemeGroupVersion.WithKind("Pod")
	if sub == "eviction" {
		kind = policyv1.SchemeGroupVersion.WithKind("Eviction")
	}
	m, err := meta.Accessor(obj)
	if obj == nil || err != nil {
		m, _ = meta.Accessor(old)
	}
	attr := admission.NewAttributesRecord(obj, old, kind, m.GetNamespace(), m.GetName(), v1.SchemeGroupVersion.WithResource("pods"), sub, op, nil, false, &user.DefaultInfo{Name: userName})
	return p.Validate(context.Background(), attr, admission.NewObjectInterfacesFromScheme(scheme.Scheme))
}

// The shipped admission policy, run by the apiserver's own plugin: the
// enforcer's ServiceAccount may write and remove its record (the record
// writer's own patch, applied), and nothing else of a pod, label,
// annotation, owner, finalizer, spec or status, nor create, delete or
// write a subresource; an eviction and anyone else's writes pass.
func TestAdmissionPolicyLetsTheEnforcerWriteOnlyItsRecord(t *testing.T) {
	const ns = "apps"
	p := policyAdmission(t, ns)
	ctx := context.Background()
	base := func() *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, UID: "u1", GenerateName: "web-",
				Labels:          map[string]string{"app": "web"},
				Annotations:     map[string]string{"example.com/kept": "yes"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs"}}},
			Spec:   v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "example.com/web:1"}}},
			Status: v1.PodStatus{Phase: v1.PodRunning},
		}
	}

	// The record writer's own patches, applied by a clientset.
	for name, old := range map[string]*v1.Pod{
		"annotated pod": base(),
		"pod without annotations or labels": func() *v1.Pod {
			p := base()
			p.Annotations, p.Labels = nil, nil
			return p
		}(),
	} {
		client := fake.NewClientset(old)
		r := newRecords(client, enforcerv1alpha1.LeaderElection{LeaseNamespace: "placement-scheduler", LeaseName: "placement-scheduler-enforcer"}, false)
		r.set(ctx, old, `{"by":"placement-scheduler/placement-scheduler-enforcer"}`)
		written, err := client.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if written.Annotations[RecordAnnotation] == "" {
			t.Fatalf("%s: the record writer wrote no record: %v", name, written.Annotations)
		}
		if err := admit(p, admission.Update, "", written, old, policyUser); err != nil {
			t.Errorf("%s: writing the record refused: %v", name, err)
		}
		r.set(ctx, written, "")
		cleared, err := client.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cleared.Annotations[RecordAnnotation]; ok {
			t.Fatalf("%s: the record writer left the record: %v", name, cleared.Annotations)
		}
		if err := admit(p, admission.Update, "", cleared, written, policyUser); err != nil {
			t.Errorf("%s: removing the record refused: %v", name, err)
		}
	}

	for _, tc := range []struct {
		name   string
		change func(*v1.Pod)
		// refused: the policy's message names it; "" allowed.
		refused string
	}{
		{"the record alone", func(p *v1.Pod) { p.Annotations[RecordAnnotation] = "{}" }, ""},
		{"nothing", func(*v1.Pod) {}, ""},
		{"the image", func(p *v1.Pod) { p.Spec.Containers[0].Image = "example.com/other:1" }, "spec"},
		{"a toleration", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}} }, "spec"},
		{"the status", func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }, "status"},
		{"a label changed", func(p *v1.Pod) { p.Labels["app"] = "db" }, "labels"},
		{"a label added", func(p *v1.Pod) { p.Labels["tier"] = "front" }, "labels"},
		{"the labels removed", func(p *v1.Pod) { p.Labels = nil }, "labels"},
		{"another annotation changed", func(p *v1.Pod) { p.Annotations["example.com/kept"] = "no" }, "annotation"},
		{"another annotation removed", func(p *v1.Pod) { delete(p.Annotations, "example.com/kept") }, "annotation"},
		{"an annotation added with the record", func(p *v1.Pod) {
			p.Annotations[RecordAnnotation] = "{}"
			p.Annotations["example.com/new"] = "x"
		}, "annotation"},
		{"the annotations replaced by the record", func(p *v1.Pod) { p.Annotations = map[string]string{RecordAnnotation: "{}"} }, "annotation"},
		{"the owner changed", func(p *v1.Pod) { p.OwnerReferences[0].UID = "other" }, "ownerReferences"},
		{"the owners removed", func(p *v1.Pod) { p.OwnerReferences = nil }, "ownerReferences"},
		{"a finalizer", func(p *v1.Pod) { p.Finalizers = []string{"example.com/hold"} }, "finalizers"},
		{"the generateName", func(p *v1.Pod) { p.GenerateName = "db-" }, "generateName"},
		{"the deletion grace period", func(p *v1.Pod) { p.DeletionGracePeriodSeconds = new(int64) }, "deletion"},
	} {
		old := base()
		cur := old.DeepCopy()
		tc.change(cur)
		err := admit(p, admission.Update, "", cur, old, policyUser)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: answered %v, want Forbidden naming %s", tc.name, err, tc.refused)
		}
		// Anyone else may.
		if err := admit(p, admission.Update, "", cur, old, "system:serviceaccount:kube-system:replicaset-controller"); err != nil {
			t.Errorf("%s by another user: refused: %v", tc.name, err)
		}
	}

	pod := base()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}
	for _, tc := range []struct {
		name     string
		op       admission.Operation
		sub      string
		obj, old runtime.Object
		refused  bool
	}{
		{"create", admission.Create, "", pod, nil, true},
		{"delete", admission.Delete, "", nil, pod, true},
		{"pods/status", admission.Update, "status", pod, pod, true},
		{"pods/ephemeralcontainers", admission.Update, "ephemeralcontainers", pod, pod, true},
		{"an eviction", admission.Create, "eviction", eviction, nil, false},
	} {
		err := admit(p, tc.op, tc.sub, tc.obj, tc.old, policyUser)
		if tc.refused != apierrors.IsForbidden(err) || !tc.refused && err != nil {
			t.Errorf("%s by the enforcer: answered %v, want refused %v", tc.name, err, tc.refused)
		}
	}
}

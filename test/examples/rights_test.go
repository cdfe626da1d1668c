package examples

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// checkRights fails t unless user, an enforcer running with exactly the
// shipped RBAC, made requests and none was refused: a right the shipped
// roles lack (or a write the admission policy refuses) is a 403 in the
// apiserver's audit log. A PodDisruptionBudget's 429 is an answer, not a
// refusal.
func checkRights(t *testing.T, user string) {
	t.Helper()
	reqs, err := env.AuditedRequests(user)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, ev := range reqs {
		if c := ev.ResponseStatus.Code; c == http.StatusForbidden || c == http.StatusUnauthorized {
			refused = append(refused, fmt.Sprintf("%s %s: %d %s", ev.Verb, ev.RequestURI, c, ev.ResponseStatus.Message))
		}
	}
	switch {
	case len(reqs) == 0:
		t.Errorf("the audit log holds no request by %s", user)
	case len(refused) > 0:
		t.Errorf("%d of %d requests by %s refused, want none:\n%s", len(refused), len(reqs), user, strings.Join(refused, "\n"))
	default:
		t.Logf("%d requests by %s, none refused", len(reqs), user)
	}
}

// policyRefusal is the start of every message of the enforcer's admission
// policy (manifests/base/enforcer-policy.yaml); RBAC's refusals read
// otherwise.
const policyRefusal = "placement-enforcer may"

// The enforcer's ServiceAccount as installed (the shipped RBAC and
// ValidatingAdmissionPolicy) holds patch on every pod, for its record
// annotation; the policy lets it change nothing else of a pod. Asked in its
// name (impersonated, so these refusals are not counted against the
// running enforcer's, checkRights), changing a pod's image, labels, another
// annotation, owners or finalizers is refused by the policy and leaves the
// pod as it was; the record is written and removed as the enforcer writes
// it; creating, deleting and writing a subresource are refused by RBAC, and
// by the policy too once RBAC would allow them; an eviction goes through.
func TestEnforcerPatchesOnlyItsRecord(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	ctx := context.Background()
	owner := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	owner, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, owner, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Nothing schedules it: the test only writes it.
	pod := testutil.MakePod(ns, "target").SchedulerName("nobody").Label("app", "target").Obj()
	pod.Annotations = map[string]string{"example.com/kept": "yes"}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	pod = env.CreatePod(t, pod)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: framework.EnforcerUser}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pods := as.CoreV1().Pods(ns)
	patch := func(ctx context.Context, pt types.PatchType, body string, dryRun bool) error {
		opts := metav1.PatchOptions{FieldManager: enforcer.Component}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := pods.Patch(ctx, pod.Name, pt, []byte(body), opts)
		return err
	}
	image := `{"spec":{"containers":[{"name":"pause","image":"example.com/anything:latest"}]}}`
	// The policy is in force once it refuses a dry run (which changes
	// nothing when it is not yet).
	env.Poll(t, "the policy refusing the enforcer a dry-run change of a pod's image", func(ctx context.Context) (bool, error) {
		err := patch(ctx, types.StrategicMergePatchType, image, true)
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), policyRefusal), nil
	})

	record := func(value string) string {
		v, _ := json.Marshal(value)
		if value == "" {
			v = []byte("null")
		}
		// The record writer's patch (internal/enforcer/records.go): a
		// JSON merge patch carrying the pod's UID.
		return fmt.Sprintf(`{"metadata":{"uid":%q,"annotations":{%q:%s}}}`, pod.UID, enforcer.RecordAnnotation, v)
	}
	for _, tc := range []struct {
		name, patch, refusal string
		pt                   types.PatchType
	}{
		{"image", image, "spec", types.StrategicMergePatchType},
		{"a label added", `{"metadata":{"labels":{"app":"other"}}}`, "labels", types.MergePatchType},
		{"a label removed", `{"metadata":{"labels":{"app":null}}}`, "labels", types.MergePatchType},
		{"another annotation changed", `{"metadata":{"annotations":{"example.com/kept":"no"}}}`, "annotation", types.MergePatchType},
		{"another annotation removed", `{"metadata":{"annotations":{"example.com/kept":null}}}`, "annotation", types.MergePatchType},
		{"an annotation added beside the record", fmt.Sprintf(`{"metadata":{"annotations":{%q:"{}","example.com/new":"x"}}}`, enforcer.RecordAnnotation), "annotation", types.MergePatchType},
		{"a label beside the record", fmt.Sprintf(`{"metadata":{"labels":{"x":"y"},"annotations":{%q:"{}"}}}`, enforcer.RecordAnnotation), "labels", types.MergePatchType},
		{"ownerReferences removed", `{"metadata":{"ownerReferences":null}}`, "ownerReferences", types.MergePatchType},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/hold"]}}`, "finalizers", types.MergePatchType},
	} {
		err := patch(ctx, tc.pt, tc.patch, false)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policyRefusal) || !strings.Contains(err.Error(), tc.refusal) {
			t.Errorf("%s: the enforcer's patch %s answered %v, want the policy's refusal naming %s", tc.name, tc.patch, err, tc.refusal)
		}
	}
	after, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != pod.ResourceVersion {
		t.Errorf("the refused patches changed the pod: resourceVersion %s, was %s", after.ResourceVersion, pod.ResourceVersion)
	}

	// Its record, written and removed as the enforcer does.
	const value = `{"by":"placement-scheduler/placement-scheduler-enforcer","since":{"node-affinity":"2026-01-01T00:00:00Z"}}`
	if err := patch(ctx, types.MergePatchType, record(value), false); err != nil {
		t.Fatalf("the enforcer's record refused: %v", err)
	}
	got, err := env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[enforcer.RecordAnnotation] != value || got.Annotations["example.com/kept"] != "yes" || len(got.Annotations) != 2 {
		t.Errorf("annotations after the record %v, want the record beside example.com/kept", got.Annotations)
	}
	if err := patch(ctx, types.MergePatchType, record(""), false); err != nil {
		t.Fatalf("removing the enforcer's record refused: %v", err)
	}
	got, err = env.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations[enforcer.RecordAnnotation]; ok {
		t.Errorf("the record is still on the pod: %v", got.Annotations)
	}

	// Rights the shipped roles do not hold: RBAC refuses them.
	other := testutil.MakePod(ns, "other").SchedulerName("nobody").Obj()
	create := func(ctx context.Context) error {
		_, err := pods.Create(ctx, other, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	status := `{"status":{"conditions":[{"type":"example.com/Hold","status":"True"}]}}`
	writes := map[string]func(context.Context) error{
		"create": create,
		"delete": func(ctx context.Context) error {
			return pods.Delete(ctx, pod.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
		"pod status": func(ctx context.Context) error {
			_, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(status), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
			return err
		},
	}
	for what, write := range writes {
		if err := write(ctx); !apierrors.IsForbidden(err) || strings.Contains(err.Error(), policyRefusal) {
			t.Errorf("%s: the enforcer's request answered %v, want RBAC's refusal", what, err)
		}
	}
	// The same with RBAC allowing them (a role granted by mistake): the
	// policy refuses them.
	extra := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "too-much", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"create", "delete", "patch"}}}}
	env.Create(t, extra, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "too-much", Namespace: ns},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: framework.EnforcerName, Namespace: framework.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: extra.Name}})
	for what, write := range writes {
		env.Poll(t, what+" by the enforcer refused by the policy once RBAC allows it", func(ctx context.Context) (bool, error) {
			err := write(ctx)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), policyRefusal), nil
		})
	}

	// Its one other right on pods.
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}, DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}}}
	if err := pods.EvictV1(ctx, ev); err != nil {
		t.Errorf("the enforcer's eviction refused: %v", err)
	}
}

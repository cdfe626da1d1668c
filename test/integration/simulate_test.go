package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// simulateResult is the part of `kubectl placement simulate -o json` these
// tests read.
type simulateResult struct {
	Placed, Pending, Preempting int
	Replicas                    []struct {
		Pod, Node, From, Reason string
	}
}

// TestSimulateOnlyReads: `kubectl placement simulate` on a live cluster,
// as a user who may get and list everything and nothing else, places a
// Deployment's replicas with their hostname anti-affinity and a drained
// node's pod; bad input is one line and exit 1; the cluster is unchanged
// afterwards (no node cordoned, no pod evicted or created).
func TestSimulateOnlyReads(t *testing.T) {
	ns := env.NewNamespace(t, nil)
	var names []string
	for _, n := range []string{"n1", "n2", "n3"} {
		node := framework.SchedulableNode(ns, n).Label("pool", ns).Obj()
		env.CreateNodes(t, node)
		names = append(names, node.Name)
	}
	yes := true
	running := testutil.MakePod(ns, "web-1").Placement().Label("app", "web").NodeName(names[0]).Request("100m", "64Mi").Obj()
	running.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-web", Controller: &yes}}
	created := env.CreatePod(t, running)
	reader := getListReader(t, ns)

	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy.yaml")
	if err := os.WriteFile(deploy, []byte(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: %[1]s}
spec:
  replicas: 4
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      schedulerName: placement-scheduler
      nodeSelector: {pool: %[1]s}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: api}}
            topologyKey: kubernetes.io/hostname
      containers: [{name: c, image: registry.k8s.io/pause:3.10}]
`, ns)), 0o644); err != nil {
		t.Fatal(err)
	}

	r := simulateJSON(t, "simulate", "-f", deploy, "--kubeconfig", reader)
	if r.Placed != 3 || r.Pending != 1 || r.Preempting != 0 {
		t.Errorf("workload: placed %d pending %d preempting %d, want 3, 1, 0 (one replica per node of the pool)", r.Placed, r.Pending, r.Preempting)
	}
	seen := map[string]bool{}
	for _, rep := range r.Replicas {
		if rep.Node != "" && seen[rep.Node] {
			t.Errorf("two replicas on %s despite their anti-affinity", rep.Node)
		}
		seen[rep.Node] = true
	}

	r = simulateJSON(t, "simulate", "--drain", names[0], "-n", ns, "--kubeconfig", reader)
	if r.Placed != 1 || len(r.Replicas) != 1 || r.Replicas[0].From != names[0] || r.Replicas[0].Node == names[0] || r.Replicas[0].Node == "" {
		t.Errorf("drain of %s: %+v, want web-1 placed on another node", names[0], r)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"drain of a node that does not exist", []string{"--drain", ns + "-absent"}, "--drain " + ns + "-absent: no such node"},
		{"manifest with no pod template", []string{"-f", writeFile(t, dir, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")}, "kind Service has no pod template"},
		{"unknown kind", []string{"-f", writeFile(t, dir, "widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")}, "Widget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := kubectlPlacement(t, append(append([]string{"simulate"}, tc.args...), "-n", ns, "--kubeconfig", reader)...)
			if err == nil {
				t.Fatalf("exit 0; stdout:\n%s", out)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr %q: want one line mentioning %q", errOut, tc.want)
			}
		})
	}

	ctx := context.Background()
	for _, name := range names {
		n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil || n.Spec.Unschedulable {
			t.Errorf("node %s after simulate: unschedulable %v, err %v: want it untouched", name, n.Spec.Unschedulable, err)
		}
	}
	pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].DeletionTimestamp != nil || pods.Items[0].UID != created.UID {
		t.Errorf("pods after simulate: %d (err %v), want web-1 alone and untouched", len(pods.Items), err)
	}
	if d, err := env.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err != nil || len(d.Items) != 0 {
		t.Errorf("deployments after simulate: %v (err %v), want none", d, err)
	}
}

func simulateJSON(t *testing.T, args ...string) simulateResult {
	t.Helper()
	out, errOut, err := kubectlPlacement(t, append(args, "-o", "json")...)
	if err != nil {
		t.Fatalf("kubectl placement %v: %v\nstderr: %s", args, err, errOut)
	}
	var r simulateResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("kubectl placement %v: output is not JSON: %v\n%s", args, err, out)
	}
	return r
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// getListReader is a kubeconfig for a ServiceAccount that may get and
// list every resource in every namespace, and do nothing else: any write
// would be refused.
func getListReader(t *testing.T, ns string) string {
	t.Helper()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "simulator"}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-get-list"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-get-list"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	env.Create(t, sa, role, binding)
	user := "system:serviceaccount:" + ns + ":" + sa.Name
	env.Poll(t, "RBAC to let "+sa.Name+" list pods everywhere", func(ctx context.Context) (bool, error) {
		sar, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}},
		}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	// The role allows no write: the apiserver says so for the verbs a
	// drain or a rollout would need.
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: ns},
		{Verb: "patch", Resource: "nodes"},
		{Verb: "create", Group: "apps", Resource: "deployments", Namespace: ns},
	} {
		sar, err := env.Client.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &ra},
		}, metav1.CreateOptions{})
		if err != nil || sar.Status.Allowed {
			t.Fatalf("%s %s/%s allowed for the reader (err %v): the test would not prove simulate only reads", ra.Verb, ra.Resource, ra.Subresource, err)
		}
	}
	return env.ServiceAccountKubeconfig(t, ns, sa.Name)
}

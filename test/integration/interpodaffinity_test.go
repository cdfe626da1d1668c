package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

const hostnameKey = v1.LabelHostname

// nodesByName fetches the nodes of this test, so assertions can read labels.
func nodeLabel(t *testing.T, node, key string) string {
	t.Helper()
	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels[key]
}

// The documentation's example: required affinity to security=S1 pods in the
// same zone, preferred anti-affinity to security=S2 pods in the same zone.
func TestZoneAffinityWithPreferredAntiAffinity(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	zoneV1 := framework.SchedulableNode(ns, "v1").Label(zoneKey, "V").Obj()
	zoneV2 := framework.SchedulableNode(ns, "v2").Label(zoneKey, "V").Obj()
	zoneW := framework.SchedulableNode(ns, "w1").Label(zoneKey, "W").Obj()
	zoneX := framework.SchedulableNode(ns, "x1").Label(zoneKey, "X").Obj()
	env.CreateNodes(t, zoneV1, zoneV2, zoneW, zoneX)
	// Already-running pods, bound by nodeName: S1 in zones V and W, S2 in W.
	env.CreatePod(t, tu.MakePod(ns, "s1-v").Label("security", "S1").NodeName(zoneV1.Name).Obj())
	env.CreatePod(t, tu.MakePod(ns, "s1-w").Label("security", "S1").NodeName(zoneW.Name).Obj())
	env.CreatePod(t, tu.MakePod(ns, "s2-w").Label("security", "S2").NodeName(zoneW.Name).Obj())

	s1 := tu.Selector(nil, tu.SelectorExpr("security", metav1.LabelSelectorOpIn, "S1"))
	s2 := tu.Selector(nil, tu.SelectorExpr("security", metav1.LabelSelectorOpIn, "S2"))
	for i := range 3 {
		name := fmt.Sprintf("with-pod-affinity-%d", i)
		env.CreatePod(t, testutil.MakePod(ns, name).Placement().
			RequiredPodAffinity(tu.AffinityTerm(zoneKey, s1)).
			PreferredPodAntiAffinity(tu.Weighted(100, tu.AffinityTerm(zoneKey, s2))).Obj())
		node := env.WaitForBound(t, ns, name)
		if z := nodeLabel(t, node, zoneKey); z != "V" {
			t.Errorf("%s on %s in zone %q, want zone V (S1 there, no S2)", name, node, z)
		}
	}
}

// The documentation's redis-cache / web-server pair: three caches spread by
// anti-affinity, three web servers each next to a cache and apart from each
// other. Every node ends with one of each.
func TestRedisCacheAndWebServerColocate(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	nodes := []*v1.Node{framework.SchedulableNode(ns, "n1").Obj(), framework.SchedulableNode(ns, "n2").Obj(), framework.SchedulableNode(ns, "n3").Obj()}
	env.CreateNodes(t, nodes...)
	store := tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn, "store"))
	webStore := tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn, "web-store"))

	for i := range 3 {
		env.CreatePod(t, testutil.MakePod(ns, fmt.Sprintf("redis-cache-%d", i)).Placement().Label("app", "store").
			RequiredPodAntiAffinity(tu.AffinityTerm(hostnameKey, store)).Obj())
	}
	redisOn := map[string]int{}
	for i := range 3 {
		redisOn[env.WaitForBound(t, ns, fmt.Sprintf("redis-cache-%d", i))]++
	}
	for i := range 3 {
		env.CreatePod(t, testutil.MakePod(ns, fmt.Sprintf("web-server-%d", i)).Placement().Label("app", "web-store").
			RequiredPodAntiAffinity(tu.AffinityTerm(hostnameKey, webStore)).
			RequiredPodAffinity(tu.AffinityTerm(hostnameKey, store)).Obj())
	}
	webOn := map[string]int{}
	for i := range 3 {
		webOn[env.WaitForBound(t, ns, fmt.Sprintf("web-server-%d", i))]++
	}
	for _, n := range nodes {
		if redisOn[n.Name] != 1 || webOn[n.Name] != 1 {
			t.Errorf("node %s has %d redis-cache and %d web-server pods, want 1 and 1", n.Name, redisOn[n.Name], webOn[n.Name])
		}
	}
}

// The documentation's tenant example: matchLabelKeys keeps a tenant's pods in
// one node pool, mismatchLabelKeys keeps other tenants out of it. The keys
// only work because the apiserver merges them into the selector on create.
func TestTenantPoolsWithMatchAndMismatchLabelKeys(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	const poolKey = "node-pool"
	env.CreateNodes(t,
		framework.SchedulableNode(ns, "a1").Label(poolKey, "a").Obj(), framework.SchedulableNode(ns, "a2").Label(poolKey, "a").Obj(),
		framework.SchedulableNode(ns, "b1").Label(poolKey, "b").Obj(), framework.SchedulableNode(ns, "b2").Label(poolKey, "b").Obj())
	// A matchLabelKeys key may not also appear in the selector, so the
	// affinity selector is {} (everything) before the merge.
	hasTenant := tu.Selector(nil, tu.SelectorExpr("tenant", metav1.LabelSelectorOpExists))
	tenantPod := func(tenant string, i int) *v1.Pod {
		return testutil.MakePod(ns, fmt.Sprintf("%s-%d", tenant, i)).Placement().Label("tenant", tenant).
			RequiredPodAffinity(tu.WithMatchLabelKeys(tu.AffinityTerm(poolKey, tu.Selector(nil)), "tenant")).
			RequiredPodAntiAffinity(tu.WithMismatchLabelKeys(tu.AffinityTerm(poolKey, hasTenant), "tenant")).Obj()
	}

	stored := env.CreatePod(t, tenantPod("t1", 0))
	// Proof the real apiserver merged the keys: the stored selectors carry
	// tenant In [t1] and tenant NotIn [t1].
	aff := stored.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector
	anti := stored.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector
	if !hasExpr(aff, "tenant", metav1.LabelSelectorOpIn, "t1") || !hasExpr(anti, "tenant", metav1.LabelSelectorOpNotIn, "t1") {
		t.Fatalf("apiserver did not merge matchLabelKeys/mismatchLabelKeys: affinity %v, anti-affinity %v", aff, anti)
	}
	poolOf := func(name string) string { return nodeLabel(t, env.WaitForBound(t, ns, name), poolKey) }
	t1Pool := poolOf("t1-0")
	for i := 1; i < 3; i++ {
		env.CreatePod(t, tenantPod("t1", i))
		if p := poolOf(fmt.Sprintf("t1-%d", i)); p != t1Pool {
			t.Errorf("t1-%d in pool %q, want tenant t1's pool %q", i, p, t1Pool)
		}
	}
	for i := range 3 {
		env.CreatePod(t, tenantPod("t2", i))
		if p := poolOf(fmt.Sprintf("t2-%d", i)); p == t1Pool {
			t.Errorf("t2-%d in pool %q, which tenant t1 holds", i, p)
		}
	}
}

func hasExpr(sel *metav1.LabelSelector, key string, op metav1.LabelSelectorOperator, value string) bool {
	if sel == nil {
		return false
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == key && e.Operator == op && len(e.Values) == 1 && e.Values[0] == value {
			return true
		}
	}
	return false
}

// A Deployment-style rollout: one pod per node by anti-affinity, but with
// matchLabelKeys [pod-template-hash] the old revision's pods do not block the
// new revision's. The same term without the key is blocked, which shows the
// old pods really do fill every node.
func TestRolloutWithPodTemplateHash(t *testing.T) {
	env.SharedScheduler(t)
	ns := env.NewNamespace(t, nil)
	nodes := []*v1.Node{framework.SchedulableNode(ns, "n1").Obj(), framework.SchedulableNode(ns, "n2").Obj(), framework.SchedulableNode(ns, "n3").Obj()}
	env.CreateNodes(t, nodes...)
	web := tu.Selector(map[string]string{"app": "web"})
	revision := func(hash string, i int, keys ...string) *v1.Pod {
		return testutil.MakePod(ns, fmt.Sprintf("web-%s-%d", hash, i)).Placement().
			Labels(map[string]string{"app": "web", "pod-template-hash": hash}).
			RequiredPodAntiAffinity(tu.WithMatchLabelKeys(tu.AffinityTerm(hostnameKey, web), keys...)).Obj()
	}
	for i := range 3 {
		env.CreatePod(t, revision("old111", i, "pod-template-hash"))
	}
	for i := range 3 {
		env.WaitForBound(t, ns, fmt.Sprintf("web-old111-%d", i))
	}
	newOn := map[string]bool{}
	for i := range 3 {
		env.CreatePod(t, revision("new222", i, "pod-template-hash"))
	}
	for i := range 3 {
		node := env.WaitForBound(t, ns, fmt.Sprintf("web-new222-%d", i))
		if newOn[node] {
			t.Errorf("two new-revision pods on %s: anti-affinity within the revision broken", node)
		}
		newOn[node] = true
	}

	env.CreatePod(t, revision("nokey", 0))
	msg := env.WaitForUnschedulable(t, ns, "web-nokey-0")
	if !strings.Contains(msg, "didn't match pod anti-affinity rules") {
		t.Errorf("pod without matchLabelKeys: message %q, want the anti-affinity reason", msg)
	}
}

// A namespaceSelector term finds its pods in other namespaces by the
// namespaces' labels.
func TestNamespaceSelectorAcrossNamespaces(t *testing.T) {
	env.SharedScheduler(t)
	blue := env.NewNamespace(t, map[string]string{"team": "blue"})
	red := env.NewNamespace(t, map[string]string{"team": "red"})
	ns := env.NewNamespace(t, nil)
	nBlue := framework.SchedulableNode(ns, "blue").Obj()
	nRed := framework.SchedulableNode(ns, "red").Obj()
	env.CreateNodes(t, framework.SchedulableNode(ns, "empty").Obj(), nBlue, nRed)
	env.CreatePod(t, tu.MakePod(blue, "db").Label("app", "db").NodeName(nBlue.Name).Obj())
	env.CreatePod(t, tu.MakePod(red, "db").Label("app", "db").NodeName(nRed.Name).Obj())

	db := tu.Selector(map[string]string{"app": "db"})
	env.CreatePod(t, testutil.MakePod(ns, "near-blue-db").Placement().
		RequiredPodAffinity(tu.WithNamespaceSelector(tu.AffinityTerm(hostnameKey, db), tu.Selector(map[string]string{"team": "blue"}))).Obj())
	if got := env.WaitForBound(t, ns, "near-blue-db"); got != nBlue.Name {
		t.Errorf("bound to %s, want %s (the node of the db pod in a team=blue namespace)", got, nBlue.Name)
	}
	// Without a namespaceSelector the term looks only in the pod's own
	// namespace, where no db runs: the first-pod rule does not apply because
	// the pod does not match its own selector.
	env.CreatePod(t, testutil.MakePod(ns, "own-namespace-only").Placement().RequiredPodAffinity(tu.AffinityTerm(hostnameKey, db)).Obj())
	if msg := env.WaitForUnschedulable(t, ns, "own-namespace-only"); !strings.Contains(msg, "didn't match pod affinity rules") {
		t.Errorf("message %q, want the affinity reason", msg)
	}
}

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

const hostnameKey = v1.LabelHostname

// nodesByName fetches the nodes of this test, so assertions can read labels.
func nodeLabel(t *testing.T, node, key string) string {
	t.Helper()
	n, err := env.client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Labels[key]
}

// The documentation's example: required affinity to security=S1 pods in the
// same zone, preferred anti-affinity to security=S2 pods in the same zone.
func TestZoneAffinityWithPreferredAntiAffinity(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	zoneV1 := schedulableNode(ns, "v1").Label(zoneKey, "V").Obj()
	zoneV2 := schedulableNode(ns, "v2").Label(zoneKey, "V").Obj()
	zoneW := schedulableNode(ns, "w1").Label(zoneKey, "W").Obj()
	zoneX := schedulableNode(ns, "x1").Label(zoneKey, "X").Obj()
	createNodes(t, zoneV1, zoneV2, zoneW, zoneX)
	// Already-running pods, bound by nodeName: S1 in zones V and W, S2 in W.
	createPod(t, tu.MakePod(ns, "s1-v").Label("security", "S1").NodeName(zoneV1.Name).Obj())
	createPod(t, tu.MakePod(ns, "s1-w").Label("security", "S1").NodeName(zoneW.Name).Obj())
	createPod(t, tu.MakePod(ns, "s2-w").Label("security", "S2").NodeName(zoneW.Name).Obj())

	s1 := tu.Selector(nil, tu.SelectorExpr("security", metav1.LabelSelectorOpIn, "S1"))
	s2 := tu.Selector(nil, tu.SelectorExpr("security", metav1.LabelSelectorOpIn, "S2"))
	for i := range 3 {
		name := fmt.Sprintf("with-pod-affinity-%d", i)
		createPod(t, placementPod(ns, name).
			RequiredPodAffinity(tu.AffinityTerm(zoneKey, s1)).
			PreferredPodAntiAffinity(tu.Weighted(100, tu.AffinityTerm(zoneKey, s2))).Obj())
		node := waitForBound(t, ns, name)
		if z := nodeLabel(t, node, zoneKey); z != "V" {
			t.Errorf("%s on %s in zone %q, want zone V (S1 there, no S2)", name, node, z)
		}
	}
}

// The documentation's redis-cache / web-server pair: three caches spread by
// anti-affinity, three web servers each next to a cache and apart from each
// other. Every node ends with one of each.
func TestRedisCacheAndWebServerColocate(t *testing.T) {
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	nodes := []*v1.Node{schedulableNode(ns, "n1").Obj(), schedulableNode(ns, "n2").Obj(), schedulableNode(ns, "n3").Obj()}
	createNodes(t, nodes...)
	store := tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn, "store"))
	webStore := tu.Selector(nil, tu.SelectorExpr("app", metav1.LabelSelectorOpIn, "web-store"))

	for i := range 3 {
		createPod(t, placementPod(ns, fmt.Sprintf("redis-cache-%d", i)).Label("app", "store").
			RequiredPodAntiAffinity(tu.AffinityTerm(hostnameKey, store)).Obj())
	}
	redisOn := map[string]int{}
	for i := range 3 {
		redisOn[waitForBound(t, ns, fmt.Sprintf("redis-cache-%d", i))]++
	}
	for i := range 3 {
		createPod(t, placementPod(ns, fmt.Sprintf("web-server-%d", i)).Label("app", "web-store").
			RequiredPodAntiAffinity(tu.AffinityTerm(hostnameKey, webStore)).
			RequiredPodAffinity(tu.AffinityTerm(hostnameKey, store)).Obj())
	}
	webOn := map[string]int{}
	for i := range 3 {
		webOn[waitForBound(t, ns, fmt.Sprintf("web-server-%d", i))]++
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
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	const poolKey = "node-pool"
	createNodes(t,
		schedulableNode(ns, "a1").Label(poolKey, "a").Obj(), schedulableNode(ns, "a2").Label(poolKey, "a").Obj(),
		schedulableNode(ns, "b1").Label(poolKey, "b").Obj(), schedulableNode(ns, "b2").Label(poolKey, "b").Obj())
	// A matchLabelKeys key may not also appear in the selector, so the
	// affinity selector is {} (everything) before the merge.
	hasTenant := tu.Selector(nil, tu.SelectorExpr("tenant", metav1.LabelSelectorOpExists))
	tenantPod := func(tenant string, i int) *v1.Pod {
		return placementPod(ns, fmt.Sprintf("%s-%d", tenant, i)).Label("tenant", tenant).
			RequiredPodAffinity(tu.WithMatchLabelKeys(tu.AffinityTerm(poolKey, tu.Selector(nil)), "tenant")).
			RequiredPodAntiAffinity(tu.WithMismatchLabelKeys(tu.AffinityTerm(poolKey, hasTenant), "tenant")).Obj()
	}

	stored := createPod(t, tenantPod("t1", 0))
	// Proof the real apiserver merged the keys: the stored selectors carry
	// tenant In [t1] and tenant NotIn [t1].
	aff := stored.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector
	anti := stored.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector
	if !hasExpr(aff, "tenant", metav1.LabelSelectorOpIn, "t1") || !hasExpr(anti, "tenant", metav1.LabelSelectorOpNotIn, "t1") {
		t.Fatalf("apiserver did not merge matchLabelKeys/mismatchLabelKeys: affinity %v, anti-affinity %v", aff, anti)
	}
	poolOf := func(name string) string { return nodeLabel(t, waitForBound(t, ns, name), poolKey) }
	t1Pool := poolOf("t1-0")
	for i := 1; i < 3; i++ {
		createPod(t, tenantPod("t1", i))
		if p := poolOf(fmt.Sprintf("t1-%d", i)); p != t1Pool {
			t.Errorf("t1-%d in pool %q, want tenant t1's pool %q", i, p, t1Pool)
		}
	}
	for i := range 3 {
		createPod(t, tenantPod("t2", i))
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
	sharedScheduler(t)
	ns := newNamespace(t, nil)
	nodes := []*v1.Node{schedulableNode(ns, "n1").Obj(), schedulableNode(ns, "n2").Obj(), schedulableNode(ns, "n3").Obj()}
	createNodes(t, nodes...)
	web := tu.Selector(map[string]string{"app": "web"})
	revision := func(hash string, i int, keys ...string) *v1.Pod {
		return placementPod(ns, fmt.Sprintf("web-%s-%d", hash, i)).
			Labels(map[string]string{"app": "web", "pod-template-hash": hash}).
			RequiredPodAntiAffinity(tu.WithMatchLabelKeys(tu.AffinityTerm(hostnameKey, web), keys...)).Obj()
	}
	for i := range 3 {
		createPod(t, revision("old111", i, "pod-template-hash"))
	}
	for i := range 3 {
		waitForBound(t, ns, fmt.Sprintf("web-old111-%d", i))
	}
	newOn := map[string]bool{}
	for i := range 3 {
		createPod(t, revision("new222", i, "pod-template-hash"))
	}
	for i := range 3 {
		node := waitForBound(t, ns, fmt.Sprintf("web-new222-%d", i))
		if newOn[node] {
			t.Errorf("two new-revision pods on %s: anti-affinity within the revision broken", node)
		}
		newOn[node] = true
	}

	createPod(t, revision("nokey", 0))
	msg := waitForUnschedulable(t, ns, "web-nokey-0")
	if !strings.Contains(msg, "didn't match pod anti-affinity rules") {
		t.Errorf("pod without matchLabelKeys: message %q, want the anti-affinity reason", msg)
	}
}

// A namespaceSelector term finds its pods in other namespaces by the
// namespaces' labels.
func TestNamespaceSelectorAcrossNamespaces(t *testing.T) {
	sharedScheduler(t)
	blue := newNamespace(t, map[string]string{"team": "blue"})
	red := newNamespace(t, map[string]string{"team": "red"})
	ns := newNamespace(t, nil)
	nBlue := schedulableNode(ns, "blue").Obj()
	nRed := schedulableNode(ns, "red").Obj()
	createNodes(t, schedulableNode(ns, "empty").Obj(), nBlue, nRed)
	createPod(t, tu.MakePod(blue, "db").Label("app", "db").NodeName(nBlue.Name).Obj())
	createPod(t, tu.MakePod(red, "db").Label("app", "db").NodeName(nRed.Name).Obj())

	db := tu.Selector(map[string]string{"app": "db"})
	createPod(t, placementPod(ns, "near-blue-db").
		RequiredPodAffinity(tu.WithNamespaceSelector(tu.AffinityTerm(hostnameKey, db), tu.Selector(map[string]string{"team": "blue"}))).Obj())
	if got := waitForBound(t, ns, "near-blue-db"); got != nBlue.Name {
		t.Errorf("bound to %s, want %s (the node of the db pod in a team=blue namespace)", got, nBlue.Name)
	}
	// Without a namespaceSelector the term looks only in the pod's own
	// namespace, where no db runs: the first-pod rule does not apply because
	// the pod does not match its own selector.
	createPod(t, placementPod(ns, "own-namespace-only").RequiredPodAffinity(tu.AffinityTerm(hostnameKey, db)).Obj())
	if msg := waitForUnschedulable(t, ns, "own-namespace-only"); !strings.Contains(msg, "didn't match pod affinity rules") {
		t.Errorf("message %q, want the affinity reason", msg)
	}
}

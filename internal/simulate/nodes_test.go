package simulate

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func daemonSet(namespace, name, cpu string, nodeSelector map[string]string) *appsv1.DaemonSet {
	tmpl := podTemplate(name)
	tmpl.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resourceMust(cpu)
	tmpl.Spec.NodeSelector = nodeSelector
	return &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID("ds-" + name)},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl}}
}

// A copy of a cordoned, NotReady node under disk pressure is Ready and
// schedulable: the cordon and the state taints go, the operator's taint
// stays; each copy first gets the pods of the DaemonSets that select it
// (not the one that selects another pool, nor the one that does not
// tolerate the operator's taint), and their requests leave less room for
// what is placed.
func TestAddNodesLikeACordonedNode(t *testing.T) {
	sick := tu.MakeNode("db1").Label("pool", "db").Label(v1.LabelTopologyZone, "z1").Capacity("2", "8Gi", 110).
		Taint(v1.TaintNodeUnschedulable, "", v1.TaintEffectNoSchedule).
		Taint(v1.TaintNodeNotReady, "", v1.TaintEffectNoExecute).
		Taint(v1.TaintNodeDiskPressure, "", v1.TaintEffectNoSchedule).
		Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", v1.TaintEffectNoSchedule).
		Taint("dedicated", "db", v1.TaintEffectNoSchedule).Obj()
	sick.Spec.Unschedulable = true
	sick.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}, {Type: v1.NodeDiskPressure, Status: v1.ConditionTrue}}
	proxy := daemonSet("kube-system", "kube-proxy", "500m", nil)
	proxy.Spec.Template.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	exporter := daemonSet("monitoring", "node-exporter", "500m", map[string]string{"pool": "db"})
	exporter.Spec.Template.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	gpu := daemonSet("kube-system", "gpu-driver", "100m", map[string]string{"pool": "gpu"})
	plain := daemonSet("kube-system", "logs", "100m", nil) // does not tolerate dedicated=db
	c := &explain.Cluster{Namespaces: append(ns(), tu.MakeNamespace("kube-system", nil), tu.MakeNamespace("monitoring", nil)),
		Nodes: []*v1.Node{sick}, Others: []runtime.Object{proxy, exporter, gpu, plain}}
	out, done, err := (&Edits{AddNodes: 2, Like: "db1"}).Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	want := "added 2 node(s) like db1: db1-sim-1, db1-sim-2 (cleared the cordon, node.kubernetes.io/unschedulable:NoSchedule, " +
		"node.kubernetes.io/not-ready:NoExecute, node.kubernetes.io/disk-pressure:NoSchedule, node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule; " +
		"kept taint(s) dedicated=db:NoSchedule; 2 DaemonSet pod(s) on each: kube-system/kube-proxy, monitoring/node-exporter)"
	if len(done) != 1 || done[0] != want {
		t.Errorf("edit line\n%q, want\n%q", done, want)
	}
	cp := out.Nodes[1]
	if cp.Spec.Unschedulable || !reflect.DeepEqual(cp.Spec.Taints, []v1.Taint{{Key: "dedicated", Value: "db", Effect: v1.TaintEffectNoSchedule}}) {
		t.Errorf("copy spec %+v: want schedulable with dedicated=db only", cp.Spec)
	}
	for _, cond := range cp.Status.Conditions {
		healthy := v1.ConditionFalse
		if cond.Type == v1.NodeReady {
			healthy = v1.ConditionTrue
		}
		if cond.Status != healthy {
			t.Errorf("copy condition %s=%s", cond.Type, cond.Status)
		}
	}
	bound := map[string]string{}
	for _, p := range out.Pods {
		bound[p.Namespace+"/"+p.Name] = p.Spec.NodeName
	}
	wantBound := map[string]string{"kube-system/kube-proxy-db1-sim-1": "db1-sim-1", "monitoring/node-exporter-db1-sim-1": "db1-sim-1",
		"kube-system/kube-proxy-db1-sim-2": "db1-sim-2", "monitoring/node-exporter-db1-sim-2": "db1-sim-2"}
	if !reflect.DeepEqual(bound, wantBound) {
		t.Errorf("bound pods %v, want %v", bound, wantBound)
	}
	if len(c.Pods) != 0 || !sick.Spec.Unschedulable || len(sick.Spec.Taints) != 5 {
		t.Error("Apply changed its input")
	}

	// Each copy has 2 CPUs, 1 held by its DaemonSet pods: of six replicas
	// of 400m tolerating dedicated=db, two fit on each copy; none on the
	// cordoned node.
	tmpl := podTemplate("db")
	tmpl.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resourceMust("400m")
	tmpl.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "db", Effect: v1.TaintEffectNoSchedule}}
	res := run(t, out, deployment("db", 6, tmpl))
	nodes := map[string]int{}
	for _, r := range res.Replicas {
		nodes[r.Node]++
	}
	if res.Placed != 4 || nodes["db1-sim-1"] != 2 || nodes["db1-sim-2"] != 2 {
		t.Errorf("placed %d on %v: want 2 on each copy, 2 Pending", res.Placed, nodes)
	}
	if len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0].Reason, "Insufficient cpu") {
		t.Errorf("reasons %+v: want the copies full (cpu)", res.Reasons)
	}

	// A copy a later edit relabels out of the pool loses the exporter; a
	// copy removed gets nothing.
	_, done, err = (&Edits{AddNodes: 3, Like: "db1", Labels: []string{"db1-sim-2:pool=web"}, Remove: []string{"db1-sim-3"}}).Apply(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done[0], "DaemonSet pods on db1-sim-1: kube-system/kube-proxy, monitoring/node-exporter; DaemonSet pods on db1-sim-2: kube-system/kube-proxy; DaemonSet pods on db1-sim-3: none") {
		t.Errorf("edit line %q: want the DaemonSet pods per copy", done[0])
	}
}

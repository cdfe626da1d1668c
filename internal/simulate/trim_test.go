package simulate

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Trimming (explain.Trim, what both sources of a cluster go through) keeps
// every answer: on a cluster as the apiserver serves it (managedFields,
// last-applied annotations, full kubelet statuses) whose answers hang on
// the status fields Trim keeps, simulate gives the same result untrimmed
// and trimmed, and that result is the one each pool's rule forces.
func TestTrimKeepsAnswers(t *testing.T) {
	untrimmed, workloads := richCluster()
	var objs []runtime.Object
	for _, o := range clusterObjects(untrimmed) {
		o = o.DeepCopyObject()
		explain.Trim(o)
		objs = append(objs, o)
	}
	trimmed := explain.ClusterFrom(objs)
	before, after := size(t, clusterObjects(untrimmed)), size(t, clusterObjects(trimmed))
	if after*2 > before {
		t.Errorf("trimmed cluster is %d bytes as JSON, untrimmed %d: want less than half", after, before)
	}
	for _, n := range trimmed.Nodes {
		if n.ManagedFields != nil || n.Annotations[v1.LastAppliedConfigAnnotation] != "" || n.Status.Conditions != nil {
			t.Errorf("node %s not trimmed: %+v", n.Name, n.ObjectMeta)
		}
	}

	want := run(t, untrimmed, workloads...)
	got := run(t, trimmed, workloads...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("trimmed cluster gives another result:\n got  %s\n want %s", js(t, got), js(t, want))
	}
	// Each pool's node, as its rule forces it (so the comparison above is
	// about answers that hang on the kept fields).
	forced := map[string]string{
		"default/rsz-0": "rsz-b", // rsz-a's pod was resized down, its allocation is still 3.5 cpu
		"default/inf-0": "inf-a", // inf-a's pod asked for 3.5 cpu, an infeasible resize: it holds its allocation
		"default/nom-0": "nom-b", // nom-a is nominated for a pending pod of higher priority
		"default/phs-0": "phs-a", // phs-a's pod has Succeeded: it holds nothing
		"default/pre-0": "pre-b", // both nodes need one victim: the one started last goes
	}
	for _, r := range want.Replicas {
		if n, ok := forced[r.Pod]; ok && r.Node != n {
			t.Errorf("%s on %q, want %s: %+v", r.Pod, r.Node, n, r)
		}
	}

	// explain, every filter on every node and every score, the same too.
	// ImageLocality is asked here: the placer's snapshot, in a mutation
	// session, counts no node as holding an image on this line.
	replicas, _, err := Workloads(workloads, "default", untrimmed)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replicas {
		want, err := explain.Explain(context.Background(), r.Pod, untrimmed, shipped(t))
		if err != nil {
			t.Fatal(err)
		}
		got, err := explain.Explain(context.Background(), r.Pod, trimmed, shipped(t))
		if err != nil {
			t.Fatal(err)
		}
		if js(t, got) != js(t, want) {
			t.Errorf("explaining %s on the trimmed cluster:\n got  %s\n want %s", r.Pod.Name, js(t, got), js(t, want))
		}
		if r.Pod.Name == "img-0" && want.Selected != "img-b" {
			t.Errorf("img-0 explained onto %q, want img-b, the node holding its image", want.Selected)
		}
	}
}

// richCluster is six pools of two nodes (selected by the label pool), each
// with one rule that needs a status field Trim keeps, the noise an
// apiserver serves on every object, and one single-replica Deployment per
// pool.
func richCluster() (*explain.Cluster, []runtime.Object) {
	c := &explain.Cluster{Namespaces: ns()}
	node := func(name, pool string) *v1.Node {
		n := tu.MakeNode(name).Label(v1.LabelTopologyZone, "z1").Label("pool", pool).Capacity("4", "8Gi", 110).Ready().Obj()
		c.Nodes = append(c.Nodes, n)
		return n
	}
	pod := func(name, node, cpu string) *v1.Pod {
		p := tu.MakePod("default", name).UID(name).Label("app", name).NodeName(node).Request(cpu, "100Mi").Obj()
		p.Status.Phase = v1.PodRunning
		c.Pods = append(c.Pods, p)
		return p
	}
	at := func(month time.Month) *metav1.Time {
		return &metav1.Time{Time: time.Date(2026, month, 1, 0, 0, 0, 0, time.UTC)}
	}
	var workloads []runtime.Object
	workload := func(pool, cpu string, priority int32) *v1.PodTemplateSpec {
		tmpl := podTemplate(pool)
		tmpl.Spec.NodeSelector = map[string]string{"pool": pool}
		tmpl.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resourceMust(cpu)
		tmpl.Spec.Priority = int32p(priority)
		d := deployment(pool, 1, tmpl)
		workloads = append(workloads, d)
		return &d.Spec.Template
	}

	node("img-a", "img")
	node("img-b", "img").Status.Images = []v1.ContainerImage{{Names: []string{"registry.example/img:1"}, SizeBytes: 900 << 20}}
	workload("img", "1", 0).Spec.Containers[0].Image = "registry.example/img:1"

	node("rsz-a", "rsz")
	node("rsz-b", "rsz")
	resized := pod("resized", "rsz-a", "100m")
	// A kubelet reports both what it allocated and what is actuated; every
	// line reads the status only when the actuated resources are there.
	resized.Status.ContainerStatuses = []v1.ContainerStatus{{Name: resized.Spec.Containers[0].Name,
		AllocatedResources: v1.ResourceList{v1.ResourceCPU: resourceMust("3500m")},
		Resources:          &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resourceMust("3500m")}}}}
	resized.Status.Conditions = append(resized.Status.Conditions, v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue})
	pod("small-rsz", "rsz-b", "500m")
	workload("rsz", "1", 0)

	node("inf-a", "inf")
	node("inf-b", "inf")
	upsized := pod("upsized", "inf-a", "3500m")
	upsized.Status.ContainerStatuses = []v1.ContainerStatus{{Name: upsized.Spec.Containers[0].Name,
		AllocatedResources: v1.ResourceList{v1.ResourceCPU: resourceMust("100m")},
		Resources:          &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resourceMust("100m")}}}}
	upsized.Status.Conditions = append(upsized.Status.Conditions, v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonInfeasible})
	pod("small-inf", "inf-b", "500m")
	workload("inf", "1", 0)

	node("nom-a", "nom")
	node("nom-b", "nom")
	waiting := pod("waiting", "", "3500m")
	waiting.Status.Phase = v1.PodPending
	waiting.Status.NominatedNodeName = "nom-a"
	waiting.Spec.Priority = int32p(1000)
	pod("small-nom", "nom-b", "500m")
	workload("nom", "1", 0)

	node("phs-a", "phs")
	node("phs-b", "phs")
	pod("done", "phs-a", "3500m").Status.Phase = v1.PodSucceeded
	pod("small-phs", "phs-b", "500m")
	workload("phs", "1", 0)

	node("pre-a", "pre")
	node("pre-b", "pre")
	pod("old", "pre-a", "3500m").Status.StartTime = at(1)
	pod("new", "pre-b", "3500m").Status.StartTime = at(6)
	workload("pre", "1", 1000)

	for _, o := range clusterObjects(c) {
		addNoise(o)
	}
	return c, workloads
}

// addNoise gives obj what the apiserver and the kubelet add to it and
// placement never reads.
func addNoise(obj runtime.Object) {
	m := obj.(metav1.Object)
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:resources":{"f:requests":{}}}}}}`
	m.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: "status"},
	})
	a := map[string]string{"team": "shop"}
	for k, v := range m.GetAnnotations() {
		a[k] = v
	}
	raw, _ := json.Marshal(obj)
	a[v1.LastAppliedConfigAnnotation] = string(raw)
	m.SetAnnotations(a)
	switch o := obj.(type) {
	case *v1.Node:
		o.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: o.Name}}
		o.Status.NodeInfo = v1.NodeSystemInfo{MachineID: "0123456789abcdef", KernelVersion: "6.8.0", OSImage: "Ubuntu 24.04", ContainerRuntimeVersion: "containerd://2.0.0", KubeletVersion: "v1.37.2"}
		o.Status.Conditions = append(o.Status.Conditions, v1.NodeCondition{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"})
	case *v1.Pod:
		o.Status.HostIP, o.Status.PodIP = "10.0.0.1", "10.1.0.1"
		o.Status.PodIPs = []v1.PodIP{{IP: "10.1.0.1"}}
		o.Status.QOSClass = v1.PodQOSBurstable
		o.Status.Conditions = append(o.Status.Conditions, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue})
		for i, ctr := range o.Spec.Containers {
			if i >= len(o.Status.ContainerStatuses) {
				o.Status.ContainerStatuses = append(o.Status.ContainerStatuses, v1.ContainerStatus{Name: ctr.Name})
			}
			cs := &o.Status.ContainerStatuses[i]
			cs.Image, cs.ImageID, cs.ContainerID = ctr.Image, "docker.io/library/x@sha256:0123", "containerd://0123"
			cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}
			cs.Ready, cs.RestartCount = true, 2
		}
	}
}

func clusterObjects(c *explain.Cluster) []runtime.Object {
	var out []runtime.Object
	for _, n := range c.Nodes {
		out = append(out, n)
	}
	for _, p := range c.Pods {
		out = append(out, p)
	}
	for _, n := range c.Namespaces {
		out = append(out, n)
	}
	return append(out, c.Others...)
}

func size(t *testing.T, objs []runtime.Object) int {
	t.Helper()
	return len(js(t, objs))
}

func js(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

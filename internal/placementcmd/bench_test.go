package placementcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/metrics"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
)

// BenchmarkExplain5000Nodes10000Pods: the whole offline path (decode a
// JSON snapshot of 5000 nodes and 10,000 pods, build the shipped profile's
// framework, every filter on every node, explain the rejections, score)
// for one pod with a nodeSelector, zone anti-affinity and no toleration of
// the taint a tenth of the nodes carry.
func BenchmarkExplain5000Nodes10000Pods(b *testing.B) {
	dir := b.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	podFile := filepath.Join(dir, "pod.json")
	writeBenchSnapshot(b, snap, podFile, 5000, 10000)
	b.ResetTimer()
	for b.Loop() {
		cmd := New(genericiooptions.IOStreams{Out: io.Discard, ErrOut: io.Discard}, BuildInfo{})
		cmd.SetArgs([]string{"explain", "-f", podFile, "--from-file", snap, "-o", "json"})
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
	}
}

func writeBenchSnapshot(b *testing.B, snap, podFile string, nodes, pods int) {
	b.Helper()
	list := v1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	add := func(o any) {
		raw, err := json.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		list.Items = append(list.Items, runtimeRaw(raw))
	}
	add(&v1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("32"), v1.ResourceMemory: resource.MustParse("128Gi"), v1.ResourcePods: resource.MustParse("110")}
	for i := range nodes {
		n := &v1.Node{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{
				"kubernetes.io/hostname":      fmt.Sprintf("node-%04d", i),
				"topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", i%10),
				"disktype":                    []string{"ssd", "hdd"}[i%2],
			}},
			Status: v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
		}
		if i%10 == 0 {
			n.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
		}
		add(n)
	}
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	for i := range pods {
		add(&v1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			// A UID, as every pod of a dump from the apiserver has.
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: "default", UID: types.UID(fmt.Sprintf("uid-pod-%05d", i)), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%50)}},
			Spec: v1.PodSpec{
				NodeName:   fmt.Sprintf("node-%04d", i%nodes),
				Containers: []v1.Container{{Name: "c", Image: "x", Resources: v1.ResourceRequirements{Requests: req}}},
			},
			Status: v1.PodStatus{Phase: v1.PodRunning},
		})
	}
	writeJSON(b, snap, list)
	writeJSON(b, podFile, &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default", Labels: map[string]string{"app": "probe"}},
		Spec: v1.PodSpec{
			SchedulerName: "placement-scheduler",
			NodeSelector:  map[string]string{"disktype": "ssd"},
			Affinity: &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app-7"}},
				TopologyKey:   "topology.kubernetes.io/zone",
			}}}},
			Containers: []v1.Container{{Name: "c", Image: "x", Resources: v1.ResourceRequirements{Requests: req}}},
		},
	})
}

func writeJSON(b *testing.B, path string, v any) {
	b.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		b.Fatal(err)
	}
}

func runtimeRaw(raw []byte) runtime.RawExtension { return runtime.RawExtension{Raw: raw} }

// BenchmarkExplainPreemption500Nodes1000Pods: the offline path for a pod
// that fits no node (it asks for a whole node's CPU) but would after
// evicting the two lower-priority pods on any node without the taint, so
// the preemption dry run runs on 450 nodes.
func BenchmarkExplainPreemption500Nodes1000Pods(b *testing.B) {
	dir := b.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	podFile := filepath.Join(dir, "pod.json")
	writeBenchSnapshot(b, snap, podFile, 500, 1000)
	writeJSON(b, podFile, &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"},
		Spec: v1.PodSpec{
			SchedulerName: "placement-scheduler",
			Priority:      ptr.To[int32](1000),
			Containers: []v1.Container{{Name: "c", Image: "x", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("32")},
			}}},
		},
	})
	b.ResetTimer()
	for b.Loop() {
		var out bytes.Buffer
		cmd := New(genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard}, BuildInfo{})
		cmd.SetArgs([]string{"explain", "-f", podFile, "--from-file", snap, "-o", "json"})
		if err := cmd.Execute(); err != nil {
			b.Fatal(err)
		}
		if !bytes.Contains(out.Bytes(), []byte(`"wouldPreempt": true`)) {
			b.Fatalf("no preemption found:\n%.2000s", out.String())
		}
	}
}

// BenchmarkSimulate1000Replicas: the whole offline simulate path (decode,
// build the profile's framework, place 1000 replicas one by one with each
// reserved, explain the Pending reason) for a Deployment whose replicas
// must not share a host and must share a zone with app-3's pods, on
// snapshots of 500, 1000 and 5000 nodes with 10 pods a node (the 5000-node
// one is the 50,000-pod cluster). With fewer nodes than replicas the rest
// stays Pending: the breakdown is computed once per reason. It reports
// the peak of the heap (peak-heap-MB), and that peak over the snapshot's
// pods (peak-heap-KB/pod).
func BenchmarkSimulate1000Replicas(b *testing.B) {
	for _, nodes := range []int{500, 1000, 5000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			dir := b.TempDir()
			snap := filepath.Join(dir, "snapshot.json")
			writeBenchSnapshot(b, snap, filepath.Join(dir, "unused.json"), nodes, 10*nodes)
			deploy := filepath.Join(dir, "deploy.json")
			replicas := int32(1000)
			term := func(app, key string) v1.PodAffinityTerm {
				return v1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}
			}
			writeJSON(b, deploy, &appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: metav1.ObjectMeta{Name: "spread", Namespace: "default"},
				Spec: appsv1.DeploymentSpec{
					Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
					Template: v1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "spread"}},
						Spec: v1.PodSpec{
							SchedulerName: "placement-scheduler",
							Affinity: &v1.Affinity{
								PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("spread", "kubernetes.io/hostname")}},
								PodAffinity:     &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term("app-3", "topology.kubernetes.io/zone")}},
							},
							Containers: []v1.Container{{Name: "c", Image: "x", Resources: v1.ResourceRequirements{
								Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
							}}},
						},
					},
				},
			})
			b.ReportAllocs()
			goruntime.GC()
			peak := sampleHeap()
			b.ResetTimer()
			for b.Loop() {
				cmd := New(genericiooptions.IOStreams{Out: io.Discard, ErrOut: io.Discard}, BuildInfo{})
				cmd.SetArgs([]string{"simulate", "-f", deploy, "--from-file", snap, "-o", "json"})
				if err := cmd.Execute(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			most := float64(peak())
			b.ReportMetric(most/(1<<20), "peak-heap-MB")
			// What a pod of the snapshot costs at the peak, everything
			// else (nodes, the framework, the replicas) counted in.
			b.ReportMetric(most/1024/float64(10*nodes), "peak-heap-KB/pod")
		})
	}
}

// sampleHeap samples the heap's live objects every 5 ms until the
// returned function is called, which returns the largest sample in bytes:
// the peak a command's run reaches (allocations per op say how much it
// allocated, not how much it held at once). runtime/metrics reads without
// stopping the world, so sampling barely disturbs the timing.
func sampleHeap() (peak func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done, result := make(chan struct{}), make(chan uint64)
	go func() {
		var most uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-done:
				result <- most
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		return <-result
	}
}

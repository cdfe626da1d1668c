package placementcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// The installed scheduler's ConfigMap is read from --scheduler-namespace
// and named in the output, without a fallback warning.
func TestSchedulerNamespaceConfigIsNamed(t *testing.T) {
	dir := "testdata/nodeselector-disktype"
	client := namespaceUser(t, filepath.Join(dir, "cluster.json"), "default")
	// The user may read ConfigMaps anywhere (the namespaceUser reactor,
	// behind this one, would refuse them).
	client.PrependReactor("*", "configmaps", clienttesting.ObjectReaction(client.Tracker()))
	cm := &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "sched-system", Name: "placement-scheduler-config-abc", Labels: map[string]string{"app.kubernetes.io/part-of": "placement-scheduler"}},
		Data:       map[string]string{configKey: string(manifests.SchedulerConfig())},
	}
	if err := client.Tracker().Add(cm); err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(dir, "pod.json")
	out, err := runExplainLive(t, client, "explain", "-f", pod, "-n", "default", "--scheduler-namespace", "sched-system")
	if err != nil {
		t.Fatal(err)
	}
	if want := "profile placement-scheduler of ConfigMap sched-system/placement-scheduler-config-abc\n"; !strings.Contains(out, want) {
		t.Errorf("output does not name the ConfigMap (%q):\n%s", want, out)
	}
	if strings.Contains(out, "Warning:") {
		t.Errorf("a warning although the installed config was read:\n%s", out)
	}
	// In the default namespace there is none: the shipped profile, and a
	// warning that says where it looked and which flag to use.
	out, err = runExplainLive(t, client, "explain", "-f", pod, "-n", "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"profile placement-scheduler of the shipped manifests/scheduler-config.yaml", "Warning: judged with the shipped", "namespace placement-scheduler", "--scheduler-namespace"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A user who may not list nodes gets one error naming the missing right.
func TestNodesForbiddenNamesTheRight(t *testing.T) {
	client := fake.NewSimpleClientset() //nolint:staticcheck // see namespaceUser
	client.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
	})
	_, err := runExplainLive(t, client, "explain", "p", "-n", "default")
	if err == nil || !strings.Contains(err.Error(), "list on nodes") || !strings.Contains(err.Error(), "--from-file") {
		t.Errorf("error %v, want one naming list on nodes and the snapshot alternative", err)
	}
}

// A what-if pod takes its priority from its PriorityClass as the
// apiserver's admission would give it, so the preemption dry run is about
// that priority; an unknown class is an error naming the field.
func TestWhatIfPriorityFromClass(t *testing.T) {
	dir := t.TempDir()
	snap, err := os.ReadFile("testdata/preemption-helps/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	cluster := filepath.Join(dir, "cluster.json")
	classes := filepath.Join(dir, "classes.yaml")
	if err := os.WriteFile(cluster, snap, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(classes, []byte("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: urgent}\nvalue: 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := func(class string) string {
		return `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": {"schedulerName": "placement-scheduler", "priorityClassName": "` + class + `", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}`
	}
	out, err := runCLI(t, pod("urgent"), "explain", "-f", "-", "--from-file", cluster, "--from-file", classes)
	if err != nil {
		t.Fatal(err)
	}
	if want := "would help: the scheduler would nominate node-a and evict 1 pod(s): default/low-old (priority 0)"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	_, err = runCLI(t, pod("nope"), "explain", "-f", "-", "--from-file", cluster, "--from-file", classes)
	if err == nil || !strings.Contains(err.Error(), `spec.priorityClassName "nope"`) {
		t.Errorf("error %v, want one naming spec.priorityClassName", err)
	}
}

// A bound pod is explained as if it were not placed yet, and the output
// says that the verdict is today's, not the one the scheduler reached.
func TestBoundPodVerdictIsToday(t *testing.T) {
	out, err := runCLI(t, "", "explain", "cache-0", "-n", "default", "--from-file", "testdata/zone-affinity-anti-affinity/cluster.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Note: the pod is bound to a-1: this verdict is recomputed against today's cluster (without the pod)"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

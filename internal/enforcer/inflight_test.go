package enforcer

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// maxObjectBytes is what the apiserver stores of one object (etcd's
// request limit, and a ConfigMap's data limit).
const maxObjectBytes = 1 << 20

// maxEntryBytes bounds one eviction in flight as saved: its pod's names,
// node, owner, target, time and the mark of the owner's pods (at most
// evictions.MaxAtNewest UIDs), whatever the owner's size.
const maxEntryBytes = 2048

// A storm whose owners have 3000 pods each: the evictions in flight are
// saved in a ConfigMap whose size follows the evictions, not the owners'
// pods (which would pass the apiserver's 1 MiB and stall every eviction),
// and a new leader proceeds from it without evicting anything twice.
func TestInflightStoreBoundedByEvictions(t *testing.T) {
	const owners, perOwner = 12, 3000
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	// The apiserver refuses an object beyond its limit.
	r.e.client.(*fake.Clientset).PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var cm *v1.ConfigMap
		switch a := a.(type) {
		case k8stesting.CreateAction:
			cm, _ = a.GetObject().(*v1.ConfigMap)
		case k8stesting.UpdateAction:
			cm, _ = a.GetObject().(*v1.ConfigMap)
		}
		if cm != nil && cm.Size() > maxObjectBytes {
			return true, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("ConfigMap of %d bytes", cm.Size()))
		}
		return false, nil, nil
	})
	big := func(name string) *v1.Node {
		return tu.MakeNode(name).Labels(ssd).Capacity("1000", "1000Gi", 4000).Ready().Obj()
	}
	r.c.Nodes = []*v1.Node{tu.MakeNode("a").Capacity("1000", "1000Gi", 100).Ready().Obj()}
	for i := range owners {
		r.c.Nodes = append(r.c.Nodes, big(fmt.Sprintf("big%d", i)))
	}
	// Each owner: one opted-in pod breaking its nodeSelector on a, the
	// rest fine (and not opted in) on a node of their own; UIDs the size
	// of the apiserver's.
	for o := range owners {
		owner := fmt.Sprintf("rs%d", o)
		for i := range perOwner {
			p := ssdPod(fmt.Sprintf("%s-%d", owner, i), owner, fmt.Sprintf("big%d", o))
			p.UID = types.UID(fmt.Sprintf("%08d-0000-4000-8000-%012d", o, i))
			if i == 0 {
				p.Spec.NodeName = "a"
			} else {
				delete(p.Annotations, Annotation)
			}
			r.c.Pods = append(r.c.Pods, p)
		}
	}
	reps := r.pass()
	if len(r.evictions) != owners {
		t.Fatalf("evicted %d pods, want %d (one per owner): %+v", len(r.evictions), owners, reps)
	}
	cm, err := r.e.client.CoreV1().ConfigMaps("placement-scheduler").Get(context.Background(), "placement-scheduler-enforcer-evictions", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inflight := 0
	for k, v := range cm.Data {
		if k == historyKey {
			continue
		}
		inflight++
		if len(v) > maxEntryBytes {
			t.Errorf("entry %s: %d bytes, want at most %d whatever its owner's size", k, len(v), maxEntryBytes)
		}
	}
	if inflight != owners || cm.Size() > owners*maxEntryBytes+maxLoopHistory*200 {
		t.Errorf("saved %d evictions in %d bytes; want %d, within %d bytes", inflight, cm.Size(), owners, owners*maxEntryBytes)
	}
	t.Logf("%d evictions in flight of owners of %d pods: a ConfigMap of %d bytes", owners, perOwner, cm.Size())

	// A new leader: the evicted pods are terminating; it evicts none again
	// and promises none of their room again (their replacements are not
	// created yet).
	r.terminate()
	r.newLeader()
	r.pass()
	if len(r.evictions) != owners {
		t.Errorf("new leader evicted again: %d evictions", len(r.evictions))
	}
	// The evicted pods are gone and replaced: the owners settle, and the
	// store empties.
	for _, ev := range r.evictions {
		repl := ssdPod(ev.Name+"-r", ev.Name[:len(ev.Name)-2], "big0")
		repl.CreationTimestamp = metav1.NewTime(r.clock.Now())
		r.c.Pods = append(r.without(ev.Name), repl)
	}
	r.newLeader()
	r.pass()
	cm, err = r.e.client.CoreV1().ConfigMaps("placement-scheduler").Get(context.Background(), "placement-scheduler-enforcer-evictions", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range cm.Data {
		if k != historyKey {
			t.Errorf("eviction %s still in flight once its owner has its replacement Ready", k)
		}
	}
}

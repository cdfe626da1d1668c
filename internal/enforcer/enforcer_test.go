package enforcer

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
)

// rig is an Enforcer over a fake clientset that records every eviction
// request and answers with refuse (nil: accepted).
type rig struct {
	t         testing.TB
	e         *Enforcer
	clock     *testingclock.FakeClock
	evictions []*policyv1.Eviction
	deletes   int
	patches   int
	refuse    func(*policyv1.Eviction) error
	events    *record.FakeRecorder
	c         *Cluster
}

func newRig(t testing.TB, mutate func(*enforcerv1alpha1.EnforcerConfiguration)) *rig {
	t.Helper()
	cfg, err := LoadConfig([]byte("apiVersion: "+enforcerv1alpha1.ConfigAPIVersion+"\nkind: "+enforcerv1alpha1.ConfigKind+"\nschedulerConfig: x\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.EvictionsPerSecond, cfg.Burst = 1000, 1000
	cfg.Limits = enforcerv1alpha1.Limits{PerNode: 100, PerNamespace: 100, Total: 100}
	if mutate != nil {
		mutate(cfg)
	}
	r := &rig{t: t, clock: testingclock.NewFakeClock(time.Unix(1_000_000, 0)), events: record.NewFakeRecorder(1000), c: &Cluster{}}
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		r.evictions = append(r.evictions, ev)
		if r.refuse != nil {
			if err := r.refuse(ev); err != nil {
				return true, nil, err
			}
		}
		return true, ev, nil
	})
	// Patches (the enforcer's records) land on the rig's pods, as the
	// apiserver would apply them.
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		r.patches++
		for _, p := range r.c.Pods {
			if p.Namespace != pa.GetNamespace() || p.Name != pa.GetName() {
				continue
			}
			// The enforcer's merge patches set or remove annotations,
			// with the pod's UID as a precondition.
			var patch recordPatch
			if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
				return true, nil, err
			}
			if patch.Metadata.UID != p.UID {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, p.Name, fmt.Errorf("uid %s, want %s", patch.Metadata.UID, p.UID))
			}
			// In place: tests keep pointers to their pods.
			out := p
			out.Annotations = maps.Clone(out.Annotations)
			for k, v := range patch.Metadata.Annotations {
				if v == nil {
					delete(out.Annotations, k)
				} else {
					if out.Annotations == nil {
						out.Annotations = map[string]string{}
					}
					out.Annotations[k] = *v
				}
			}
			return true, out.DeepCopy(), nil
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pa.GetName())
	})
	// Reads of a pod (after an eviction's error) see the rig's pods.
	client.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ga := a.(k8stesting.GetAction)
		for _, p := range r.c.Pods {
			if p.Namespace == ga.GetNamespace() && p.Name == ga.GetName() {
				return true, p.DeepCopy(), nil
			}
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, ga.GetName())
	})
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		r.deletes++
		return true, nil, nil
	})
	r.e = New(cfg, testConfig(t), client, r.events, r.clock)
	r.e.term = &term{leader: "leader-0"} // the Lease's first term
	return r
}

// recordPatch is the enforcer's merge patch of a pod's record.
type recordPatch struct {
	Metadata struct {
		UID         types.UID          `json:"uid"`
		Annotations map[string]*string `json:"annotations"`
	} `json:"metadata"`
}

// pass runs one pass and returns the reports by pod name.
func (r *rig) pass() map[string]violationsv1alpha1.Report {
	r.t.Helper()
	if _, err := r.e.Pass(context.Background(), r.c); err != nil {
		r.t.Fatal(err)
	}
	out := map[string]violationsv1alpha1.Report{}
	for _, rep := range r.e.Reports() {
		out[strings.TrimPrefix(rep.Pod, "ns/")] = rep
	}
	return out
}

func (r *rig) evicted() []string {
	var out []string
	for _, ev := range r.evictions {
		out = append(out, ev.Name)
	}
	return out
}

// terminate marks the evicted pods terminating, as the apiserver would.
func (r *rig) terminate() {
	for _, ev := range r.evictions {
		for _, p := range r.c.Pods {
			if p.Name == ev.Name && p.DeletionTimestamp == nil {
				p.DeletionTimestamp = &metav1.Time{Time: r.clock.Now()}
				p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
			}
		}
	}
}

func node(name string, labels map[string]string) *v1.Node {
	return tu.MakeNode(name).Labels(labels).Capacity("8", "16Gi", 10).Ready().Obj()
}

var created = time.Unix(900_000, 0)

// pod is a Ready pod of ReplicaSet owner, opted in to every rule.
func pod(name, owner, nodeName string) *tu.PodWrapper {
	w := tu.MakePod("ns", name).UID("uid-"+name).Placement().NodeName(nodeName).
		Condition(v1.PodReady, v1.ConditionTrue, "")
	w.CreationTimestamp = metav1.NewTime(created)
	w.Annotations = map[string]string{Annotation: "all"}
	yes := true
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: types.UID("uid-" + owner), Controller: &yes}}
	return w
}

func ssdPod(name, owner, nodeName string) *v1.Pod {
	return pod(name, owner, nodeName).NodeSelector(map[string]string{"disk": "ssd"}).Obj()
}

var ssd = map[string]string{"disk": "ssd"}

func TestGracePeriodAndFlapping(t *testing.T) {
	r := newRig(t, nil)
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}

	if got := r.pass()["p"].State; got != violationsv1alpha1.StateGrace {
		t.Fatalf("state %q, want %q", got, violationsv1alpha1.StateGrace)
	}
	r.clock.Step(29 * time.Second)
	if got := r.pass()["p"].State; got != violationsv1alpha1.StateGrace || len(r.evictions) != 0 {
		t.Fatalf("29s in: state %q, evictions %v", got, r.evicted())
	}
	// The label comes back inside the grace period: forgotten.
	r.c.Nodes[0] = node("a", ssd)
	if got, ok := r.pass()["p"]; ok {
		t.Fatalf("cleared violation still reported: %+v", got)
	}
	r.c.Nodes[0] = node("a", nil)
	r.clock.Step(2 * time.Second)
	if got := r.pass()["p"].State; got != violationsv1alpha1.StateGrace || len(r.evictions) != 0 {
		t.Fatalf("grace restarted: state %q, evictions %v", got, r.evicted())
	}
	r.clock.Step(30 * time.Second)
	rep := r.pass()["p"]
	if rep.State != violationsv1alpha1.StateEvicting || rep.Target != "b" || rep.Rule != enforcerv1alpha1.NodeAffinity {
		t.Fatalf("after grace: %+v", rep)
	}
	ev := r.evictions[0]
	if ev.DeleteOptions == nil || ev.DeleteOptions.Preconditions == nil || *ev.DeleteOptions.Preconditions.UID != "uid-p" {
		t.Errorf("eviction without the pod's UID as precondition: %+v", ev.DeleteOptions)
	}
	if len(ev.DeleteOptions.DryRun) != 0 || r.deletes != 0 {
		t.Errorf("dryRun %v, deletes %d", ev.DeleteOptions.DryRun, r.deletes)
	}
}

func TestNoFitThenFits(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", nil)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	if got := r.pass()["p"].State; got != violationsv1alpha1.StateNoFit || len(r.evictions) != 0 {
		t.Fatalf("state %q, evictions %v; want no-fit and none", got, r.evicted())
	}
	r.c.Nodes[1] = node("b", ssd)
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
		t.Fatalf("once b fits: %+v", got)
	}
}

func TestPlacementCountsTerminatingPods(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	// b's only room is held by a pod still terminating there: the
	// scheduler counts it until it is deleted, so must the placement.
	leaving := pod("leaving", "other", "b").Request("6", "1Gi").Obj()
	leaving.DeletionTimestamp = &metav1.Time{Time: r.clock.Now()}
	p := pod("p", "rs", "a").NodeSelector(ssd).Request("4", "1Gi").Obj()
	r.c.Pods = []*v1.Pod{leaving, p}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateNoFit || len(r.evictions) != 0 {
		t.Fatalf("with b held by a terminating pod: %+v, evictions %v; want no-fit and none", got, r.evicted())
	}
	r.c.Pods = []*v1.Pod{p}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
		t.Fatalf("once the terminating pod is gone: %+v", got)
	}
}

func TestPlacementUndoneWhenNotEvicted(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	// The first eviction asked is refused; that pod's reservation on b
	// must not keep the other, which b also has room for, from going.
	r.refuse = func(*policyv1.Eviction) error {
		if len(r.evictions) == 1 {
			return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return nil
	}
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{
		pod("one", "rs1", "a").NodeSelector(ssd).Request("5", "1Gi").Obj(),
		pod("two", "rs2", "a").NodeSelector(ssd).Request("5", "1Gi").Obj(),
	}
	reps := r.pass()
	if len(r.evictions) != 2 {
		t.Fatalf("eviction requests %v, want both pods asked for", r.evicted())
	}
	refused, next := r.evictions[0].Name, r.evictions[1].Name
	if got := reps[refused]; got.State != violationsv1alpha1.StatePDBBlocked {
		t.Errorf("%s: %+v, want pdb-blocked", refused, got)
	}
	if got := reps[next]; got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
		t.Errorf("%s: %+v, want evicting to b (the refused eviction holds nothing)", next, got)
	}
}

func TestEvictWithoutFit(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.EvictWithoutFit = true
	})
	r.c.Nodes = []*v1.Node{node("a", nil)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateEvicting || got.Target != "" {
		t.Fatalf("evictWithoutFit: %+v", got)
	}
}

func TestProtectedPodsAreNeverEvicted(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	notReady := tu.MakeNode("down").Capacity("8", "16Gi", 10).Obj()
	notReady.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionUnknown}}
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd), notReady}
	yes := true
	ds := ssdPod("ds", "x", "a")
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "uid-ds", Controller: &yes}}
	mirror := ssdPod("mirror", "m", "a")
	mirror.Annotations[v1.MirrorPodAnnotationKey] = "hash"
	bare := ssdPod("bare", "y", "a")
	bare.OwnerReferences = nil
	critical := ssdPod("critical", "c", "a")
	critical.Spec.PriorityClassName = "system-node-critical"
	prio := ssdPod("prio", "pr", "a")
	high := int32(2_000_000_000)
	prio.Spec.Priority = &high
	onDown := ssdPod("on-down", "d", "down")
	scratch := ssdPod("scratch", "s", "a")
	scratch.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	hostPath := ssdPod("host-path", "h", "a")
	hostPath.Spec.Volumes = []v1.Volume{{Name: "logs", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}}}
	r.c.Pods = []*v1.Pod{ds, mirror, bare, critical, prio, onDown, scratch, hostPath}
	reps := r.pass()
	want := map[string]string{"ds": SkipDaemonSet, "mirror": SkipMirror, "bare": SkipBare, "critical": SkipCritical, "prio": SkipCritical, "on-down": SkipNodeNotReady,
		"scratch": SkipLocalStorage, "host-path": SkipLocalStorage}
	for name, why := range want {
		if got := reps[name]; got.State != violationsv1alpha1.StateProtected || got.Detail != why {
			t.Errorf("%s: %+v, want protected (%s)", name, got, why)
		}
	}
	if len(r.evictions) != 0 {
		t.Errorf("evicted %v", r.evicted())
	}
	// Terminating pods are not even judged.
	term := ssdPod("term", "t", "a")
	term.DeletionTimestamp = &metav1.Time{Time: r.clock.Now()}
	r.c.Pods = []*v1.Pod{term}
	if reps := r.pass(); len(reps) != 0 || len(r.evictions) != 0 {
		t.Errorf("terminating pod: reports %v, evictions %v", reps, r.evicted())
	}
	if protection(term, r.c.Nodes[0], r.e.cfg, nil) != SkipTerminating {
		t.Errorf("terminating pod not protected")
	}
}

func TestLocalStorageEvictedOnlyWithConsent(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.EvictLocalStoragePods = true
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	scratch := ssdPod("scratch", "s", "a")
	scratch.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}}
	r.c.Pods = []*v1.Pod{scratch}
	if rep := r.pass()["scratch"]; rep.State == violationsv1alpha1.StateProtected {
		t.Fatalf("scratch with evictLocalStoragePods: %+v, want it judged like any pod", rep)
	}
	if got := r.evicted(); len(got) != 1 || got[0] != "scratch" {
		t.Errorf("evicted %v, want [scratch]", got)
	}
}

// pdbBlocked is a rig with pod p due for eviction (no grace period) and
// every eviction refused by a PodDisruptionBudget.
func pdbBlocked(t *testing.T) *rig {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.refuse = func(*policyv1.Eviction) error {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	}
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	return r
}

func TestPDBRefusalBacksOff(t *testing.T) {
	r := pdbBlocked(t)
	if got := r.pass()["p"].State; got != violationsv1alpha1.StatePDBBlocked {
		t.Fatalf("state %q, want pdb-blocked", got)
	}
	if got := r.pass()["p"].State; got != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 1 {
		t.Fatalf("right after a refusal: state %q, %d eviction requests; want pdb-blocked and no new request", got, len(r.evictions))
	}
	r.clock.Step(11 * time.Second)
	if got := r.pass()["p"].State; got != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 2 {
		t.Fatalf("after the backoff: state %q, %d requests; want a retry", got, len(r.evictions))
	}
	r.clock.Step(11 * time.Second) // the backoff doubled to 20s
	if got := r.pass()["p"].State; got != violationsv1alpha1.StatePDBBlocked || len(r.evictions) != 2 {
		t.Fatalf("inside the doubled backoff: state %q, %d requests", got, len(r.evictions))
	}
	r.refuse = nil
	r.clock.Step(10 * time.Second)
	if got := r.pass()["p"].State; got != violationsv1alpha1.StateEvicting {
		t.Fatalf("once the PDB allows: state %q", got)
	}
}

func TestOtherRefusals(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.refuse = func(*policyv1.Eviction) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", fmt.Errorf("uid precondition failed"))
	}
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateError || !strings.Contains(got.Detail, "replaced") {
		t.Fatalf("conflict: %+v", got)
	}
	r.refuse = func(*policyv1.Eviction) error { return apierrors.NewInternalError(fmt.Errorf("two PDBs")) }
	r.c.Pods = []*v1.Pod{ssdPod("q", "rs2", "a")}
	if got := r.pass()["q"]; got.State != violationsv1alpha1.StateError {
		t.Fatalf("500: %+v", got)
	}
	before := len(r.evictions)
	if got := r.pass()["q"]; got.State != violationsv1alpha1.StateError || len(r.evictions) != before {
		t.Fatalf("after a 500: %+v and %d new requests, want error and no retry inside the backoff", got, len(r.evictions)-before)
	}
}

// An eviction whose answer is lost (a 500) but whose pod is leaving is an
// eviction: reported evicting, and it holds its node's cap.
func TestLostAnswerCountsAsEvicted(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Limits.PerNode = 1
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	p, q := ssdPod("p", "rs", "a"), ssdPod("q", "rs2", "a")
	q.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.Add(-time.Hour)) // p, the younger, goes first
	r.c.Pods = []*v1.Pod{p, q}
	r.refuse = func(ev *policyv1.Eviction) error {
		for _, pod := range r.c.Pods {
			if pod.Name == ev.Name {
				pod.DeletionTimestamp = &metav1.Time{Time: r.clock.Now()}
			}
		}
		return apierrors.NewInternalError(fmt.Errorf("etcdserver: request timed out"))
	}
	got := r.pass()
	if got["p"].State != violationsv1alpha1.StateEvicting || got["q"].State != violationsv1alpha1.StatePaced || got["q"].Wait != "limits.perNode" {
		t.Fatalf("p %s, q %s (%s); want p evicting and q paced by limits.perNode", got["p"].State, got["q"].State, got["q"].Wait)
	}
}

func TestOnePodPerOwnerInFlight(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs", "a"), ssdPod("p2", "rs", "a")}
	reps := r.pass()
	if len(r.evictions) != 1 {
		t.Fatalf("evicted %v, want one pod of the owner", r.evicted())
	}
	other := "p2"
	if r.evictions[0].Name == "p2" {
		other = "p1"
	}
	if reps[other].State != violationsv1alpha1.StateWaitingOwner {
		t.Errorf("%s: %+v, want waiting-owner", other, reps[other])
	}
	r.terminate()
	r.pass()
	// The evicted pod is gone and its controller has not created the
	// replacement yet: still in flight.
	var keep []*v1.Pod
	for _, p := range r.c.Pods {
		if p.DeletionTimestamp == nil {
			keep = append(keep, p)
		}
	}
	r.c.Pods = keep
	if got := r.pass()[other]; got.State != violationsv1alpha1.StateWaitingOwner || len(r.evictions) != 1 {
		t.Fatalf("replacement not created yet: %+v, evictions %v", got, r.evicted())
	}
	// The replacement exists, not Ready yet.
	repl := pod("p3", "rs", "b").NodeSelector(ssd).Obj()
	repl.Status.Conditions = nil
	r.c.Pods = append(keep, repl)
	if got := r.pass()[other]; got.State != violationsv1alpha1.StateWaitingOwner || len(r.evictions) != 1 {
		t.Fatalf("replacement not Ready: %+v, evictions %v", got, r.evicted())
	}
	repl.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	if got := r.pass()[other]; got.State != violationsv1alpha1.StateEvicting || len(r.evictions) != 2 {
		t.Fatalf("replacement Ready: %+v, evictions %v", got, r.evicted())
	}
}

func TestCapsAndRateLimit(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Limits = enforcerv1alpha1.Limits{PerNode: 2, PerNamespace: 100, Total: 3}
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("a2", nil), node("b", ssd)}
	for i := range 3 {
		r.c.Pods = append(r.c.Pods, ssdPod(fmt.Sprintf("a-%d", i), fmt.Sprintf("rs-a%d", i), "a"), ssdPod(fmt.Sprintf("a2-%d", i), fmt.Sprintf("rs-b%d", i), "a2"))
	}
	reps := r.pass()
	perNode := map[string]int{}
	for _, ev := range r.evictions {
		perNode[ev.Name[:strings.LastIndex(ev.Name, "-")]]++
	}
	if len(r.evictions) != 3 || perNode["a"] > 2 || perNode["a2"] > 2 {
		t.Fatalf("evicted %v: want 3 in total, at most 2 per node", r.evicted())
	}
	paced := 0
	for _, rep := range reps {
		if rep.State == violationsv1alpha1.StatePaced {
			paced++
		}
	}
	if paced != 3 {
		t.Errorf("%d paced, want 3: %v", paced, reps)
	}
	// The evictions stay in flight while their pods terminate, even for
	// an enforcer that did not make them (a new leader).
	r.terminate()
	r2 := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Limits.Total = 3
	})
	r2.c = r.c
	r2.pass()
	if len(r2.evictions) != 0 {
		t.Errorf("a new enforcer evicted %v past the total cap", r2.evicted())
	}

	rl := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.EvictionsPerSecond, c.Burst = 1, 1
	})
	rl.c.Nodes = r.c.Nodes
	rl.c.Pods = []*v1.Pod{ssdPod("x", "rs-x", "a"), ssdPod("y", "rs-y", "a2")}
	rl.pass()
	if len(rl.evictions) != 1 {
		t.Errorf("burst 1: evicted %v", rl.evicted())
	}
}

func TestBatchReservesCapacity(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	small := tu.MakeNode("b").Label("disk", "ssd").Capacity("8", "16Gi", 1).Ready().Obj()
	r.c.Nodes = []*v1.Node{node("a", nil), small}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs1", "a"), ssdPod("p2", "rs2", "a")}
	reps := r.pass()
	if len(r.evictions) != 1 {
		t.Fatalf("room for one, evicted %v", r.evicted())
	}
	states := []string{reps["p1"].State, reps["p2"].State}
	if !(states[0] == violationsv1alpha1.StateEvicting && states[1] == violationsv1alpha1.StateNoFit || states[0] == violationsv1alpha1.StateNoFit && states[1] == violationsv1alpha1.StateEvicting) {
		t.Errorf("states %v, want one evicting and one no-fit", states)
	}
}

// mutualPair is a rig with two pods in zone a, the younger a minute
// younger, whose zone anti-affinity rejects each other; b1 in zone b is
// free. mutate, if set, changes the younger pod.
func mutualPair(t *testing.T, mutate func(*v1.Pod)) *rig {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.PodAntiAffinity.Duration = 0 })
	zone := func(n, z string) *v1.Node { return node(n, map[string]string{"zone": z}) }
	r.c.Nodes = []*v1.Node{zone("a1", "a"), zone("a2", "a"), zone("b1", "b")}
	anti := tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "x"}))
	older := pod("older", "rs1", "a1").Label("app", "x").RequiredPodAntiAffinity(anti).Obj()
	younger := pod("younger", "rs2", "a2").Label("app", "x").RequiredPodAntiAffinity(anti).Obj()
	younger.CreationTimestamp = metav1.NewTime(created.Add(time.Minute))
	if mutate != nil {
		mutate(younger)
	}
	r.c.Pods = []*v1.Pod{older, younger}
	return r
}

func TestMutualAntiAffinityEvictsExactlyOne(t *testing.T) {
	r := mutualPair(t, nil)
	reps := r.pass()
	if got := r.evicted(); len(got) != 1 || got[0] != "younger" {
		t.Fatalf("evicted %v, want exactly the younger pod", got)
	}
	if _, ok := reps["older"]; ok {
		t.Errorf("the older pod is reported: %+v", reps["older"])
	}
}

// TestMutualAntiAffinityYoungerKept: when the younger pod of a pair that
// violate each other cannot go, the older one sees it: it is reported and
// goes, in the same pass. Kept here means protected (a bare pod) or
// refused by its PodDisruptionBudget: neither is leaving.
func TestMutualAntiAffinityYoungerKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*v1.Pod)
		refuse bool
		state  string
	}{
		{"protected", func(p *v1.Pod) { p.OwnerReferences = nil }, false, violationsv1alpha1.StateProtected},
		{"pdb-blocked", nil, true, violationsv1alpha1.StatePDBBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mutualPair(t, tc.mutate)
			if tc.refuse {
				r.refuse = func(ev *policyv1.Eviction) error {
					if ev.Name == "younger" {
						return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
					}
					return nil
				}
			}
			reps := r.pass()
			if got := reps["younger"]; got.State != tc.state {
				t.Errorf("younger: %+v, want %s", got, tc.state)
			}
			if got := reps["older"]; got.Rule != enforcerv1alpha1.PodAntiAffinity || got.State != violationsv1alpha1.StateEvicting || got.Target != "b1" {
				t.Errorf("older: %+v, want pod-anti-affinity, evicting to b1", got)
			}
			var evicted []string
			for _, name := range r.evicted() {
				if name != "younger" { // a refused request is recorded too
					evicted = append(evicted, name)
				}
			}
			if len(evicted) != 1 || evicted[0] != "older" {
				t.Errorf("evicted %v, want exactly the older pod", r.evicted())
			}
		})
	}
}

func TestOnlyTheOptedInOwnerOfATermIsEvicted(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.PodAntiAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a1", map[string]string{"zone": "a"}), node("b1", map[string]string{"zone": "b"})}
	// The owner of the term did not opt in; its target did, but breaks
	// nothing of its own.
	owner := pod("owner", "rs1", "a1").Label("app", "x").RequiredPodAntiAffinity(tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "y"}))).Obj()
	delete(owner.Annotations, Annotation)
	target := pod("target", "rs2", "a1").Label("app", "y").Obj()
	r.c.Pods = []*v1.Pod{owner, target}
	if reps := r.pass(); len(reps) != 0 || len(r.evictions) != 0 {
		t.Fatalf("reports %v, evictions %v; want none", reps, r.evicted())
	}
}

func TestNamespaceOptInAndOptOut(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Namespaces = &enforcerv1alpha1.NamespaceOptIn{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"enforce": "yes"}}, Rules: []string{"node-affinity"}}
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Namespaces = []*v1.Namespace{tu.MakeNamespace("ns", map[string]string{"enforce": "yes"})}
	byNS := ssdPod("by-ns", "rs1", "a")
	delete(byNS.Annotations, Annotation)
	optOut := ssdPod("opt-out", "rs2", "a")
	optOut.Annotations[Annotation] = "none"
	r.c.Pods = []*v1.Pod{byNS, optOut}
	r.pass()
	if got := r.evicted(); len(got) != 1 || got[0] != "by-ns" {
		t.Fatalf("evicted %v, want by-ns only", got)
	}
}

func TestDryRun(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.DryRun = true
	})
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateDryRun || got.Target != "b" {
		t.Fatalf("dry run: %+v", got)
	}
	if ev := r.evictions[0]; len(ev.DeleteOptions.DryRun) != 1 || ev.DeleteOptions.DryRun[0] != metav1.DryRunAll {
		t.Errorf("dry-run eviction without dryRun=All: %+v", ev.DeleteOptions)
	}
	// The report holds, asking nothing again, while its simulated
	// eviction is in flight.
	if got := r.pass()["p"]; got.State != violationsv1alpha1.StateDryRun || got.Target != "b" || len(r.evictions) != 1 {
		t.Errorf("second dry-run pass: %+v, %d requests", got, len(r.evictions))
	}
	// A dry-run PDB refusal is reported as the live run would see it.
	r2 := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.DryRun = true
	})
	r2.refuse = func(*policyv1.Eviction) error { return apierrors.NewTooManyRequests("pdb", 0) }
	r2.c = r.c
	if got := r2.pass()["p"].State; got != violationsv1alpha1.StatePDBBlocked {
		t.Errorf("dry run under a PDB: %q", got)
	}
}

func TestEventsOnStateChanges(t *testing.T) {
	r := newRig(t, nil)
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	r.pass()
	r.pass()
	r.clock.Step(time.Minute)
	r.pass()
	close(r.events.Events)
	var got []string
	for e := range r.events.Events {
		got = append(got, strings.SplitN(e, " ", 3)[1])
	}
	want := []string{"PlacementViolation", "PlacementEvicted", "PlacementEvicted"} // pod, then owner
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestLoadConfig(t *testing.T) {
	head := "apiVersion: " + enforcerv1alpha1.ConfigAPIVersion + "\nkind: " + enforcerv1alpha1.ConfigKind + "\nschedulerConfig: /etc/s.yaml\n"
	c, err := LoadConfig([]byte(head), "f")
	if err != nil {
		t.Fatal(err)
	}
	if c.GracePeriod.PodAffinity.Duration != 30*time.Second || c.Limits.Total != 10 || c.LeaderElection.LeaseName != "placement-scheduler-enforcer" ||
		c.ClientConnection != (enforcerv1alpha1.ClientConnection{QPS: 50, Burst: 100, EventQPS: 5, EventBurst: 25}) || c.CacheSyncTimeout.Duration != 10*time.Minute ||
		c.Loops != (enforcerv1alpha1.LoopDetection{Evictions: 3, Window: metav1.Duration{Duration: time.Hour}}) ||
		c.Limits.OtherEvictionsFor == nil || c.Limits.OtherEvictionsFor.Duration != 5*time.Minute {
		t.Errorf("defaults not applied: %+v", c)
	}
	if c, err := LoadConfig([]byte(head+"limits: {otherEvictionsFor: 0s}\n"), "f"); err != nil || c.Limits.OtherEvictionsFor.Duration != 0 {
		t.Errorf("limits.otherEvictionsFor: 0s (others' evictions never count): %v, %+v", err, c)
	}
	for in, wantErr := range map[string]string{
		head + "gracePeriod: {nodeAfinity: 1s}\n": `unknown field "gracePeriod.nodeAfinity"`,
		head + "dryrun: true\n":                   `unknown field "dryrun"`,
		"apiVersion: v1\nkind: " + enforcerv1alpha1.ConfigKind + "\nschedulerConfig: x\n":                    "apiVersion/kind",
		"apiVersion: " + enforcerv1alpha1.ConfigAPIVersion + "\nkind: " + enforcerv1alpha1.ConfigKind + "\n": "schedulerConfig: required",
		head + "namespaces: {selector: {}, rules: [nodes]}\n":                                                `namespaces.rules: unknown rule kind "nodes"`,
		head + "backoff: {initial: 1m, max: 1s}\n":                                                           "backoff.max",
		head + "clientConnection: {qps: -1}\n":                                                               "clientConnection.qps: must be positive",
		head + "clientConnection: {qps: 100, burst: 10}\n":                                                   "clientConnection.burst (10) must be at least clientConnection.qps (100)",
		head + "clientConnection: {eventBurst: -2}\n":                                                        "clientConnection.eventBurst: must be positive",
		head + "metricsBindAddress: \":10261\"\n":                                                            "metricsBindAddress: removed: the endpoints are served over HTTPS with delegated authentication and authorization; delete the field and use the flags --secure-port",
		head + "loops: {evictions: 1}\n":                                                                     "loops.evictions: want 2 to 100",
		head + "loops: {evictions: 101}\n":                                                                   "loops.evictions: want 2 to 100",
		head + "loops: {window: -1m}\n":                                                                      "loops.window: must not be negative",
		head + "loops: {evictons: 3}\n":                                                                      `unknown field "loops.evictons"`,
		head + "limits: {otherEvictionsFor: -1m}\n":                                                          "limits.otherEvictionsFor: must not be negative",
		head + "cacheSyncTimeout: -1s\n":                                                                     "cacheSyncTimeout: must not be negative",
	} {
		_, err := LoadConfig([]byte(in), "f")
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one containing %q", in, err, wantErr)
		}
	}
}

// The config the kustomize base ships loads, and names the scheduler config
// the same ConfigMap carries.
func TestShippedConfigLoads(t *testing.T) {
	data, err := fs.ReadFile(manifests.Files(), "base/enforcer-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(data, "manifests/base/enforcer-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.SchedulerConfig != "/etc/placement-scheduler/scheduler-config.yaml" || c.DryRun || c.Namespaces != nil {
		t.Errorf("shipped config: %+v", c)
	}
}

// A new leader (an Enforcer without its predecessor's memory) sees the pod
// its predecessor evicted as terminating and does not evict it again.
func TestNewLeaderDoesNotEvictTwice(t *testing.T) {
	first := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	first.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	first.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	first.pass()
	if len(first.evictions) != 1 {
		t.Fatalf("first leader evicted %v", first.evicted())
	}
	first.terminate()
	second := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	second.c = first.c
	second.pass()
	if len(second.evictions) != 0 {
		t.Errorf("the new leader evicted %v again", second.evicted())
	}
}

// A pod whose affinity target left its zone moves to the zone that has one,
// and is kept (no-fit) when no zone has one any more.
func TestPodAffinityTargetGone(t *testing.T) {
	zone := func(n, z string) *v1.Node { return node(n, map[string]string{"zone": z}) }
	term := tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "db"}))
	for _, tc := range []struct {
		name       string
		db         []*v1.Pod
		state, tgt string
	}{
		{"target in another zone", []*v1.Pod{pod("db", "rs-db", "b1").Label("app", "db").Obj()}, violationsv1alpha1.StateEvicting, "b1"},
		{"no target anywhere", nil, violationsv1alpha1.StateNoFit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.PodAffinity.Duration = 0 })
			r.c.Nodes = []*v1.Node{zone("a1", "a"), zone("a2", "a"), zone("b1", "b")}
			web := pod("web", "rs-web", "a1").Label("app", "web").RequiredPodAffinity(term).Obj()
			r.c.Pods = append([]*v1.Pod{web}, tc.db...)
			got := r.pass()["web"]
			if got.Rule != enforcerv1alpha1.PodAffinity || got.State != tc.state || got.Target != tc.tgt {
				t.Errorf("%+v, want %s to %q", got, tc.state, tc.tgt)
			}
		})
	}
}

// oneSlot is two violating pods on a, of owners rs1 and rs2, with room for
// one on b: the rig after the pass that evicted one of them, the evicted
// pod and its owner, and the pod that stays.
func oneSlot(t *testing.T) (r *rig, gone, owner, stays string) {
	t.Helper()
	r = newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	small := tu.MakeNode("b").Label("disk", "ssd").Capacity("8", "16Gi", 1).Ready().Obj()
	r.c.Nodes = []*v1.Node{node("a", nil), small}
	r.c.Pods = []*v1.Pod{ssdPod("p1", "rs1", "a"), ssdPod("p2", "rs2", "a")}
	r.pass()
	if len(r.evictions) != 1 {
		t.Fatalf("room for one, evicted %v", r.evicted())
	}
	gone, owner, stays = r.evictions[0].Name, "rs1", "p2"
	if gone == "p2" {
		owner, stays = "rs2", "p1"
	}
	return r, gone, owner, stays
}

// without is the rig's pods but the one named name.
func (r *rig) without(name string) []*v1.Pod {
	var keep []*v1.Pod
	for _, p := range r.c.Pods {
		if p.Name != name {
			keep = append(keep, p)
		}
	}
	return keep
}

// A reservation lasts until the replacement it was made for is bound, not
// just for the pass that evicted: before the eviction shows, while the
// evicted pod terminates, after it is gone, and while its replacement is
// Pending, the room it was promised is not promised again.
func TestReservationHeldUntilReplacementBound(t *testing.T) {
	r, gone, owner, stays := oneSlot(t)
	check := func(when string) {
		t.Helper()
		if got := r.pass()[stays]; got.State != violationsv1alpha1.StateNoFit || len(r.evictions) != 1 {
			t.Fatalf("%s: %s %+v, evictions %v; want no-fit and one eviction", when, stays, got, r.evicted())
		}
	}
	check("eviction not seen yet")
	r.terminate()
	check("evicted pod terminating")
	keep := r.without(gone)
	r.c.Pods = keep
	check("evicted pod gone, no replacement yet")
	repl := pod(gone+"-r", owner, "").NodeSelector(ssd).Obj()
	repl.Status.Conditions = nil
	r.c.Pods = append(keep, repl)
	check("replacement Pending")
	repl.Spec.NodeName = "b"
	check("replacement bound, not Ready")
	repl.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	check("replacement Ready")
	// The slot frees: the other pod may go now.
	r.c.Nodes[1] = tu.MakeNode("b").Label("disk", "ssd").Capacity("8", "16Gi", 2).Ready().Obj()
	if got := r.pass()[stays]; got.State != violationsv1alpha1.StateEvicting || got.Target != "b" {
		t.Fatalf("once b has room again: %+v", got)
	}
}

// The scheduler breaks ties between equal nodes at random, so a
// replacement can be bound to the node promised to another: the room
// still owed to the other's replacement is then on the node promised to
// the first, and is not promised again. b and c have one slot each; of
// p1, p2 and p3 (three owners), two are evicted, one to each, and one
// finds no room. The first's replacement is bound to the second's target
// while the second's is Pending: the only free slot, on the first's
// target, is the second's.
func TestReservationFollowsTheRoomLeft(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
		c.GracePeriod.NodeAffinity.Duration = 0
		c.Limits = enforcerv1alpha1.Limits{PerNode: 5, PerNamespace: 100, Total: 5}
	})
	slot := func(name string) *v1.Node {
		return tu.MakeNode(name).Label("disk", "ssd").Capacity("8", "16Gi", 2).Ready().Obj()
	}
	r.c.Nodes = []*v1.Node{node("a", nil), node("a2", nil), slot("b"), slot("c")}
	r.c.Pods = []*v1.Pod{ssdPod("fill-b", "rs-fb", "b"), ssdPod("fill-c", "rs-fc", "c"),
		ssdPod("p1", "rs1", "a"), ssdPod("p2", "rs2", "a2"), ssdPod("p3", "rs3", "a")}
	reps := r.pass()
	var moved []string // evicted, in the order of their targets b, c
	stays := ""
	for _, name := range []string{"p1", "p2", "p3"} {
		switch reps[name].State {
		case violationsv1alpha1.StateEvicting:
			moved = append(moved, name)
		case violationsv1alpha1.StateNoFit:
			stays = name
		}
	}
	if len(moved) != 2 || stays == "" || reps[moved[0]].Target == reps[moved[1]].Target {
		t.Fatalf("first pass %v: want two evicted, one to b and one to c, and one no-fit", reps)
	}
	first, second := moved[0], moved[1]
	var pods []*v1.Pod
	for _, p := range r.c.Pods {
		if p.Name != first && p.Name != second {
			pods = append(pods, p)
		}
	}
	owner := func(name string) string { return "rs" + strings.TrimPrefix(name, "p") }
	r1 := pod(first+"-r", owner(first), reps[second].Target).NodeSelector(ssd).Obj()
	r2 := pod(second+"-r", owner(second), "").NodeSelector(ssd).Obj()
	r2.Status.Conditions = nil
	r.c.Pods = append(pods, r1, r2)
	if got := r.pass()[stays]; got.State != violationsv1alpha1.StateNoFit || len(r.evictions) != 2 {
		t.Fatalf("%s's replacement on %s, %s's Pending: %s %+v, evictions %v; want no-fit and two evictions",
			first, reps[second].Target, second, stays, got, r.evicted())
	}
	// The second's replacement bound where room was left: still none.
	r2.Spec.NodeName = reps[first].Target
	if got := r.pass()[stays]; got.State != violationsv1alpha1.StateNoFit || len(r.evictions) != 2 {
		t.Fatalf("both replacements bound: %s %+v, evictions %v", stays, got, r.evicted())
	}
}

// TestAffinityTargetThatCannotLeaveStillCounts: x requires zone affinity to
// y; y violates its own anti-affinity (z, older, is in its zone) but does
// not leave: refused by its PodDisruptionBudget, failing, or still in its
// grace period, live or in a dry run. x's affinity is met while y is in its
// zone: x is never reported nor evicted; y is reported.
func TestAffinityTargetThatCannotLeaveStillCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dryRun bool
		refuse error
		grace  time.Duration
		state  string
	}{
		{"pdb-blocked", false, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), 0, violationsv1alpha1.StatePDBBlocked},
		{"pdb-blocked, dry run", true, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), 0, violationsv1alpha1.StatePDBBlocked},
		{"error", false, apierrors.NewInternalError(fmt.Errorf("boom")), 0, violationsv1alpha1.StateError},
		{"grace", false, nil, time.Hour, violationsv1alpha1.StateGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) {
				c.DryRun = tc.dryRun
				c.GracePeriod.NodeAffinity.Duration, c.GracePeriod.PodAffinity.Duration = 0, 0
				c.GracePeriod.PodAntiAffinity.Duration = tc.grace
			})
			r.refuse = func(ev *policyv1.Eviction) error {
				if ev.Name == "y" {
					return tc.refuse
				}
				return nil
			}
			zone := func(n, z string) *v1.Node { return node(n, map[string]string{"zone": z}) }
			r.c.Nodes = []*v1.Node{zone("a1", "a"), zone("a2", "a"), zone("b1", "b")}
			z := pod("z", "rs-z", "a1").Label("app", "z").Obj()
			x := pod("x", "rs-x", "a1").Label("app", "x").RequiredPodAffinity(tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "y"}))).Obj()
			x.CreationTimestamp = metav1.NewTime(created.Add(time.Minute))
			y := pod("y", "rs-y", "a2").Label("app", "y").RequiredPodAntiAffinity(tu.AffinityTerm("zone", tu.Selector(map[string]string{"app": "z"}))).Obj()
			y.CreationTimestamp = metav1.NewTime(created.Add(2 * time.Minute))
			r.c.Pods = []*v1.Pod{z, x, y}
			for i := range 4 {
				reps := r.pass()
				if got, ok := reps["x"]; ok {
					t.Fatalf("pass %d: x reported: %+v", i, got)
				}
				if got := reps["y"]; got.Rule != enforcerv1alpha1.PodAntiAffinity || got.State != tc.state {
					t.Fatalf("pass %d: y %+v, want pod-anti-affinity %s", i, got, tc.state)
				}
				for _, name := range r.evicted() {
					if name == "x" {
						t.Fatalf("pass %d: x evicted", i)
					}
				}
				r.clock.Step(10 * time.Minute) // past any backoff
			}
		})
	}
}

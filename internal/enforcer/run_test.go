package enforcer

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/buildinfo"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

// scrape returns what e's /metrics serves.
func scrape(e *Enforcer) string {
	rec := httptest.NewRecorder()
	endpoints(e, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// TestEndpoints: /violations serves the last pass's reports and /metrics
// the violation and eviction counts, every eviction series from the start
// (at 0, so that the first error is an increase), and the build.
func TestEndpoints(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.e.metrics.registerBuild(buildinfo.Info{Version: "v1.2.3", GitCommit: "abc", BuildDate: "today"})
	empty := httptest.NewRecorder()
	endpoints(r.e, nil, nil).ServeHTTP(empty, httptest.NewRequest("GET", "/violations", nil))
	if got := strings.TrimSpace(empty.Body.String()); got != "[]" {
		t.Errorf("/violations before any pass: %q, want []", got)
	}
	before := scrape(r.e)
	for _, want := range []string{
		`placement_enforcer_evictions_total{result="error",rule="pod-anti-affinity"} 0`,
		`placement_enforcer_evictions_total{result="pdb-blocked",rule="node-affinity"} 0`,
		`placement_enforcer_leader 0`,
		`placement_enforcer_build_info{build_date="today",git_commit="abc",go_version="` + runtime.Version() + `",kubernetes_line="` + k8sline.Minor + `",version="v1.2.3"} 1`,
	} {
		if !strings.Contains(before, want) {
			t.Errorf("/metrics before any pass lacks %s:\n%s", want, before)
		}
	}
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a"), ssdPod("q", "rs2", "a")}
	r.clock.Step(time.Second)
	r.pass()
	m := endpoints(r.e, nil, nil)

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/violations", nil))
	var reps []violationsv1alpha1.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Pod != "ns/p" || reps[0].State != violationsv1alpha1.StateEvicting || reps[0].Target != "b" {
		t.Errorf("/violations: %+v", reps)
	}

	body := scrape(r.e)
	for _, want := range []string{
		`placement_enforcer_violations{rule="node-affinity",state="evicting"} 2`,
		`placement_enforcer_evictions_total{result="evicted",rule="node-affinity"} 2`,
		`placement_enforcer_detect_to_evict_seconds_count{rule="node-affinity"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

// The leader gauge is 1 exactly while a leader's loop runs, and back to 0
// once it ends, whether the Lease was lost or the loop gave up.
func TestLeaderGauge(t *testing.T) {
	r := newRig(t, nil)
	if got := scrape(r.e); !strings.Contains(got, "placement_enforcer_leader 0\n") {
		t.Fatalf("/metrics of a replica that never led:\n%s", got)
	}
	var during string
	loop := r.e.metrics.leading(func(context.Context) { during = scrape(r.e) })
	loop(context.Background())
	if !strings.Contains(during, "placement_enforcer_leader 1\n") {
		t.Errorf("/metrics while leading:\n%s", during)
	}
	if got := scrape(r.e); !strings.Contains(got, "placement_enforcer_leader 0\n") {
		t.Errorf("/metrics after the loop ended:\n%s", got)
	}
}

func TestRelevantUpdate(t *testing.T) {
	base := ssdPod("p", "rs", "a")
	base.ResourceVersion = "1"
	change := func(f func(*v1.Pod)) *v1.Pod {
		c := base.DeepCopy()
		c.ResourceVersion = "2"
		f(c)
		return c
	}
	for name, tc := range map[string]struct {
		cur  *v1.Pod
		want bool
	}{
		"resync":            {base.DeepCopy(), true},
		"container status":  {change(func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c"}} }), false},
		"label":             {change(func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} }), true},
		"opt-in annotation": {change(func(p *v1.Pod) { p.Annotations[Annotation] = "none" }), true},
		"Ready flips":       {change(func(p *v1.Pod) { p.Status.Conditions = nil }), true},
	} {
		if got := relevantUpdate(base, tc.cur); got != tc.want {
			t.Errorf("pod %s: %v, want %v", name, got, tc.want)
		}
	}
	n := node("a", nil)
	n.ResourceVersion = "1"
	hb := n.DeepCopy()
	hb.ResourceVersion = "2"
	hb.Status.Conditions[0].LastHeartbeatTime = metav1.Now()
	if relevantUpdate(n, hb) {
		t.Error("a node heartbeat starts a pass")
	}
	lab := hb.DeepCopy()
	lab.Labels["disk"] = "ssd"
	if !relevantUpdate(n, lab) {
		t.Error("a node label change starts no pass")
	}
	cordoned := n.DeepCopy()
	cordoned.ResourceVersion = "3"
	cordoned.Spec.Unschedulable = true
	if !relevantUpdate(cordoned, hb) {
		t.Error("an uncordon starts no pass: a no-fit pod's replacement may fit now")
	}
}

// /violations answers from the last pass's reports while a pass holds the
// enforcer's lock: a long pass never stalls the endpoint.
func TestViolationsDoNotWaitForAPass(t *testing.T) {
	r := newRig(t, func(c *enforcerv1alpha1.EnforcerConfiguration) { c.GracePeriod.NodeAffinity.Duration = 0 })
	r.c.Nodes = []*v1.Node{node("a", nil), node("b", ssd)}
	r.c.Pods = []*v1.Pod{ssdPod("p", "rs", "a")}
	r.pass()
	r.e.mu.Lock() // a pass under way
	defer r.e.mu.Unlock()
	done := make(chan string, 1)
	go func() {
		rec := httptest.NewRecorder()
		endpoints(r.e, nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/violations", nil))
		done <- rec.Body.String()
	}()
	select {
	case body := <-done:
		if !strings.Contains(body, `"pod":"ns/p"`) {
			t.Errorf("/violations during a pass: %s, want the last pass's report", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("/violations waited for the pass lock")
	}
}

// The informers' transform drops managedFields and the last-applied
// configuration, and keeps what judging and placing read.
func TestStrip(t *testing.T) {
	p := pod("p", "rs", "a").NodeSelector(ssd).Obj()
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	p.Annotations[v1.LastAppliedConfigAnnotation] = "{}"
	p.Annotations[RecordAnnotation] = "{}"
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c"}}
	want := p.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, v1.LastAppliedConfigAnnotation)
	got, err := strip(p)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("stripped pod:\n%+v\nwant\n%+v", got, want)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/p", Obj: p}
	if got, err := strip(tomb); err != nil || got != any(tomb) {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}

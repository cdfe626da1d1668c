package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/enforcer"
	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// The scheduler profiles the enforcement tests' pods use, and the node
// label the second one's addedAffinity requires. No other scheduler or
// enforcer on the cluster knows them, so each test's enforcer acts only on
// its own pods.
const (
	enforcedProfile     = "enforced"
	enforcedPoolProfile = "enforced-pool"
	// noPodAffinityProfile is enforcedProfile without
	// PlacementInterPodAffinity: its pods' pod (anti-)affinity is not
	// applied when they are scheduled, so it is not enforced either.
	noPodAffinityProfile = "enforced-no-pod-affinity"
	profilePoolLabel     = "enforcer-tests/profile-pool"
	// testLabel, on every pod the tests create, holds the test's first
	// namespace: one cluster-wide watch sees a test's pods in order.
	testLabel = "enforcer-tests/test"
	// nodeOfLabel, on every node a test creates, holds the test's id, and
	// every pod of the test selects it: tests share the cluster, never a
	// node, so no replacement lands on another test's node.
	nodeOfLabel = "enforcer-tests/node-of"
)

// enforcement is the harness of the enforcer's full-cluster tests: a
// placement-scheduler of their own running enforcedProfile and
// enforcedPoolProfile, and the placement-enforcer binary each test runs
// with its own config, identity and Lease, opted in for that test's
// namespaces only.
type enforcement struct {
	schedConfig []byte
	binary      string
}

// TestEnforcement runs the enforcer's must-show scenarios, each in its own
// namespaces with its own nodes and enforcer, in parallel.
func TestEnforcement(t *testing.T) {
	h := &enforcement{}
	var err error
	if h.schedConfig, err = enforcementSchedulerConfig(); err != nil {
		t.Fatal(err)
	}
	if h.binary, err = env.EnforcerBinary(); err != nil {
		t.Fatal(err)
	}
	env.StartScheduler(t, framework.SchedulerOptions{Name: "enforcement", Config: h.schedConfig})
	var wg sync.WaitGroup
	for _, tc := range []struct {
		name string
		run  func(*testing.T, *enforcement)
	}{
		{"NodeAffinityKinds", testNodeAffinityKinds},
		{"NoFitThenFit", testNoFitThenFit},
		{"FlapInsideGrace", testFlapInsideGrace},
		{"CapsAndRoom", testCapsAndRoom},
		{"MutualAntiAffinity", testMutualAntiAffinity},
		{"PodAffinityTargetDeleted", testPodAffinityTargetDeleted},
		{"NamespaceSelectorFlip", testNamespaceSelectorFlip},
		{"Protected", testProtected},
		{"DryRunThenLive", testDryRunThenLive},
		{"DryRunSplitUnderCaps", testDryRunSplitUnderCaps},
		{"LeaderKilledMidBatch", testLeaderKilledMidBatch},
		{"LeaderKilledMidGrace", testLeaderKilledMidGrace},
		{"GraceAfterDryRunGap", testGraceAfterDryRunGap},
		{"OthersStuckEvictions", testOthersStuckEvictions},
		{"JobProtected", testJobProtected},
		{"JobEvictedWhenItsPolicyIgnoresDisruption", testJobEvictedWhenItsPolicyIgnoresDisruption},
		{"AffinityTargetPDBBlocked", testAffinityTargetPDBBlocked},
		{"Storm", testStorm},
		{"ProfileWithoutPodAffinity", testProfileWithoutPodAffinity},
		{"LoopsStop", testLoopsStop},
	} {
		// All at once, whatever -parallel says: they wait on the
		// cluster, not on CPU, and the no-fit test's 60 s window is the
		// whole set's floor only if the others run beside it.
		wg.Go(func() { t.Run(tc.name, func(t *testing.T) { tc.run(t, h) }) })
	}
	wg.Wait()
}

// enforcementSchedulerConfig is the examples' two-profile config with the
// profiles renamed, the pool label the tests' own, and no leader election
// (the examples' scheduler holds the Lease), plus a third profile, the first
// one without PlacementInterPodAffinity.
func enforcementSchedulerConfig() ([]byte, error) {
	data, err := manifests.Example("profile-pool/scheduler-config.yaml")
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	doc["leaderElection"] = map[string]any{"leaderElect": false}
	profiles, _ := doc["profiles"].([]any)
	if len(profiles) != 2 {
		return nil, fmt.Errorf("profile-pool config: %d profiles, want 2", len(profiles))
	}
	profiles[0].(map[string]any)["schedulerName"] = enforcedProfile
	pool := profiles[1].(map[string]any)
	pool["schedulerName"] = enforcedPoolProfile
	pool["pluginConfig"] = []any{map[string]any{"name": "PlacementNodeAffinity", "args": map[string]any{
		"addedAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
				map[string]any{"key": profilePoolLabel, "operator": "In", "values": []any{"yes"}}}}}}}}}}
	var noPods map[string]any
	if err := yaml.Unmarshal(mustMarshal(profiles[0]), &noPods); err != nil {
		return nil, err
	}
	noPods["schedulerName"] = noPodAffinityProfile
	noPods["pluginConfig"] = nil
	mp := noPods["plugins"].(map[string]any)["multiPoint"].(map[string]any)
	var enabled []any
	for _, p := range mp["enabled"].([]any) {
		if p.(map[string]any)["name"] != "PlacementInterPodAffinity" {
			enabled = append(enabled, p)
		}
	}
	mp["enabled"] = enabled
	doc["profiles"] = append(profiles, noPods)
	return yaml.Marshal(doc)
}

// enforcerConfig is a test enforcer's configuration: short grace periods,
// caps and rate out of the way unless a test sets them.
type enforcerConfig struct {
	grace           time.Duration
	dryRun          bool
	perNode, perNS  int
	total           int
	rate            float64
	burst           int
	leaseDuration   time.Duration
	backoffInitial  time.Duration
	evictWithoutFit bool
	evictJobPods    bool
	// loopEvictions and loopWindow set loops (zero: the defaults).
	loopEvictions int
	loopWindow    time.Duration
	// otherEvictionsFor is limits.otherEvictionsFor; 0: the default.
	otherEvictionsFor time.Duration
}

func defaultEnforcerConfig() enforcerConfig {
	return enforcerConfig{grace: 2 * time.Second, perNode: 10, perNS: 20, total: 50, rate: 20, burst: 20,
		leaseDuration: 15 * time.Second, backoffInitial: 2 * time.Second}
}

// run is one test's enforcer set-up: its namespaces, its identity (the
// shipped RBAC), the user name the audit log shows for it.
type run struct {
	h    *enforcement
	nss  []string
	id   string // unique to the test: its first namespace's random suffix
	kube string
	user string
}

// newRun creates n namespaces for t (the first holds the enforcer's
// ServiceAccount and Lease) and the enforcer's identity.
func (h *enforcement) newRun(t *testing.T, n int) *run {
	r := &run{h: h}
	for range n {
		r.nss = append(r.nss, env.NewNamespace(t, nil))
	}
	r.id = r.nss[0][len(r.nss[0])-5:]
	r.kube, r.user = env.EnforcerIdentity(t, r.nss[0])
	// Registered before any enforcer starts, so it runs once they are
	// stopped: every request they made is in the audit log by then.
	t.Cleanup(func() { checkRights(t, r.user) })
	return r
}

// key is a node label key unique to the test (node labels and topology
// domains are cluster-wide).
func (r *run) key(name string) string { return "enforcer-tests/" + name + "-" + r.id }

// own confines pod to the test's nodes.
func (r *run) own(pod *v1.Pod) *v1.Pod {
	if pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = map[string]string{}
	}
	pod.Spec.NodeSelector[nodeOfLabel] = r.id
	return pod
}

// createPod creates a bare pod confined to the test's nodes.
func (r *run) createPod(t *testing.T, pod *v1.Pod) *v1.Pod {
	t.Helper()
	return env.CreatePod(t, r.own(pod))
}

// start runs one placement-enforcer with cfg, opted in for r's namespaces.
func (r *run) start(t *testing.T, cfg enforcerConfig) *framework.Enforcer {
	t.Helper()
	le := cfg.leaseDuration
	doc := map[string]any{
		"namespaces": map[string]any{"selector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": v1.LabelMetadataName, "operator": "In", "values": r.nss}}}},
		"gracePeriod":        map[string]any{"nodeAffinity": cfg.grace.String(), "podAffinity": cfg.grace.String(), "podAntiAffinity": cfg.grace.String()},
		"dryRun":             cfg.dryRun,
		"evictWithoutFit":    cfg.evictWithoutFit,
		"resync":             "20s",
		"evictionsPerSecond": cfg.rate,
		"burst":              cfg.burst,
		"limits":             map[string]any{"perNode": cfg.perNode, "perNamespace": cfg.perNS, "total": cfg.total},
		"backoff":            map[string]any{"initial": cfg.backoffInitial.String(), "max": (4 * cfg.backoffInitial).String()},
		"leaderElection": map[string]any{"leaseNamespace": r.nss[0], "leaseDuration": le.String(),
			"renewDeadline": (le * 2 / 3).String(), "retryPeriod": (le / 5).String()},
	}
	if cfg.evictJobPods {
		doc["evictJobPods"] = true
	}
	if cfg.loopEvictions != 0 || cfg.loopWindow != 0 {
		loops := map[string]any{}
		if cfg.loopEvictions != 0 {
			loops["evictions"] = cfg.loopEvictions
		}
		if cfg.loopWindow != 0 {
			loops["window"] = cfg.loopWindow.String()
		}
		doc["loops"] = loops
	}
	if cfg.otherEvictionsFor > 0 {
		doc["limits"].(map[string]any)["otherEvictionsFor"] = cfg.otherEvictionsFor.String()
	}
	body, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return env.StartEnforcer(t, framework.EnforcerOptions{Binary: r.h.binary, Config: string(body), SchedulerConfig: r.h.schedConfig, Kubeconfig: r.kube})
}

// nodes creates KWOK nodes <ns>-<name> with the given labels and room for
// pods pods, and waits until each is Ready and untainted (the node
// lifecycle controller lifts the not-ready taint once KWOK reports Ready).
func (r *run) nodes(t *testing.T, pods int64, labels map[string]map[string]string) {
	t.Helper()
	var names []string
	for name, l := range labels {
		n := framework.SchedulableNode(r.nss[0], name).Capacity("8", "32Gi", pods).Labels(l).Label(nodeOfLabel, r.id).Obj()
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		env.CreateNodes(t, n)
		names = append(names, n.Name)
	}
	env.Poll(t, "the test's nodes Ready and untainted", func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := env.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeUp(n) {
				return false, nil
			}
		}
		return true, nil
	})
}

// noFit counts the pods enf's /violations reports no-fit; false when it
// does not answer (yet).
func noFit(enf *framework.Enforcer) (int, bool) {
	reports, err := enf.Violations()
	if err != nil {
		return 0, false
	}
	n := 0
	for _, rep := range reports {
		if rep.State == "no-fit" {
			n++
		}
	}
	return n, true
}

// nodeUp: KWOK reports n Ready and the node lifecycle controller has lifted
// its not-ready taint.
func nodeUp(n *v1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == v1.TaintNodeNotReady || taint.Key == v1.TaintNodeUnreachable {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// node is the full name of the test's node name.
func (r *run) node(name string) string { return r.nss[0] + "-" + name }

// pod is a pod template for ns scheduled by profile, labelled app=app.
func (r *run) pod(ns, app, profile string) *testutil.PodWrapper {
	return testutil.MakePod(ns, app).SchedulerName(profile).Label("app", app).Label(testLabel, r.nss[0])
}

// replicaSet creates a ReplicaSet of replicas pods from pod (its labels
// select them) and returns it.
func (r *run) replicaSet(t *testing.T, pod *v1.Pod, replicas int32) *appsv1.ReplicaSet {
	t.Helper()
	r.own(pod)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": pod.Labels["app"]}},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec},
		},
	}
	got, err := env.Client.AppsV1().ReplicaSets(pod.Namespace).Create(context.Background(), rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// pods lists the live (not terminating) pods of app in ns.
func pods(ctx context.Context, ns, app string) ([]v1.Pod, error) {
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	var out []v1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func ready(p *v1.Pod) bool {
	c := framework.PodCondition(p, v1.PodReady)
	return p.DeletionTimestamp == nil && c != nil && c.Status == v1.ConditionTrue
}

// waitRunning waits until app in ns has exactly n live pods, every one
// bound, Ready, and on one of nodes (any node if none given), and returns
// them.
func waitRunning(t *testing.T, ns, app string, n int, nodes ...string) []v1.Pod {
	t.Helper()
	var got []v1.Pod
	env.Poll(t, fmt.Sprintf("%d Ready pods of %s/%s on %v", n, ns, app, nodes), func(ctx context.Context) (bool, error) {
		var err error
		if got, err = pods(ctx, ns, app); err != nil || len(got) != n {
			return false, err
		}
		for i := range got {
			if !ready(&got[i]) || len(nodes) > 0 && !contains(nodes, got[i].Spec.NodeName) {
				return false, nil
			}
		}
		return true, nil
	})
	return got
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitEvicted waits until the pod uid carries the Eviction API's
// DisruptionTarget condition (or is gone after having it: KWOK deletes
// terminating pods at once, so the test's watch is the witness) and
// returns when that was first seen.
func (w *podWatch) waitEvicted(t *testing.T, uid types.UID, what string) time.Time {
	t.Helper()
	var at time.Time
	env.Poll(t, what+" evicted through the Eviction API", func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		at = w.evictedAt[uid]
		return !at.IsZero(), nil
	})
	return at
}

// podWatch records, from one watch of pods (in the apiserver's order),
// every pod's latest state, the pods deleted, when each was first seen with
// the Eviction API's DisruptionTarget condition, and whatever check the
// test hooks in at each event.
type podWatch struct {
	mu        sync.Mutex
	pods      map[types.UID]*v1.Pod
	gone      map[types.UID]bool
	evictedAt map[types.UID]time.Time
	onEvent   func(map[types.UID]*v1.Pod)
	stop      func()
}

// watchPods watches the pods of ns ("" for all) that match the label
// selector, from a listed state, until stop or the test's end.
func watchPods(t *testing.T, ns, selector string, onEvent func(map[types.UID]*v1.Pod)) *podWatch {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: selector}
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	w := &podWatch{pods: map[types.UID]*v1.Pod{}, gone: map[types.UID]bool{}, evictedAt: map[types.UID]time.Time{}, onEvent: onEvent}
	for i := range list.Items {
		w.pods[list.Items[i].UID] = &list.Items[i]
	}
	sel.ResourceVersion = list.ResourceVersion
	wi, err := env.Client.CoreV1().Pods(ns).Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.pods, p.UID)
				w.gone[p.UID] = true
			} else {
				w.pods[p.UID] = p
			}
			if c := framework.PodCondition(p, v1.DisruptionTarget); c != nil && c.Reason == "EvictionByEvictionAPI" && w.evictedAt[p.UID].IsZero() {
				w.evictedAt[p.UID] = time.Now()
			}
			if w.onEvent != nil {
				w.onEvent(w.pods)
			}
			w.mu.Unlock()
		}
	}()
	var once sync.Once
	w.stop = func() { once.Do(func() { wi.Stop(); <-done }) }
	t.Cleanup(w.stop)
	return w
}

// watchPods watches every pod of the test, in all its namespaces.
func (r *run) watchPods(t *testing.T, onEvent func(map[types.UID]*v1.Pod)) *podWatch {
	t.Helper()
	return watchPods(t, "", testLabel+"="+r.nss[0], onEvent)
}

// evicted returns the UIDs the watch saw evicted.
func (w *podWatch) evicted() map[types.UID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[types.UID]bool{}
	for uid := range w.evictedAt {
		out[uid] = true
	}
	return out
}

// eviction is one eviction request the apiserver answered, from its audit
// log.
type eviction struct {
	Namespace, Pod, User string
	Code                 int32
	DryRun               bool
	At                   time.Time
}

func (e eviction) accepted() bool { return e.Code >= 200 && e.Code < 300 }

// evictions reads every eviction request for pods in nss from the audit
// log, in log order.
func evictions(t *testing.T, nss ...string) []eviction {
	t.Helper()
	f, err := os.Open(env.AuditLog)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []eviction
	rd := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := rd.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // a line still being written: the next read sees it whole
		}
		if err != nil {
			t.Fatalf("audit log %s: %v", env.AuditLog, err)
		}
		if !bytes.Contains(line, []byte(`"subresource":"eviction"`)) {
			continue
		}
		var ev struct {
			auditv1.Event
			RequestObject *struct {
				DeleteOptions *metav1.DeleteOptions `json:"deleteOptions"`
			} `json:"requestObject,omitempty"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("audit log %s: %v in %q", env.AuditLog, err, line)
		}
		o := ev.ObjectRef
		if o == nil || !contains(nss, o.Namespace) || ev.ResponseStatus == nil || ev.Stage != auditv1.StageResponseComplete {
			continue
		}
		e := eviction{Namespace: o.Namespace, Pod: o.Name, User: ev.User.Username, Code: ev.ResponseStatus.Code, At: ev.RequestReceivedTimestamp.Time}
		if ev.RequestObject != nil && ev.RequestObject.DeleteOptions != nil {
			e.DryRun = len(ev.RequestObject.DeleteOptions.DryRun) > 0
		}
		out = append(out, e)
	}
	return out
}

// acceptedEvictions waits until the audit log holds want accepted
// (non-dry-run) evictions of pods in r's namespaces, checks that every one
// was asked by the enforcer's own identity and that no pod was evicted
// twice, and returns them by pod.
func (r *run) acceptedEvictions(t *testing.T, want int) map[string]eviction {
	t.Helper()
	var got []eviction
	env.Poll(t, fmt.Sprintf("%d accepted evictions in the audit log", want), func(context.Context) (bool, error) {
		got = evictionsAccepted(t, r.nss...)
		return len(got) >= want, nil
	})
	out := map[string]eviction{}
	for _, e := range got {
		if e.User != r.user {
			t.Errorf("pod %s/%s evicted by %s, want the enforcer's %s", e.Namespace, e.Pod, e.User, r.user)
		}
		key := e.Namespace + "/" + e.Pod
		if _, twice := out[key]; twice {
			t.Errorf("pod %s evicted twice", key)
		}
		out[key] = e
	}
	if len(got) != want {
		t.Errorf("%d accepted evictions, want %d: %+v", len(got), want, got)
	}
	return out
}

// waitReport polls the enforcer's /violations until cond holds for the
// report of pod ns/name (nil when it is not reported), and returns it.
func waitReport(t *testing.T, enf *framework.Enforcer, pod, what string, cond func(*framework.EnforcerReport) bool) *framework.EnforcerReport {
	t.Helper()
	var got *framework.EnforcerReport
	env.Poll(t, fmt.Sprintf("/violations: %s %s", pod, what), func(context.Context) (bool, error) {
		if enf.Exited() {
			return false, fmt.Errorf("placement-enforcer exited: %v", enf.Err())
		}
		reports, err := enf.Violations()
		if err != nil {
			return false, nil // not serving yet
		}
		got = nil
		for i := range reports {
			if reports[i].Pod == pod {
				got = &reports[i]
			}
		}
		return cond(got), nil
	})
	return got
}

func inState(state string) func(*framework.EnforcerReport) bool {
	return func(r *framework.EnforcerReport) bool { return r != nil && r.State == state }
}

// metric reads the sample name{labels} from enf's /metrics (0 if the
// series is absent, as a counter never incremented is).
func metric(t *testing.T, enf *framework.Enforcer, name string, labels map[string]string) float64 {
	t.Helper()
	body, err := enf.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(body, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		n, rest, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				got[k] = strings.Trim(v, `"`)
			}
		}
		if !maps.Equal(got, labels) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("/metrics: %q: %v", line, err)
		}
		return f
	}
	return 0
}

// holdFor asserts cond, at every poll, for d: an invariant over a window
// the scenario itself defines (the no-fit test's 60 s), not a wait for
// something to happen.
func holdFor(t *testing.T, d time.Duration, what string, cond func(context.Context) error) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		return false, cond(ctx)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: %v", what, err)
	}
}

// notEvicted fails unless each pod exists, is not terminating, has no
// DisruptionTarget condition, and no eviction of it was accepted (a
// refused one, a PDB's 429, may have been asked).
func (r *run) notEvicted(t *testing.T, pods ...*v1.Pod) {
	t.Helper()
	accepted := map[string]bool{}
	for _, e := range evictions(t, r.nss...) {
		if !e.DryRun && e.accepted() {
			accepted[e.Namespace+"/"+e.Pod] = true
		}
	}
	for _, p := range pods {
		got, err := env.Client.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Errorf("pod %s/%s: %v", p.Namespace, p.Name, err)
		case got.UID != p.UID || got.DeletionTimestamp != nil || framework.PodCondition(got, v1.DisruptionTarget) != nil:
			t.Errorf("pod %s/%s was disrupted: %+v", p.Namespace, p.Name, got.Status.Conditions)
		}
		if accepted[p.Namespace+"/"+p.Name] {
			t.Errorf("pod %s/%s was evicted", p.Namespace, p.Name)
		}
	}
}

// checkRate fails if, in any window between two accepted evictions, more
// were accepted than the token bucket allows: burst + rate × the window
// (plus one for the bucket's refill at the window's edges).
func checkRate(t *testing.T, evicted map[string]eviction, rate float64, burst int) {
	t.Helper()
	var times []time.Time
	for _, e := range evicted {
		times = append(times, e.At)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	for i := range times {
		for j := i; j < len(times); j++ {
			allowed := float64(burst) + rate*times[j].Sub(times[i]).Seconds() + 1
			if n := j - i + 1; float64(n) > allowed {
				t.Errorf("%d evictions within %s: the rate limit (%g/s, burst %d) allows %g", n, times[j].Sub(times[i]), rate, burst, allowed)
				return
			}
		}
	}
}

// A nodeSelector-only pod, a NotIn rule broken by adding a label, and a
// profile's addedAffinity: each enforced, each replacement running where
// the rule holds.
func testNodeAffinityKinds(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	r.nodes(t, 10, map[string]map[string]string{
		"a": {"sel": "yes", "pin": "yes", profilePoolLabel: "yes"},
		"b": {},
	})
	r.replicaSet(t, r.pod(ns, "selector", enforcedProfile).NodeSelector(map[string]string{"sel": "yes"}).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "notin", enforcedProfile).RequiredNodeTerms(testutil.Term(
		testutil.Expr("pin", v1.NodeSelectorOpIn, "yes"), testutil.Expr("avoid", v1.NodeSelectorOpNotIn, "yes"))).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "profile", enforcedPoolProfile).Obj(), 1)
	var before []v1.Pod
	for _, app := range []string{"selector", "notin", "profile"} {
		before = append(before, waitRunning(t, ns, app, 1, r.node("a"))...)
	}
	cfg := defaultEnforcerConfig()
	r.start(t, cfg)
	w := r.watchPods(t, nil)

	for _, k := range []string{"sel", "pin", profilePoolLabel} {
		env.SetNodeLabel(t, r.node("b"), k, "yes")
	}
	broken := time.Now()
	env.SetNodeLabel(t, r.node("a"), "sel", "")
	env.SetNodeLabel(t, r.node("a"), "avoid", "yes") // breaks NotIn by adding
	env.SetNodeLabel(t, r.node("a"), profilePoolLabel, "")
	for _, p := range before {
		if d := w.waitEvicted(t, p.UID, p.Name).Sub(broken); d > cfg.grace+5*time.Second {
			t.Errorf("%s evicted %s after its rule broke, want within the %s grace period + 5s", p.Name, d, cfg.grace)
		}
		env.WaitForEvent(t, ns, p.Name, "PlacementEvicted", "evicted for node-affinity")
		env.WaitForEvent(t, ns, p.Name, "PlacementEvicted", "fits on "+r.node("b"))
	}
	for _, app := range []string{"selector", "notin", "profile"} {
		waitRunning(t, ns, app, 1, r.node("b"))
	}
	r.acceptedEvictions(t, 3)
}

// No other node fits: kept and reported no-fit for 60 s, no eviction;
// a second node labelled into the pool: evicted within 5 s.
func testNoFitThenFit(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	r.nodes(t, 10, map[string]map[string]string{"a": {"pool": "yes"}, "b": {}})
	r.replicaSet(t, r.pod(ns, "web", enforcedProfile).NodeSelector(map[string]string{"pool": "yes"}).Obj(), 1)
	p := waitRunning(t, ns, "web", 1, r.node("a"))[0]
	enf := r.start(t, defaultEnforcerConfig())
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, r.node("a"), "pool", "")
	waitReport(t, enf, ns+"/"+p.Name, "no-fit", inState("no-fit"))
	env.WaitForEvent(t, ns, p.Name, "PlacementNoFit", "no other node")
	holdFor(t, 60*time.Second, "kept while no other node fits", func(ctx context.Context) error {
		reports, err := enf.Violations()
		if err != nil {
			return err
		}
		for _, rep := range reports {
			if rep.Pod == ns+"/"+p.Name && rep.State != "no-fit" {
				return fmt.Errorf("reported %s (%s), want no-fit", rep.State, rep.Detail)
			}
		}
		if len(w.evicted()) > 0 {
			return errors.New("evicted although no other node fits")
		}
		return nil
	})
	r.notEvicted(t, &p)
	if v := metric(t, enf, "placement_enforcer_violations", map[string]string{"rule": "node-affinity", "state": "no-fit"}); v != 1 {
		t.Errorf("placement_enforcer_violations{no-fit} = %g, want 1", v)
	}

	labelled := time.Now()
	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	at := w.waitEvicted(t, p.UID, p.Name)
	if d := at.Sub(labelled); d > 5*time.Second {
		t.Errorf("evicted %s after a node joined the pool, want within 5s", d)
	}
	waitRunning(t, ns, "web", 1, r.node("b"))
	r.acceptedEvictions(t, 1)
	if v := metric(t, enf, "placement_enforcer_evictions_total", map[string]string{"rule": "node-affinity", "result": "evicted"}); v != 1 {
		t.Errorf("placement_enforcer_evictions_total{evicted} = %g, want 1", v)
	}
}

// A label removed and restored inside the grace period evicts nothing.
// A control pod whose label stays removed, from the same moment, is
// evicted once the grace period is over: proof that the flapped pod's
// grace period ran out too without an eviction.
func testFlapInsideGrace(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	// b joins the pool only once both pods run off it.
	r.nodes(t, 10, map[string]map[string]string{"a": {"pool": "yes", "slot": "flap"}, "c": {"pool": "yes", "slot": "ctl"}, "b": {}})
	r.replicaSet(t, r.pod(ns, "flap", enforcedProfile).NodeSelector(map[string]string{"pool": "yes"}).
		RequiredNodeTerms(testutil.Term(testutil.Expr("slot", v1.NodeSelectorOpNotIn, "ctl"))).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "ctl", enforcedProfile).NodeSelector(map[string]string{"pool": "yes"}).
		RequiredNodeTerms(testutil.Term(testutil.Expr("slot", v1.NodeSelectorOpNotIn, "flap"))).Obj(), 1)
	flap := waitRunning(t, ns, "flap", 1, r.node("a"))[0]
	ctl := waitRunning(t, ns, "ctl", 1, r.node("c"))[0]
	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	cfg := defaultEnforcerConfig()
	cfg.grace = 15 * time.Second
	enf := r.start(t, cfg)
	w := r.watchPods(t, nil)

	removed := time.Now()
	env.SetNodeLabel(t, r.node("a"), "pool", "")
	env.SetNodeLabel(t, r.node("c"), "pool", "")
	waitReport(t, enf, ns+"/"+flap.Name, "in its grace period", inState("grace"))
	env.WaitForEvent(t, ns, flap.Name, "PlacementViolation", "grace period")
	env.SetNodeLabel(t, r.node("a"), "pool", "yes")
	if d := time.Since(removed); d > cfg.grace/2 {
		t.Fatalf("the label was restored %s after its removal: too close to the %s grace period to prove anything", d, cfg.grace)
	}
	waitReport(t, enf, ns+"/"+flap.Name, "forgotten", func(r *framework.EnforcerReport) bool { return r == nil })
	w.waitEvicted(t, ctl.UID, "the control pod")
	waitRunning(t, ns, "ctl", 1, r.node("b"))
	r.notEvicted(t, &flap)
	r.acceptedEvictions(t, 1)
}

// 100 opted-in pods (ten ReplicaSets in two namespaces) on ten nodes
// leave the pool; the new pool has room for 50: exactly 50 evicted, every
// replacement scheduled, the other 50 reported no-fit; the caps on
// evictions in flight (per node, per namespace, in total) hold throughout,
// and at least one of them binds.
func testCapsAndRoom(t *testing.T, h *enforcement) {
	r := h.newRun(t, 2)
	const owners, replicas = 5, 10 // per namespace
	old := map[string]map[string]string{}
	var oldNames []string
	for i := range 10 {
		name := fmt.Sprintf("old-%d", i)
		old[name] = map[string]string{"pool": "yes"}
		oldNames = append(oldNames, r.node(name))
	}
	r.nodes(t, 10, old)
	newNodes := map[string]map[string]string{}
	var newNames []string
	for i := range 5 {
		name := fmt.Sprintf("new-%d", i)
		newNodes[name] = map[string]string{}
		newNames = append(newNames, r.node(name))
	}
	r.nodes(t, 10, newNodes)
	var apps [][2]string // namespace, app
	for _, ns := range r.nss {
		for i := range owners {
			app := fmt.Sprintf("app-%d", i)
			r.replicaSet(t, r.pod(ns, app, enforcedProfile).NodeSelector(map[string]string{"pool": "yes"}).Obj(), replicas)
			apps = append(apps, [2]string{ns, app})
		}
	}
	for _, a := range apps {
		waitRunning(t, a[0], a[1], replicas, oldNames...)
	}
	cfg := defaultEnforcerConfig()
	cfg.perNode, cfg.perNS, cfg.total = 2, 3, 4 // the rate stays out of the way: the caps bind

	caps := newCapWatch(cfg, replicas)
	w := r.watchPods(t, caps.observe)

	for _, n := range newNames {
		env.SetNodeLabel(t, n, "pool", "yes")
	}
	for _, n := range oldNames {
		env.SetNodeLabel(t, n, "pool", "")
	}
	// Started once all 100 violate, so their grace periods end in one
	// pass and the caps, not the order of the relabels, decide how many
	// go at once.
	enf := r.start(t, cfg)
	r.acceptedEvictions(t, 50)
	// What the last look saw, for a failure to say which way it went (an
	// eviction too many leaves a replacement Pending; one too few, 49
	// moved and the rest kept).
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: %s; accepted evictions in the audit log: %d", last, len(evictionsAccepted(t, r.nss...)))
		}
	})
	env.Poll(t, "50 pods Ready on the new pool, 50 left on the old one, none Pending", func(ctx context.Context) (bool, error) {
		onNew, onOld := 0, 0
		var notReady []string
		for _, a := range apps {
			ps, err := pods(ctx, a[0], a[1])
			if err != nil {
				return false, err
			}
			for i := range ps {
				switch {
				case !ready(&ps[i]):
					notReady = append(notReady, fmt.Sprintf("%s/%s on %q", ps[i].Namespace, ps[i].Name, ps[i].Spec.NodeName))
				case contains(newNames, ps[i].Spec.NodeName):
					onNew++
				case contains(oldNames, ps[i].Spec.NodeName):
					onOld++
				}
			}
		}
		last = fmt.Sprintf("%d Ready on the new pool, %d on the old one, not Ready: %v", onNew, onOld, notReady)
		return len(notReady) == 0 && onNew == 50 && onOld == 50, nil
	})
	// The other 50 are kept and said so; a pass after all that has
	// evicted nobody more.
	env.Poll(t, "/violations: 50 pods no-fit", func(context.Context) (bool, error) {
		n, ok := noFit(enf)
		return ok && n == 50, nil
	})
	r.acceptedEvictions(t, 50)
	if len(w.evicted()) != 50 {
		t.Errorf("the watch saw %d pods evicted, want 50", len(w.evicted()))
	}
	caps.check(t, w, true)
}

// capWatch follows the evictions in flight as seen from outside: from an
// eviction until its owner again has every replica Ready (one watch, in the
// apiserver's order, so a replacement's readiness is seen before any
// eviction it allowed), and records the most at once per node, per
// namespace and in total.
type capWatch struct {
	cfg                      enforcerConfig
	replicas                 int
	inFlight                 map[string]capFlight // by owner (namespace/app)
	maxNode, maxNS, maxTotal int
	errs                     []string
}

type capFlight struct{ node, ns string }

func newCapWatch(cfg enforcerConfig, replicas int) *capWatch {
	return &capWatch{cfg: cfg, replicas: replicas, inFlight: map[string]capFlight{}}
}

// observe is the pod watch's onEvent.
func (c *capWatch) observe(all map[types.UID]*v1.Pod) {
	readyOf := map[string]int{}
	for _, p := range all {
		if ready(p) {
			readyOf[p.Namespace+"/"+p.Labels["app"]]++
		}
	}
	for owner := range c.inFlight {
		if readyOf[owner] >= c.replicas {
			delete(c.inFlight, owner)
		}
	}
	for _, p := range all {
		if cond := framework.PodCondition(p, v1.DisruptionTarget); cond != nil && cond.Reason == "EvictionByEvictionAPI" {
			c.inFlight[p.Namespace+"/"+p.Labels["app"]] = capFlight{p.Spec.NodeName, p.Namespace}
		}
	}
	perNode, perNS := map[string]int{}, map[string]int{}
	for _, f := range c.inFlight {
		perNode[f.node]++
		perNS[f.ns]++
		c.maxNode, c.maxNS = max(c.maxNode, perNode[f.node]), max(c.maxNS, perNS[f.ns])
	}
	c.maxTotal = max(c.maxTotal, len(c.inFlight))
	if len(c.errs) < 5 && (c.maxNode > c.cfg.perNode || c.maxNS > c.cfg.perNS || c.maxTotal > c.cfg.total) {
		c.errs = append(c.errs, fmt.Sprintf("%v", c.inFlight))
	}
}

// check fails t if a cap was exceeded at any event of w, or, when binding,
// if none was ever reached (the test then proved nothing about them).
func (c *capWatch) check(t *testing.T, w *podWatch, binding bool) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("evictions in flight at most: %d per node, %d per namespace, %d in total", c.maxNode, c.maxNS, c.maxTotal)
	if len(c.errs) > 0 {
		t.Errorf("caps (perNode %d, perNamespace %d, total %d) exceeded: %v", c.cfg.perNode, c.cfg.perNS, c.cfg.total, c.errs)
	}
	if binding && c.maxNode < c.cfg.perNode && c.maxNS < c.cfg.perNS && c.maxTotal < c.cfg.total {
		t.Errorf("no cap was ever reached, so this test proved nothing about them")
	}
}

// Two opted-in pods whose anti-affinity rejects each other after a
// relabel: exactly one (the younger; either on a creationTimestamp tie)
// evicted, its replacement scheduled; a pod that did not opt in, violating
// its own anti-affinity in the same domain, is never evicted, nor is
// anyone evicted for its term.
func testMutualAntiAffinity(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	rack := r.key("rack")
	r.nodes(t, 10, map[string]map[string]string{
		"a": {rack: "r1", "host-x": "yes"},
		"b": {rack: "r2", "host-y": "yes"},
		"c": {rack: "r3"},
		"d": {rack: "r4", "host-z": "yes"},
	})
	anti := testutil.AffinityTerm(rack, testutil.Selector(map[string]string{"group": "mutual"}))
	mk := func(app, host string) *v1.Pod {
		return r.pod(ns, app, enforcedProfile).Label("group", "mutual").NodeSelector(map[string]string{host: "yes"}).RequiredPodAntiAffinity(anti).Obj()
	}
	r.replicaSet(t, mk("x", "host-x"), 1)
	x := waitRunning(t, ns, "x", 1, r.node("a"))[0]
	r.replicaSet(t, mk("y", "host-y"), 1)
	y := waitRunning(t, ns, "y", 1, r.node("b"))[0]
	// The bystander did not opt in: its own term rejects x and y's group.
	z := r.pod(ns, "z", enforcedProfile).NodeSelector(map[string]string{"host-z": "yes"}).RequiredPodAntiAffinity(anti).Obj()
	z.Annotations = map[string]string{"placement-scheduler.io/enforce": "none"}
	r.replicaSet(t, z, 1)
	zp := waitRunning(t, ns, "z", 1, r.node("d"))[0]
	enf := r.start(t, defaultEnforcerConfig())
	w := r.watchPods(t, nil)

	// Room for either one's replacement, in a domain of its own.
	env.SetNodeLabel(t, r.node("c"), "host-x", "yes")
	env.SetNodeLabel(t, r.node("c"), "host-y", "yes")
	env.SetNodeLabel(t, r.node("b"), rack, "r1")
	env.SetNodeLabel(t, r.node("d"), rack, "r1")
	env.Poll(t, "one of x and y evicted", func(context.Context) (bool, error) { return len(w.evicted()) > 0, nil })
	gone, kept, app := &y, &x, "y"
	if w.evicted()[x.UID] {
		gone, kept, app = &x, &y, "x"
	}
	if x.CreationTimestamp.Before(&y.CreationTimestamp) && gone.UID != y.UID {
		t.Errorf("x (created %s) was evicted, not the younger y (created %s)", x.CreationTimestamp, y.CreationTimestamp)
	}
	waitRunning(t, ns, app, 1, r.node("c"))
	// The kept one's violation cleared with the other gone; z's is its
	// own, and z did not opt in: neither is reported, nobody else is
	// evicted.
	env.Poll(t, "/violations: nothing left in the namespace, never z", func(context.Context) (bool, error) {
		reports, err := enf.Violations()
		if err != nil {
			return false, err
		}
		left := 0
		for _, rep := range reports {
			switch {
			case rep.Pod == ns+"/"+zp.Name:
				return false, fmt.Errorf("z, which did not opt in, is reported: %+v", rep)
			case rep.Pod == ns+"/"+kept.Name && rep.State != "grace":
				return false, fmt.Errorf("%s went past its grace period: %+v", kept.Name, rep)
			case strings.HasPrefix(rep.Pod, ns+"/"):
				left++
			}
		}
		return left == 0, nil
	})
	if ev := r.acceptedEvictions(t, 1); len(ev) == 1 {
		if _, ok := ev[ns+"/"+gone.Name]; !ok {
			t.Errorf("evicted %v, want %s", ev, gone.Name)
		}
	}
	r.notEvicted(t, kept, &zp)
}

// A pod-affinity target deleted: the dependent moves to the domain
// that still has a match; a dependent whose target was the last one
// anywhere is kept, no-fit.
func testPodAffinityTargetDeleted(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	rack := r.key("rack")
	r.nodes(t, 10, map[string]map[string]string{"a": {rack: "r1"}, "b": {rack: "r2"}, "c": {rack: "r3"}})
	target := func(name, app, node string) *v1.Pod {
		return r.createPod(t, r.pod(ns, name, enforcedProfile).Label("app", app).NodeName(r.node(node)).Obj())
	}
	t1 := target("t1", "target", "a")
	target("t2", "target", "b")
	t3 := target("t3", "last", "c")
	dep := func(app, to string) *v1.Pod {
		return r.pod(ns, app, enforcedProfile).RequiredPodAffinity(testutil.AffinityTerm(rack, testutil.Selector(map[string]string{"app": to}))).Obj()
	}
	// The dependents land next to their targets (a, c): the only domains
	// with a match... or b for "moving": pinned off b by node affinity
	// until the test lifts it.
	movable := dep("movable", "target")
	movable.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{testutil.Term(testutil.Expr("closed", v1.NodeSelectorOpDoesNotExist))}}}
	env.SetNodeLabel(t, r.node("b"), "closed", "yes")
	r.replicaSet(t, movable, 1)
	r.replicaSet(t, dep("stuck", "last"), 1)
	m := waitRunning(t, ns, "movable", 1, r.node("a"))[0]
	s := waitRunning(t, ns, "stuck", 1, r.node("c"))[0]
	env.SetNodeLabel(t, r.node("b"), "closed", "")
	enf := r.start(t, defaultEnforcerConfig())
	w := r.watchPods(t, nil)

	for _, p := range []*v1.Pod{t1, t3} {
		if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
	}
	rep := waitReport(t, enf, ns+"/"+s.Name, "no-fit", inState("no-fit"))
	if rep.Rule != "pod-affinity" {
		t.Errorf("stuck: rule %s, want pod-affinity", rep.Rule)
	}
	w.waitEvicted(t, m.UID, "the dependent whose target left")
	waitRunning(t, ns, "movable", 1, r.node("b"))
	r.acceptedEvictions(t, 1)
	r.notEvicted(t, &s)
}

// A namespace relabel flips which peer a namespaceSelector term
// matches: the dependent is re-judged within 5 s and moved to the domain of
// the peer it now matches.
func testNamespaceSelectorFlip(t *testing.T, h *enforcement) {
	r := h.newRun(t, 3)
	ns, blue, red := r.nss[0], r.nss[1], r.nss[2]
	rack := r.key("rack")
	r.nodes(t, 10, map[string]map[string]string{"a": {rack: "r1"}, "b": {rack: "r2"}})
	setTeam := func(name, team string) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, "enforcer-tests/team-"+ns, team)
		if _, err := env.Client.CoreV1().Namespaces().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setTeam(blue, "blue")
	setTeam(red, "red")
	r.createPod(t, r.pod(blue, "peer-blue", enforcedProfile).Label("app", "peer").NodeName(r.node("a")).Obj())
	r.createPod(t, r.pod(red, "peer-red", enforcedProfile).Label("app", "peer").NodeName(r.node("b")).Obj())
	term := testutil.WithNamespaceSelector(testutil.AffinityTerm(rack, testutil.Selector(map[string]string{"app": "peer"})),
		testutil.Selector(map[string]string{"enforcer-tests/team-" + ns: "blue"}))
	r.replicaSet(t, r.pod(ns, "dep", enforcedProfile).RequiredPodAffinity(term).Obj(), 1)
	p := waitRunning(t, ns, "dep", 1, r.node("a"))[0]
	cfg := defaultEnforcerConfig()
	enf := r.start(t, cfg)
	w := r.watchPods(t, nil)
	waitReport(t, enf, ns+"/"+p.Name, "not violating", func(r *framework.EnforcerReport) bool { return r == nil })

	flipped := time.Now()
	setTeam(blue, "red")
	setTeam(red, "blue")
	// Re-judged within 5 s: evicted within that plus its grace period.
	if d := w.waitEvicted(t, p.UID, "the dependent").Sub(flipped); d > cfg.grace+5*time.Second {
		t.Errorf("evicted %s after the namespace relabel, want within the %s grace period + 5s", d, cfg.grace)
	}
	env.WaitForEvent(t, ns, p.Name, "PlacementEvicted", "evicted for pod-affinity")
	waitRunning(t, ns, "dep", 1, r.node("b"))
	r.acceptedEvictions(t, 1)
}

// Every kind of pod the enforcer protects violates its rule and is
// never evicted, each reported protected with its reason; a control pod in
// the same namespace is evicted, so the enforcer did act meanwhile.
func testProtected(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	// b joins the pool once the pods run on a.
	r.nodes(t, 20, map[string]map[string]string{"a": {"pool": "yes", profilePoolLabel: "yes", "ds-" + ns: "yes"}, "b": {}})
	sel := map[string]string{"pool": "yes"}

	// A DaemonSet pod breaking its profile's addedAffinity (the DaemonSet
	// controller does not know profiles, so it keeps the pod).
	ds := r.pod(ns, "daemon", enforcedPoolProfile).Obj()
	ds.Spec.NodeSelector = map[string]string{"ds-" + ns: "yes"}
	r.own(ds)
	env.Create(t, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "daemon", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "daemon"}},
		Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: ds.Labels}, Spec: ds.Spec}}})
	// A mirror pod (what a kubelet posts for a static pod).
	mirror := r.pod(ns, "mirror", enforcedProfile).NodeSelector(sel).NodeName(r.node("a")).Obj()
	mirror.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "static"}
	r.createPod(t, mirror)
	// A bare pod: nothing would re-create it.
	r.createPod(t, r.pod(ns, "bare", enforcedProfile).NodeSelector(sel).Obj())
	// A system-critical pod.
	r.replicaSet(t, r.pod(ns, "critical", enforcedProfile).NodeSelector(sel).PriorityClassName("system-cluster-critical").Obj(), 1)
	// A pod on a NotReady node (no KWOK: nothing reports it Ready).
	down := framework.SchedulableNode(ns, "down").Label(nodeOfLabel, r.id).Obj()
	down.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady"}}
	env.CreateNodes(t, down)
	r.replicaSet(t, r.pod(ns, "stranded", enforcedProfile).NodeSelector(sel).NodeName(down.Name).Obj(), 1)
	// A pod with an emptyDir: its data would stay behind.
	scratch := r.pod(ns, "scratch", enforcedProfile).NodeSelector(sel).Obj()
	scratch.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	r.replicaSet(t, scratch, 1)
	// The control pod.
	r.replicaSet(t, r.pod(ns, "control", enforcedProfile).NodeSelector(sel).Obj(), 1)

	want := map[string]string{"daemon": "daemonset", "mirror": "mirror-pod", "bare": "no-controller", "critical": "system-critical", "stranded": "node-not-ready", "scratch": "local-storage"}
	protected := map[string]v1.Pod{}
	env.Poll(t, "the protected pods bound", func(ctx context.Context) (bool, error) {
		for app := range want {
			ps, err := pods(ctx, ns, app)
			if err != nil || len(ps) != 1 || ps[0].Spec.NodeName == "" {
				return false, err
			}
			protected[app] = ps[0]
		}
		return true, nil
	})
	ctl := waitRunning(t, ns, "control", 1, r.node("a"))[0]
	enf := r.start(t, defaultEnforcerConfig())
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	env.SetNodeLabel(t, r.node("b"), profilePoolLabel, "yes")
	env.SetNodeLabel(t, r.node("a"), "pool", "")
	env.SetNodeLabel(t, r.node("a"), profilePoolLabel, "")
	for app, why := range want {
		p := protected[app]
		waitReport(t, enf, ns+"/"+p.Name, "protected: "+why, func(r *framework.EnforcerReport) bool {
			return r != nil && r.State == "protected" && r.Detail == why
		})
		env.WaitForEvent(t, ns, p.Name, "PlacementProtected", why)
	}
	w.waitEvicted(t, ctl.UID, "the control pod")
	waitRunning(t, ns, "control", 1, r.node("b"))
	r.acceptedEvictions(t, 1)
	var keep []*v1.Pod
	for app := range want {
		p := protected[app]
		keep = append(keep, &p)
		for _, e := range evictions(t, ns) {
			if e.Pod == p.Name {
				t.Errorf("protected pod %s (%s): an eviction was asked: %+v", p.Name, want[app], e)
			}
		}
	}
	r.notEvicted(t, keep...)
}

// A dry run evicts nothing, and its report (dry-run with a target,
// no-fit, pdb-blocked, protected) is what the live run then does.
func testDryRunThenLive(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	r.nodes(t, 10, map[string]map[string]string{"a": {"pool": "yes", "any": "yes"}, "b": {}})
	sel := map[string]string{"pool": "yes"}
	r.replicaSet(t, r.pod(ns, "movable", enforcedProfile).NodeSelector(sel).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "stuck", enforcedProfile).NodeSelector(map[string]string{"pool": "yes", "any": "yes"}).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "budget", enforcedProfile).NodeSelector(sel).Obj(), 1)
	zero := intstr.FromInt32(0)
	env.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "budget"}}},
	})
	r.createPod(t, r.pod(ns, "bare", enforcedProfile).NodeSelector(sel).Obj())
	apps := []string{"movable", "stuck", "budget", "bare"}
	before := map[string]v1.Pod{}
	for _, app := range apps {
		before[app] = waitRunning(t, ns, app, 1, r.node("a"))[0]
	}
	env.Poll(t, "the disruption controller to compute the PDB", func(ctx context.Context) (bool, error) {
		got, err := env.Client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "budget", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.ExpectedPods == 1, err
	})
	cfg := defaultEnforcerConfig()
	cfg.dryRun = true
	dry := r.start(t, cfg)
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	env.SetNodeLabel(t, r.node("a"), "pool", "")
	want := map[string]string{"movable": "dry-run", "stuck": "no-fit", "budget": "pdb-blocked", "bare": "protected"}
	dryReports := map[string]*framework.EnforcerReport{}
	for app, state := range want {
		dryReports[app] = waitReport(t, dry, ns+"/"+before[app].Name, state, inState(state))
	}
	env.WaitForEvent(t, ns, before["movable"].Name, "PlacementDryRun", r.node("b"))
	if dryReports["movable"].Target != r.node("b") {
		t.Errorf("dry run: target %q, want %s", dryReports["movable"].Target, r.node("b"))
	}
	for _, e := range evictions(t, ns) {
		if !e.DryRun {
			t.Errorf("the dry run sent a real eviction: %+v", e)
		}
	}
	if len(w.evicted()) > 0 {
		t.Errorf("the dry run evicted %d pods", len(w.evicted()))
	}
	var all, kept []*v1.Pod
	for _, app := range apps {
		p := before[app]
		all = append(all, &p)
		if app != "movable" {
			kept = append(kept, &p)
		}
	}
	r.notEvicted(t, all...)
	for result, want := range map[string]bool{"dry-run": true, "pdb-blocked": true, "evicted": false} {
		v := metric(t, dry, "placement_enforcer_evictions_total", map[string]string{"rule": "node-affinity", "result": result})
		if (v > 0) != want {
			t.Errorf("dry run: placement_enforcer_evictions_total{%s} = %g", result, v)
		}
	}
	dry.Stop()

	live := r.start(t, defaultEnforcerConfig())
	w.waitEvicted(t, before["movable"].UID, "the pod the dry run would evict")
	waitRunning(t, ns, "movable", 1, dryReports["movable"].Target)
	for app, state := range map[string]string{"stuck": "no-fit", "budget": "pdb-blocked", "bare": "protected"} {
		rep := waitReport(t, live, ns+"/"+before[app].Name, state, inState(state))
		if rep.Detail != dryReports[app].Detail && state == "protected" {
			t.Errorf("%s: live detail %q, dry run's %q", app, rep.Detail, dryReports[app].Detail)
		}
	}
	r.acceptedEvictions(t, 1)
	r.notEvicted(t, kept...)
}

// A dry run under caps tells which pods the live run's first pass moves:
// 20 pods of 16 ReplicaSets (four of two pods), five on each of four nodes
// relabelled off their pool, limits.perNode 2 and a burst of 6 with a
// rate so slow that no token comes back during the test. The dry run
// reports 6 pods dry-run and the others waiting: some on limits.perNode or
// their owner (a node has two going), some on the rate limit (a node has
// fewer); the live run, started on the same cluster, evicts exactly the
// dry-run pods and no other.
func testDryRunSplitUnderCaps(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	labels := map[string]map[string]string{}
	var oldNodes []string
	// old-i holds the pods that select slot i; every new node has every
	// slot.
	slot := func(i int) string { return r.key(fmt.Sprintf("slot-%d", i)) }
	for i := range 4 {
		labels[fmt.Sprintf("old-%d", i)] = map[string]string{"pool": "yes", slot(i): "yes"}
		labels[fmt.Sprintf("new-%d", i)] = map[string]string{slot(0): "yes", slot(1): "yes", slot(2): "yes", slot(3): "yes"}
		oldNodes = append(oldNodes, r.node(fmt.Sprintf("old-%d", i)))
	}
	r.nodes(t, 10, labels)
	replicas := map[string]int{}
	for i := range 16 {
		app := fmt.Sprintf("app-%02d", i)
		replicas[app] = 1
		if i < 4 {
			replicas[app] = 2
		}
		sel := map[string]string{"pool": "yes", slot(i % 4): "yes"}
		r.replicaSet(t, r.pod(ns, app, enforcedProfile).NodeSelector(sel).Obj(), int32(replicas[app]))
	}
	for app, n := range replicas {
		waitRunning(t, ns, app, n, oldNodes...)
	}
	for i := range 4 {
		env.SetNodeLabel(t, r.node(fmt.Sprintf("new-%d", i)), "pool", "yes")
	}
	for _, n := range oldNodes {
		env.SetNodeLabel(t, n, "pool", "")
	}
	cfg := defaultEnforcerConfig()
	cfg.perNode, cfg.rate, cfg.burst = 2, 0.001, 6
	cfg.dryRun = true
	dry := r.start(t, cfg)
	var reports []framework.EnforcerReport
	env.Poll(t, "the dry run's report of the 20 pods past their grace", func(context.Context) (bool, error) {
		if dry.Exited() {
			return false, fmt.Errorf("placement-enforcer exited: %v", dry.Err())
		}
		var err error
		if reports, err = dry.Violations(); err != nil || len(reports) != 20 {
			return false, nil
		}
		for _, rep := range reports {
			if rep.State == "grace" {
				return false, nil
			}
		}
		return true, nil
	})
	goes := map[string]bool{}
	waits := map[string]int{}
	for _, rep := range reports {
		switch rep.State {
		case "dry-run":
			goes[rep.Pod] = true
		case "paced", "waiting-owner":
			waits[rep.Wait]++
		default:
			t.Errorf("dry run: %s %s (%s), want dry-run, paced or waiting-owner", rep.Pod, rep.State, rep.Detail)
		}
	}
	if waits["owner"]+waits["limits.perNode"] == 0 || waits["rate-limit"] == 0 {
		t.Errorf("dry run: pods waiting %v, want some on limits.perNode or their owner and some on rate-limit", waits)
	}
	if len(goes) != 6 {
		t.Errorf("dry run: %d pods would go now, want the burst's 6", len(goes))
	}
	if len(evictionsAccepted(t, ns)) != 0 {
		t.Errorf("the dry run evicted pods")
	}
	dry.Stop()

	live := r.start(t, cfg.live())
	evicted := r.acceptedEvictions(t, len(goes))
	for key := range evicted {
		if !goes[key] {
			t.Errorf("the live run evicted %s, which the dry run reported waiting", key)
		}
	}
	// The others wait on the live run too, the rate limit's tokens spent.
	for _, rep := range reports {
		if !goes[rep.Pod] {
			waitReport(t, live, rep.Pod, "held back", func(got *framework.EnforcerReport) bool {
				return got != nil && (got.State == "paced" || got.State == "waiting-owner")
			})
		}
	}
	if got := len(evictionsAccepted(t, ns)); got != len(goes) {
		t.Errorf("the live run evicted %d pods, the dry run said %d", got, len(goes))
	}
}

// live is cfg without dryRun.
func (cfg enforcerConfig) live() enforcerConfig {
	cfg.dryRun = false
	return cfg
}

// evictionsAccepted are the accepted, not dry-run, eviction requests for
// pods in nss so far.
func evictionsAccepted(t *testing.T, nss ...string) []eviction {
	t.Helper()
	var out []eviction
	for _, e := range evictions(t, nss...) {
		if e.accepted() && !e.DryRun {
			out = append(out, e)
		}
	}
	return out
}

// Two enforcer processes on one Lease; the leader is SIGKILLed in the
// middle of a batch paced by the rate limit; the other takes over and
// finishes it, no pod is evicted twice (the apiserver's audit log counts
// every request), and the rate limit and the caps on evictions in flight
// hold across the two leaders at every watch event.
func testLeaderKilledMidBatch(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	const n = 8
	labels := map[string]map[string]string{}
	var oldNames, newNames []string
	for i := range n {
		labels[fmt.Sprintf("old-%d", i)] = map[string]string{"pool": "yes"}
		labels[fmt.Sprintf("new-%d", i)] = map[string]string{}
		oldNames = append(oldNames, r.node(fmt.Sprintf("old-%d", i)))
		newNames = append(newNames, r.node(fmt.Sprintf("new-%d", i)))
	}
	r.nodes(t, 1, labels) // one pod per node: the batch cannot double up
	for i := range n {
		r.replicaSet(t, r.pod(ns, fmt.Sprintf("app-%d", i), enforcedProfile).NodeSelector(map[string]string{"pool": "yes"}).Obj(), 1)
	}
	for i := range n {
		waitRunning(t, ns, fmt.Sprintf("app-%d", i), 1, oldNames...)
	}
	cfg := defaultEnforcerConfig()
	cfg.rate, cfg.burst = 1, 1 // a batch that lasts
	cfg.total = 2              // and the caps bind, across the two leaders
	cfg.leaseDuration = 5 * time.Second
	enfs := []*framework.Enforcer{r.start(t, cfg), r.start(t, cfg)}
	caps := newCapWatch(cfg, 1)
	w := r.watchPods(t, caps.observe)

	for _, nn := range newNames {
		env.SetNodeLabel(t, nn, "pool", "yes")
	}
	for _, o := range oldNames {
		env.SetNodeLabel(t, o, "pool", "")
	}
	env.Poll(t, "two evictions of the batch", func(context.Context) (bool, error) { return len(w.evicted()) >= 2, nil })
	leader := leading(t, enfs)
	enfs[leader].Kill()
	killedAt := len(w.evicted())
	if killedAt >= n {
		t.Fatalf("the batch was over (%d evictions) before the leader was killed", killedAt)
	}
	for i := range n {
		waitRunning(t, ns, fmt.Sprintf("app-%d", i), 1, newNames...)
	}
	t.Logf("leader killed after %d of %d evictions", killedAt, n)
	checkRate(t, r.acceptedEvictions(t, n), cfg.rate, cfg.burst)
	// Whether the total binds depends on how fast replacements turn
	// Ready; it is never exceeded.
	caps.check(t, w, false)
	if enfs[1-leader].Exited() {
		t.Errorf("the surviving enforcer exited: %v", enfs[1-leader].Err())
	}
}

// Two enforcer processes on one Lease, a 20 s grace period; the leader is
// SIGKILLed right after it detected the violation and recorded it on the
// pod. The survivor continues that grace period rather than starting its
// own: the pod is evicted once, no earlier than the grace period after the
// first detection and no later than 5 s beyond it.
func testLeaderKilledMidGrace(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	oldNode, newNode, key := r.node("old"), r.node("new"), r.key("pool")
	pod := r.onePodOnOld(t, 5)
	cfg := defaultEnforcerConfig()
	cfg.grace = 20 * time.Second
	cfg.leaseDuration = 5 * time.Second
	enfs := []*framework.Enforcer{r.start(t, cfg), r.start(t, cfg)}
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, newNode, key, "yes")
	env.SetNodeLabel(t, oldNode, key, "")
	since := recordedSince(t, ns, pod.Name)
	leader := leading(t, enfs)
	enfs[leader].Kill()
	at := w.waitEvicted(t, pod.UID, "the pod")
	if at.Before(since.Add(cfg.grace)) || at.After(since.Add(cfg.grace+5*time.Second)) {
		t.Errorf("evicted %s after the first detection, want within [%s, %s]: the grace period was not continued",
			at.Sub(since), cfg.grace, cfg.grace+5*time.Second)
	}
	waitRunning(t, ns, "app", 1, newNode)
	r.acceptedEvictions(t, 1)
	if enfs[1-leader].Exited() {
		t.Errorf("the surviving enforcer exited: %v", enfs[1-leader].Err())
	}
}

// A live enforcer detects a violation and records it on the pod; it is
// stopped and a dry run takes the Lease; under it the violation clears and
// the record stays (a dry run writes nothing), older than the grace period
// by the time the dry run stops and the violation comes back; then the
// live enforcer is started again. The record is of a term before the dry
// run's: the pod gets a full grace period from the live restart, not an
// eviction at once for a clock that ran while nothing enforced.
func testGraceAfterDryRunGap(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	oldNode, newNode, key := r.node("old"), r.node("new"), r.key("pool")
	pod := r.onePodOnOld(t, 5)
	name := ns + "/" + pod.Name
	env.SetNodeLabel(t, newNode, key, "yes")
	cfg := defaultEnforcerConfig()
	cfg.grace = 15 * time.Second
	live := r.start(t, cfg)
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, oldNode, key, "")
	since := recordedSince(t, ns, pod.Name)
	live.Stop()
	dryCfg := cfg
	dryCfg.dryRun = true
	dry := r.start(t, dryCfg)
	waitReport(t, dry, name, "seen by the dry run", func(rep *framework.EnforcerReport) bool { return rep != nil })
	env.SetNodeLabel(t, oldNode, key, "yes")
	waitReport(t, dry, name, "cleared under the dry run", func(rep *framework.EnforcerReport) bool { return rep == nil })
	env.Poll(t, "the stale record older than the grace period", func(context.Context) (bool, error) {
		if got := recordedSince(t, ns, pod.Name); !got.Equal(since) {
			return false, fmt.Errorf("the dry run rewrote the record: since %s, was %s", got, since)
		}
		return time.Since(since) > cfg.grace+time.Second, nil
	})
	dry.Stop()

	env.SetNodeLabel(t, oldNode, key, "")
	restarted := time.Now()
	r.start(t, cfg)
	at := w.waitEvicted(t, pod.UID, "the pod")
	if at.Before(restarted.Add(cfg.grace)) {
		t.Errorf("evicted %s after the live restart, %s after the stale record's first detection: want a full grace period (%s) from the restart",
			at.Sub(restarted), at.Sub(since), cfg.grace)
	}
	waitRunning(t, ns, "app", 1, newNode)
	r.acceptedEvictions(t, 1)
}

// recordedSince polls until the enforcement record on pod ns/name holds a
// node-affinity first detection, and returns it.
func recordedSince(t *testing.T, ns, name string) time.Time {
	t.Helper()
	var since time.Time
	env.Poll(t, "the first detection recorded on the pod", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		v, ok := p.Annotations[enforcer.RecordAnnotation]
		if !ok {
			return false, nil
		}
		var rec struct {
			Since map[enforcerv1alpha1.Rule]time.Time `json:"since"`
		}
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			return false, fmt.Errorf("%s: %w", enforcer.RecordAnnotation, err)
		}
		since = rec.Since[enforcerv1alpha1.NodeAffinity]
		return !since.IsZero(), nil
	})
	return since
}

// Ten pods of the namespace evicted through the Eviction API by another
// user (a drain) and held Terminating by a finalizer count toward
// limits.perNamespace (10 here) only for limits.otherEvictionsFor (30 s
// here) from their DisruptionTarget condition: the violating pod is paced
// by them at first, then evicted once they have aged out, while they are
// still terminating.
func testOthersStuckEvictions(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	oldNode, newNode, drained, key := r.node("old"), r.node("new"), r.node("drained"), r.key("pool")
	pod := r.onePodOnOld(t, 20, "drained")
	env.SetNodeLabel(t, newNode, key, "yes")
	const stuck = 10
	for i := range stuck {
		p := r.pod(ns, fmt.Sprintf("stuck-%d", i), enforcedProfile).NodeName(drained).Obj()
		p.Finalizers = []string{"enforcer-tests/hold"}
		env.Create(t, p)
	}
	waitRunning(t, ns, "stuck-0", 1, drained)

	// The other tool: a user of its own that may evict pods in ns.
	const drainer = "drainer"
	env.Create(t,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: drainer, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: drainer, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: drainer, Namespace: ns},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: drainer, Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: drainer}},
	)
	as := rest.AnonymousClientConfig(env.Config)
	as.BearerToken = env.ServiceAccountToken(t, ns, drainer)
	other, err := kubernetes.NewForConfig(as)
	if err != nil {
		t.Fatal(err)
	}

	cfg := defaultEnforcerConfig()
	cfg.perNS = stuck
	cfg.otherEvictionsFor = 30 * time.Second
	enf := r.start(t, cfg)
	w := r.watchPods(t, nil)

	for i := range stuck {
		name := fmt.Sprintf("stuck-%d", i)
		env.Poll(t, "the other user's eviction of "+name, func(ctx context.Context) (bool, error) {
			err := other.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
			if apierrors.IsForbidden(err) {
				return false, nil // its Role not in force yet
			}
			return err == nil, err
		})
	}
	var first time.Time // the earliest eviction, as the enforcer reads it
	env.Poll(t, "the ten pods terminating, evicted", func(ctx context.Context) (bool, error) {
		first = time.Time{}
		for i := range stuck {
			p, err := env.Client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("stuck-%d", i), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := framework.PodCondition(p, v1.DisruptionTarget)
			if p.DeletionTimestamp == nil || c == nil || c.Status != v1.ConditionTrue {
				return false, nil
			}
			if first.IsZero() || c.LastTransitionTime.Time.Before(first) {
				first = c.LastTransitionTime.Time
			}
		}
		return true, nil
	})

	env.SetNodeLabel(t, oldNode, key, "")
	rep := waitReport(t, enf, ns+"/"+pod.Name, "paced", inState("paced"))
	if rep.Wait != "limits.perNamespace" {
		t.Errorf("paced by %q (%s), want limits.perNamespace: the ten recent evictions count", rep.Wait, rep.Detail)
	}
	at := w.waitEvicted(t, pod.UID, "the pod")
	if at.Before(first.Add(cfg.otherEvictionsFor)) {
		t.Errorf("evicted %s after the other user's first eviction, want at least %s", at.Sub(first), cfg.otherEvictionsFor)
	}
	waitRunning(t, ns, "app", 1, newNode)
	for i := range stuck {
		p, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), fmt.Sprintf("stuck-%d", i), metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			t.Errorf("stuck-%d: %v; want it still terminating", i, err)
		}
	}
	byUser := map[string]int{}
	for _, e := range evictionsAccepted(t, ns) {
		byUser[e.User]++
	}
	if want := map[string]int{r.user: 1, "system:serviceaccount:" + ns + ":" + drainer: stuck}; !maps.Equal(byUser, want) {
		t.Errorf("accepted evictions by user %v, want %v", byUser, want)
	}
}

// onePodOnOld creates the nodes old, in the test's pool (label
// r.key("pool")), new, not in it yet, and extra ones, not in it, each with
// room for pods pods; then a ReplicaSet app of one pod that selects the
// pool, and returns its pod once it runs on old.
func (r *run) onePodOnOld(t *testing.T, pods int64, extra ...string) v1.Pod {
	t.Helper()
	key := r.key("pool")
	nodes := map[string]map[string]string{"old": {key: "yes"}, "new": {}}
	for _, name := range extra {
		nodes[name] = map[string]string{}
	}
	r.nodes(t, pods, nodes)
	ns := r.nss[0]
	r.replicaSet(t, r.pod(ns, "app", enforcedProfile).NodeSelector(map[string]string{key: "yes"}).Obj(), 1)
	return waitRunning(t, ns, "app", 1, r.node("old"))[0]
}

// leading is the index of the leader of enfs: the one reporting
// violations.
func leading(t *testing.T, enfs []*framework.Enforcer) int {
	t.Helper()
	leader := -1
	env.Poll(t, "the leading enforcer", func(context.Context) (bool, error) {
		for i, e := range enfs {
			if reports, err := e.Violations(); err == nil && len(reports) > 0 {
				leader = i
				return true, nil
			}
		}
		return false, nil
	})
	return leader
}

// job creates Job app in ns, one pod from pod (restartPolicy Never),
// backoffLimit 0, with rules as its podFailurePolicy (none when nil), and
// returns its pod once bound.
func (r *run) job(t *testing.T, pod *v1.Pod, rules ...batchv1.PodFailurePolicyRule) v1.Pod {
	t.Helper()
	r.own(pod)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template:     v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}, Spec: pod.Spec}}}
	if rules != nil {
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	}
	env.Create(t, job)
	var got v1.Pod
	env.Poll(t, "the Job's pod bound and Ready", func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, pod.Namespace, pod.Labels["app"])
		if err != nil || len(ps) != 1 || !ready(&ps[0]) {
			return false, err
		}
		got = ps[0]
		return true, nil
	})
	return got
}

// jobState is Job name's Failed condition and active count.
func jobState(t *testing.T, ns, name string) (failed bool, active int32) {
	t.Helper()
	j, err := env.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && c.Status == v1.ConditionTrue {
			failed = true
		}
	}
	return failed, j.Status.Active
}

// A Job's pod (backoffLimit 0) in an opted-in namespace whose node leaves
// its pool: reported protected (job), never evicted, and its Job keeps
// running; a ReplicaSet's pod beside it, on the same relabel, is evicted.
func testJobProtected(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	r.nodes(t, 20, map[string]map[string]string{"a": {"pool": "yes"}, "b": {}})
	sel := map[string]string{"pool": "yes"}
	job := r.job(t, r.pod(ns, "batch", enforcedProfile).NodeSelector(sel).Obj())
	r.replicaSet(t, r.pod(ns, "control", enforcedProfile).NodeSelector(sel).Obj(), 1)
	ctl := waitRunning(t, ns, "control", 1, r.node("a"))[0]
	enf := r.start(t, defaultEnforcerConfig())
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	env.SetNodeLabel(t, r.node("a"), "pool", "")
	waitReport(t, enf, ns+"/"+job.Name, "protected: job", func(r *framework.EnforcerReport) bool {
		return r != nil && r.State == "protected" && r.Detail == "job"
	})
	env.WaitForEvent(t, ns, job.Name, "PlacementProtected", "job")
	w.waitEvicted(t, ctl.UID, "the control pod")
	waitRunning(t, ns, "control", 1, r.node("b"))
	r.acceptedEvictions(t, 1)
	r.notEvicted(t, &job)
	if failed, active := jobState(t, ns, "batch"); failed || active != 1 {
		t.Errorf("the Job: failed %v, %d active; want running, 1 active", failed, active)
	}
}

// With evictJobPods, a Job (backoffLimit 0) whose podFailurePolicy ignores
// DisruptionTarget has its pod evicted; the eviction does not count, the
// Job does not fail, and its new pod runs on the node the rule allows.
func testJobEvictedWhenItsPolicyIgnoresDisruption(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	r.nodes(t, 20, map[string]map[string]string{"a": {"pool": "yes"}, "b": {}})
	sel := map[string]string{"pool": "yes"}
	ignore := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}}
	job := r.job(t, r.pod(ns, "batch", enforcedProfile).NodeSelector(sel).Obj(), ignore)
	cfg := defaultEnforcerConfig()
	cfg.evictJobPods = true
	r.start(t, cfg)
	w := r.watchPods(t, nil)

	env.SetNodeLabel(t, r.node("b"), "pool", "yes")
	env.SetNodeLabel(t, r.node("a"), "pool", "")
	w.waitEvicted(t, job.UID, "the Job's pod")
	r.acceptedEvictions(t, 1)
	// KWOK runs no containers: play the kubelet's part, which ends the
	// evicted pod (phase Failed) after its grace period; the Job then
	// matches its podFailurePolicy and, as it ignores the disruption,
	// replaces the pod without counting a failure.
	env.Poll(t, "the evicted pod Failed, as its kubelet would end it", func(ctx context.Context) (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil || p.Status.Phase == v1.PodFailed {
			return err == nil || apierrors.IsNotFound(err), nil
		}
		p.Status.Phase = v1.PodFailed
		if _, err := env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return false, err
		}
		return false, nil // read again: a conflict retries, a success shows next round
	})
	env.Poll(t, "the Job's new pod Ready on b", func(ctx context.Context) (bool, error) {
		ps, err := pods(ctx, ns, "batch")
		if err != nil || len(ps) != 1 {
			return false, err
		}
		return ps[0].UID != job.UID && ready(&ps[0]) && ps[0].Spec.NodeName == r.node("b"), nil
	})
	if failed, active := jobState(t, ns, "batch"); failed || active != 1 {
		t.Errorf("the Job: failed %v, %d active; want running, 1 active", failed, active)
	}
}

// x requires zone affinity to y; y, younger, violates its own
// anti-affinity (z is in its zone) and its PodDisruptionBudget refuses
// every eviction. While y is in x's zone, x is never reported nor evicted;
// y is reported pdb-blocked.
func testAffinityTargetPDBBlocked(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	zone := r.key("zone")
	r.nodes(t, 20, map[string]map[string]string{"a1": {zone: "a"}, "a2": {zone: "a"}, "b1": {zone: "b"}})
	byApp := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	// x and z are older than y (the enforcer judges youngest first), on
	// a1 by name; y, on a2 by name, is then in x's zone, and so is z.
	r.replicaSet(t, r.pod(ns, "z", enforcedProfile).NodeName(r.node("a1")).Obj(), 1)
	waitRunning(t, ns, "z", 1, r.node("a1"))
	r.replicaSet(t, r.pod(ns, "x", enforcedProfile).NodeName(r.node("a1")).
		RequiredPodAffinity(v1.PodAffinityTerm{TopologyKey: zone, LabelSelector: byApp("y")}).Obj(), 1)
	x := waitRunning(t, ns, "x", 1, r.node("a1"))[0]
	env.Poll(t, "a second past x's creation (creationTimestamp's resolution)", func(context.Context) (bool, error) {
		return time.Now().After(x.CreationTimestamp.Add(time.Second)), nil
	})
	env.Create(t, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: byApp("y"), MaxUnavailable: ptr.To(intstr.FromInt32(0))}})
	r.replicaSet(t, r.pod(ns, "y", enforcedProfile).NodeName(r.node("a2")).
		RequiredPodAntiAffinity(v1.PodAffinityTerm{TopologyKey: zone, LabelSelector: byApp("z")}).Obj(), 1)
	y := waitRunning(t, ns, "y", 1, r.node("a2"))[0]
	cfg := defaultEnforcerConfig()
	enf := r.start(t, cfg)

	waitReport(t, enf, ns+"/"+y.Name, "pdb-blocked", func(r *framework.EnforcerReport) bool {
		return r != nil && r.State == "pdb-blocked" && r.Rule == "pod-anti-affinity"
	})
	// Past the grace period and a few refusals' backoffs, x is still
	// neither reported nor evicted, and y is still pdb-blocked.
	w := r.watchPods(t, nil)
	holdFor(t, 3*cfg.grace+3*cfg.backoffInitial, "x kept while y is in its zone", func(context.Context) error {
		reports, err := enf.Violations()
		if err != nil {
			return err
		}
		for _, rep := range reports {
			if rep.Pod == ns+"/"+x.Name {
				return fmt.Errorf("x reported while its affinity target y is in its zone: %s (%s)", rep.State, rep.Reason)
			}
		}
		if len(w.evicted()) > 0 {
			return errors.New("a pod was evicted although y's budget allows none and x's affinity holds")
		}
		return nil
	})
	r.notEvicted(t, &x, &y)
}

func mustMarshal(v any) []byte {
	data, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// A profile that does not run our pod-affinity filter: its opted-in pod
// whose anti-affinity breaks is never evicted (its scheduler would place
// the replacement in violation again), while the same pod under the full
// profile beside it is, to a node that fits.
func testProfileWithoutPodAffinity(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	zone := r.key("zone")
	r.nodes(t, 10, map[string]map[string]string{"a": {zone: "z1"}, "b": {zone: "z1"}})
	// Both land in zone z1, the only one there is; then x comes, pinned
	// beside them, and breaks their anti-affinity.
	anti := testutil.AffinityTerm(zone, testutil.Selector(map[string]string{"app": "x"}))
	r.replicaSet(t, r.pod(ns, "batch", noPodAffinityProfile).RequiredPodAntiAffinity(anti).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "full", enforcedProfile).RequiredPodAntiAffinity(anti).Obj(), 1)
	batch := waitRunning(t, ns, "batch", 1)[0]
	fullPod := waitRunning(t, ns, "full", 1)[0]
	r.replicaSet(t, r.pod(ns, "x", enforcedProfile).NodeName(r.node("a")).Obj(), 1)
	waitRunning(t, ns, "x", 1, r.node("a"))
	w := r.watchPods(t, nil)
	enf := r.start(t, defaultEnforcerConfig())
	// Room in another zone: the full profile's pod moves there.
	r.nodes(t, 10, map[string]map[string]string{"c": {zone: "z2"}})
	w.waitEvicted(t, fullPod.UID, "the full profile's pod")
	waitRunning(t, ns, "full", 1, r.node("c"))
	// The other is judged by what its profile applies: nothing breaks.
	// Longer than its grace (2 s) and a resync (20 s) later, it is still
	// neither evicted nor reported.
	holdFor(t, 30*time.Second, batch.Name+" neither evicted nor reported", func(context.Context) error {
		if w.evicted()[batch.UID] {
			return fmt.Errorf("%s, whose profile does not run PlacementInterPodAffinity, was evicted for its anti-affinity", batch.Name)
		}
		reports, err := enf.Violations()
		if err != nil {
			return err
		}
		for _, rep := range reports {
			if rep.Pod == ns+"/"+batch.Name {
				return fmt.Errorf("%s reported: %+v", batch.Name, rep)
			}
		}
		return nil
	})
	r.notEvicted(t, &batch)
	r.acceptedEvictions(t, 1)
}

// Loops provoked on purpose stop. A ReplicaSet whose template pins
// spec.nodeName to a node its own nodeSelector rejects: evicted once, its
// replacement pinned back is reported looping, with its event, and never
// evicted. A ReplicaSet whose replacements land where they are promised
// and whose node then loses the label each time (a label that flaps slower
// than the grace period): evicted loops.evictions (2) times, then looping.
// The gauge counts both owners.
func testLoopsStop(t *testing.T, h *enforcement) {
	r := h.newRun(t, 1)
	ns := r.nss[0]
	pinOK, flapOK := r.key("pin-ok"), r.key("flap-ok")
	r.nodes(t, 10, map[string]map[string]string{
		"pin": {}, "pin-ok": {pinOK: "yes"},
		"f0": {flapOK: "yes"}, "f1": {}, "f2": {}, "f3": {},
	})
	r.replicaSet(t, r.pod(ns, "pinned", enforcedProfile).NodeName(r.node("pin")).NodeSelector(map[string]string{pinOK: "yes"}).Obj(), 1)
	r.replicaSet(t, r.pod(ns, "flap", enforcedProfile).NodeSelector(map[string]string{flapOK: "yes"}).Obj(), 1)
	pinned := waitRunning(t, ns, "pinned", 1, r.node("pin"))[0]
	flap := waitRunning(t, ns, "flap", 1, r.node("f0"))[0]
	w := r.watchPods(t, nil)
	cfg := defaultEnforcerConfig()
	cfg.loopEvictions, cfg.loopWindow = 2, time.Hour
	enf := r.start(t, cfg)

	// The pinned one: evicted once (its replacement promised pin-ok),
	// back on pin, looping.
	w.waitEvicted(t, pinned.UID, "the pinned pod")
	repl := waitRunning(t, ns, "pinned", 1, r.node("pin"))[0]
	got := waitReport(t, enf, ns+"/"+repl.Name, "looping", inState("looping"))
	if !strings.Contains(got.Detail, repl.Name+" on "+r.node("pin")) {
		t.Errorf("looping detail %q, want it to name %s on %s", got.Detail, repl.Name, r.node("pin"))
	}
	env.WaitForEvent(t, ns, repl.Name, "PlacementLooping", "not evicted")

	// The flapping one: f0 loses the label, f1 gets it: evicted; f1
	// loses it, f2 gets it: evicted again (a replacement evicted where it
	// was promised); f2 loses it, f3 gets it: looping.
	for i, pod := 0, flap; i < 3; i++ {
		env.SetNodeLabel(t, r.node(fmt.Sprintf("f%d", i+1)), flapOK, "yes")
		env.SetNodeLabel(t, r.node(fmt.Sprintf("f%d", i)), flapOK, "")
		if i == 2 {
			waitReport(t, enf, ns+"/"+pod.Name, "looping", inState("looping"))
			env.WaitForEvent(t, ns, pod.Name, "PlacementLooping", "evicted 2 times")
			break
		}
		w.waitEvicted(t, pod.UID, fmt.Sprintf("flap's pod on f%d", i))
		pod = waitRunning(t, ns, "flap", 1, r.node(fmt.Sprintf("f%d", i+1)))[0]
	}
	env.Poll(t, "placement_enforcer_looping_owners{rule=node-affinity} 2", func(context.Context) (bool, error) {
		return metric(t, enf, "placement_enforcer_looping_owners", map[string]string{"rule": "node-affinity"}) == 2, nil
	})
	// No more: longer than the grace period and a resync, exactly three
	// evictions in all.
	holdFor(t, 25*time.Second, "no eviction after looping", func(context.Context) error {
		if n := len(w.evicted()); n != 3 {
			return fmt.Errorf("%d evictions, want 3", n)
		}
		return nil
	})
	if n := len(r.acceptedEvictions(t, 3)); n != 3 {
		t.Errorf("%d pods evicted in the audit log, want 3", n)
	}
}

package reliability

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/placement-scheduler/placement-scheduler/internal/explain"
	"github.com/placement-scheduler/placement-scheduler/manifests"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// outcome is what the apiserver says happened to a stream of pods.
type outcome struct {
	Created int
	// Bound pods have spec.nodeName; Lost ones ended without.
	Bound, Lost int
	// DoubleBound pods were bound by more than one successful binding
	// request (audit log) or have more than one Scheduled event.
	DoubleBound int
	// Rejected counts binding requests the apiserver refused, by HTTP
	// code: 409 for a pod already bound (a stale cache, or a request
	// retried after its answer was lost), which is the apiserver's guard
	// against a double bind doing its job; 5xx while etcd was away.
	Rejected map[int32]int
	// NoEvent counts bound pods without a Scheduled event: a SIGKILLed
	// leader bound them but died before its event was sent, or the
	// binding's answer was lost (Unanswered).
	NoEvent int
	// Unanswered counts pods bound by a request the audit log records as
	// failed (504 timeout, 500 client disconnected) because its client
	// went away (killed, or its connection cut) before the answer: the
	// binding was stored all the same. The scheduler that sent it never
	// learns it succeeded (and sends no Scheduled event).
	Unanswered int
	// Violations are bindings our plugins' Filter rejects on the final
	// cluster.
	Violations int
	// BindTimes is every successful binding, sorted.
	BindTimes []time.Time
}

func (o outcome) String() string {
	return fmt.Sprintf("pods created %d, bound %d, lost %d, double-bound %d (binding requests refused or unanswered, by code: %v; pods bound by an unanswered request: %d; bound without a Scheduled event: %d), bindings our Filter rejects on the final cluster: %d",
		o.Created, o.Bound, o.Lost, o.DoubleBound, o.Rejected, o.Unanswered, o.NoEvent, o.Violations)
}

// firstBindAfter is the first successful binding at or after t.
func (o outcome) firstBindAfter(t time.Time) (time.Time, bool) {
	i := sort.Search(len(o.BindTimes), func(i int) bool { return !o.BindTimes[i].Before(t) })
	if i == len(o.BindTimes) {
		return time.Time{}, false
	}
	return o.BindTimes[i], true
}

// waitAllBound polls until no pod of ns is unbound. It asks only for the
// unbound ones, so that polling a namespace of thousands stays cheap.
func waitAllBound(t testing.TB, ns string) {
	t.Helper()
	env.Poll(t, "every pod of "+ns+" to be bound", func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=", ResourceVersion: "0"})
		if err != nil {
			return false, nil // the apiserver may be coming back
		}
		return len(list.Items) == 0, nil
	})
}

// checkStream reads the final state of ns after a stream of created pods:
// the pods, the audit log's bindings, the Scheduled events; with
// recheck, every binding is re-checked with our plugins' Filter on the
// final cluster (only when nothing was deleted, so the constraints are
// static). missingEventOK says whether a pod bound at that time may lack
// its Scheduled event (its scheduler was SIGKILLed right after). It fails
// the test on any lost, double-bound or forbidden binding.
func checkStream(t testing.TB, ns string, created int, recheck bool, missingEventOK func(time.Time) bool) outcome {
	t.Helper()
	ctx := context.Background()
	o := outcome{Created: created, Rejected: map[int32]int{}}
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != created {
		t.Errorf("%d pods in %s, want %d", len(list.Items), ns, created)
	}
	pods := make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
		if pods[i].Spec.NodeName != "" {
			o.Bound++
		}
	}
	o.Lost = created - o.Bound

	// The apiserver writes a request's audit event once it has answered,
	// a moment after the binding is visible: wait for those of the bound
	// pods (a success, or an unanswered request that may have stored it).
	var binds map[string][]binding
	env.Poll(t, "the audit log to record every bound pod's binding", func(context.Context) (bool, error) {
		binds = bindings(t, ns)
		for _, p := range pods {
			if p.Spec.NodeName != "" && !slices.ContainsFunc(binds[p.Name], binding.succeeded) && !slices.ContainsFunc(binds[p.Name], binding.unanswered) {
				return false, nil
			}
		}
		return true, nil
	})
	bindAt := map[string]time.Time{}
	unanswered := map[string]bool{}
	for _, p := range pods {
		ok := 0
		for _, b := range binds[p.Name] {
			if b.succeeded() {
				ok++
				bindAt[p.Name] = b.At
				o.BindTimes = append(o.BindTimes, b.At)
			} else {
				o.Rejected[b.Code]++
			}
		}
		i := slices.IndexFunc(binds[p.Name], binding.unanswered)
		switch {
		case ok > 1:
			o.DoubleBound++
			t.Errorf("pod %s: %d successful binding requests in the audit log, want 1: %+v", p.Name, ok, binds[p.Name])
		case ok == 0 && p.Spec.NodeName != "" && i >= 0:
			o.Unanswered++
			unanswered[p.Name] = true
			bindAt[p.Name] = binds[p.Name][i].At
			o.BindTimes = append(o.BindTimes, binds[p.Name][i].At)
		case ok == 0 && p.Spec.NodeName != "":
			t.Errorf("pod %s is bound to %s but the audit log has no binding request that could have done it: %+v", p.Name, p.Spec.NodeName, binds[p.Name])
		case ok == 0:
			t.Errorf("pod %s was never bound (binding requests: %+v)", p.Name, binds[p.Name])
		}
	}
	slices.SortFunc(o.BindTimes, func(a, b time.Time) int { return a.Compare(b) })

	// Events are sent asynchronously: wait for every pod's, except those
	// whose scheduler may have died before sending it.
	var scheduled map[string]int
	env.Poll(t, "a Scheduled event for every pod bound by a live scheduler", func(ctx context.Context) (bool, error) {
		scheduled = scheduledEvents(t, ns)
		for name, at := range bindAt {
			if scheduled[name] == 0 && !missingEventOK(at) && !unanswered[name] {
				return false, nil
			}
		}
		return true, nil
	})
	for name := range bindAt {
		switch n := scheduled[name]; {
		case n == 0:
			o.NoEvent++
		case n > 1:
			if len(binds[name]) <= 1 { // not counted above already
				o.DoubleBound++
			}
			t.Errorf("pod %s has %d Scheduled events, want 1", name, n)
		}
	}
	if recheck {
		o.Violations = recheckFilters(t, ns, pods)
	}
	return o
}

// scheduledEvents counts the Scheduled events per pod of ns, series
// included: a second "Successfully assigned" for a pod would be a second
// bind.
func scheduledEvents(t testing.TB, ns string) map[string]int {
	t.Helper()
	list, err := env.Client.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.Regarding.Kind != "Pod" || ev.Reason != "Scheduled" {
			continue
		}
		n[ev.Regarding.Name] += eventCount(ev)
	}
	return n
}

// eventCount is how many occurrences one stored event stands for.
func eventCount(ev *eventsv1.Event) int {
	c := int(ev.DeprecatedCount)
	if ev.Series != nil && int(ev.Series.Count) > c {
		c = int(ev.Series.Count)
	}
	return max(c, 1)
}

// recheckFilters runs the shipped profile over the final cluster for every
// bound pod, as if it were not yet placed (internal/explain, the engine of
// `kubectl placement explain`), and counts pods whose node one of our
// plugins' Filter (or PreFilter) rejects. Any such pod fails the test.
func recheckFilters(t testing.TB, ns string, pods []*v1.Pod) int {
	t.Helper()
	ctx := context.Background()
	r := newRechecker(t)
	nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &explain.Cluster{Pods: pods, Namespaces: []*v1.Namespace{nsObj}}
	for i := range nodes.Items {
		if strings.HasPrefix(nodes.Items[i].Name, ns+"-") {
			c.Nodes = append(c.Nodes, &nodes.Items[i])
		}
	}
	// Two workers: the machine has two cores.
	var mu sync.Mutex
	violations := 0
	work := make(chan *v1.Pod)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				msg := r.check(ctx, p, c)
				if msg == "" {
					continue
				}
				mu.Lock()
				violations++
				if violations <= 20 {
					t.Errorf("pod %s on %s: %s", p.Name, p.Spec.NodeName, msg)
				}
				mu.Unlock()
			}
		}()
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			work <- p
		}
	}
	close(work)
	wg.Wait()
	return violations
}

// rechecker runs the shipped profile's filters (internal/explain) to see
// whether our plugins accept a pod where it is bound.
type rechecker struct {
	profile *config.KubeSchedulerProfile
	ours    sets.Set[string]
}

func newRechecker(t testing.TB) *rechecker {
	t.Helper()
	cfg, err := explain.LoadConfig(manifests.SchedulerConfig(), "the shipped config")
	if err != nil {
		t.Fatal(err)
	}
	profile, err := explain.PickProfile(cfg, "", "placement-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	r := &rechecker{profile: profile, ours: sets.New[string]()}
	for _, p := range plugins.Set() {
		r.ours.Insert(p.Name)
	}
	return r
}

// check says why our plugins would not place p on its node in c (p itself
// left out, as if not yet placed), or "".
func (r *rechecker) check(ctx context.Context, p *v1.Pod, c *explain.Cluster) string {
	res, err := explain.Explain(ctx, p, c, r.profile)
	if err != nil {
		return fmt.Sprintf("explain: %v", err)
	}
	for _, v := range res.PreFilter {
		if r.ours.Has(v.Plugin) && v.Code != fwk.Success.String() && v.Code != fwk.Skip.String() {
			return fmt.Sprintf("PreFilter %s: %s %v", v.Plugin, v.Code, v.Reasons)
		}
	}
	for _, nr := range res.NodeResults {
		if nr.Node != p.Spec.NodeName {
			continue
		}
		if nr.ExcludedByPreFilter != "" {
			return nr.ExcludedByPreFilter
		}
		var bad []string
		for _, f := range nr.Filters {
			if r.ours.Has(f.Plugin) && f.Code != fwk.Success.String() && f.Code != fwk.Skip.String() {
				bad = append(bad, fmt.Sprintf("%s: %s %v", f.Plugin, f.Code, f.Reasons))
			}
		}
		if len(bad) > 0 {
			return strings.Join(bad, "; ")
		}
		return ""
	}
	return "its node is not in the cluster"
}

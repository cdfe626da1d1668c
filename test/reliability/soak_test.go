package reliability

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Pods created and deleted in waves against a fleet for a long while, one
// scheduler running the shipped config throughout. After every wave is
// deleted the scheduler is idle again, and then its live heap (after a GC,
// from /debug/pprof/heap on the secure port: profiling is on in the shipped
// config, as by default), its goroutines and its cache (no pods left in any
// node's state) must be back where the first idle moment had them. With
// RELIABILITY_PROFILE_DIR set, each idle moment's heap profile is saved
// there.
func TestSoak(t *testing.T) {
	total := intKnob(t, "RELIABILITY_SOAK_PODS", 400, 20000)
	nodes := intKnob(t, "RELIABILITY_SOAK_NODES", 50, 500)
	waveSize := intKnob(t, "RELIABILITY_SOAK_WAVE", 100, 2000)
	minDuration := durationKnob(t, "RELIABILITY_SOAK_DURATION", 0, 15*time.Minute)
	t.Logf("%d pods in waves of %d against %d nodes, for at least %v", total, waveSize, nodes, minDuration)
	loadAtStart := loadAverage()

	// The shipped config, but a lease that survives an apiserver slowed
	// down by a loaded machine: with the shipped 10s renew deadline a
	// leader that cannot renew in time exits (as upstream's does), which a
	// Deployment would restart but which ends a soak meant to watch one
	// process.
	opts := installation(t, leaseArgs("60s", "50s", "5s")...)
	profiles := os.Getenv("RELIABILITY_PROFILE_DIR")
	ns := env.NewNamespace(t, nil)
	env.CreateNodes(t, fleet(ns, nodes)...)
	token := profilerToken(t, ns)
	sched := startReplica(t, opts, "soak")
	waitForLeader(t, sched)

	start := time.Now()
	first := scrape(t, sched, token)
	var idle []sample
	created, waves := 0, 0
	for created < total || time.Since(start) < minDuration {
		n := waveSize
		if created < total {
			n = min(waveSize, total-created)
		}
		createWave(t, ns, created, n, nodes)
		created += n
		waves++
		waitAllBound(t, ns)
		deleteAll(t, ns)
		s := waitIdle(t, sched, token, nodes)
		idle = append(idle, s)
		if profiles != "" {
			saveHeapProfile(t, sched, token, filepath.Join(profiles, fmt.Sprintf("soak-heap-wave-%02d.pb.gz", waves)))
		}
		t.Logf("wave %d: %d pods in total, %v; idle: %s", waves, created, time.Since(start).Round(time.Second), s)
	}
	elapsed := time.Since(start)

	binds, torn := bindings(t, ns)
	if torn > 0 {
		t.Errorf("%d audit lines cut short, yet no kube-apiserver was killed", torn)
	}
	bound, double, rejected := 0, 0, map[int32]int{}
	for _, bs := range binds {
		ok := 0
		for _, b := range bs {
			if b.succeeded() {
				ok++
			} else {
				rejected[b.Code]++
			}
		}
		if ok > 0 {
			bound++
		}
		if ok > 1 {
			double++
		}
	}
	if bound != created || double != 0 {
		t.Errorf("%d pods created, %d bound (audit log), %d bound more than once", created, bound, double)
	}

	base, last := idle[0], idle[len(idle)-1]
	if limit := base.goroutines + max(50, base.goroutines/4); last.goroutines > limit {
		t.Errorf("goroutines when idle grew from %d after wave 1 to %d after wave %d (limit %d): a leak per pod or per wave", base.goroutines, last.goroutines, len(idle), limit)
	}
	if limit := base.heapAlloc + base.heapAlloc/2 + 32<<20; last.heapAlloc > limit {
		t.Errorf("live heap when idle grew from %s after wave 1 to %s after wave %d (limit %s)", mib(base.heapAlloc), mib(last.heapAlloc), len(idle), mib(limit))
	}
	panics := countPanics(sched.Log())
	if panics > 0 {
		t.Errorf("%d panics in the scheduler's log", panics)
	}
	if sched.Exited() {
		t.Errorf("the scheduler exited (%v)", sched.Err())
	}
	heaps := make([]string, len(idle))
	gors := make([]string, len(idle))
	for i, s := range idle {
		heaps[i], gors[i] = mib(s.heapAlloc), strconv.Itoa(s.goroutines)
	}
	t.Logf("idle live heap per wave: %s", strings.Join(heaps, " "))
	t.Logf("idle goroutines per wave: %s", strings.Join(gors, " "))
	report(t, fmt.Sprintf("soak | %d waves of ≤%d pods created, bound, deleted, %d nodes, %v | pods created %d, bound %d, lost %d, double-bound %d (binding requests refused, by code: %v) | n/a | panics %d | live heap before any pod %s, idle after wave 1 %s, after wave %d %s (max %s); goroutines %d / %d / %d; scheduler cache after each wave: 0 pods, %d nodes | load %s → %s",
		waves, waveSize, nodes, elapsed.Round(time.Second), created, bound, created-bound, double, rejected, panics,
		mib(first.heapAlloc), mib(base.heapAlloc), len(idle), mib(last.heapAlloc), mib(maxHeap(idle)), first.goroutines, base.goroutines, last.goroutines, nodes, loadAtStart, loadAverage()))
}

// createWave creates pods from..from+n-1 with four concurrent clients.
func createWave(t *testing.T, ns string, from, n, nodes int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := from + w; i < from+n; i += 4 {
				if _, err := env.Client.CoreV1().Pods(ns).Create(context.Background(), mixedPod(ns, i, nodes), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating pods: %v", err)
	}
}

// deleteAll deletes every pod of ns at once, as a node drain or a scale to
// zero would, and waits until they are gone.
func deleteAll(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting the pods of %s: %v", ns, err)
	}
	env.Poll(t, "every pod of "+ns+" to be gone", func(ctx context.Context) (bool, error) {
		l, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, nil
	})
}

// sample is the scheduler's state at one moment.
type sample struct {
	heapAlloc  uint64 // live heap right after a GC
	goroutines int
	// From its metrics: what its cache holds.
	cachePods, cacheAssumed, cacheNodes int
}

func (s sample) String() string {
	return fmt.Sprintf("live heap %s, %d goroutines, cache %d pods (%d assumed), %d nodes", mib(s.heapAlloc), s.goroutines, s.cachePods, s.cacheAssumed, s.cacheNodes)
}

func mib(b uint64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

func maxHeap(ss []sample) uint64 {
	var m uint64
	for _, s := range ss {
		m = max(m, s.heapAlloc)
	}
	return m
}

// waitIdle waits until the scheduler's cache holds no pod (every deletion
// seen, nothing assumed, no per-node state left) and all nodes, then
// samples it.
func waitIdle(t *testing.T, sched *replica, token string, nodes int) sample {
	t.Helper()
	var s sample
	env.Poll(t, "the scheduler's cache to hold no pods", func(context.Context) (bool, error) {
		s = scrape(t, sched, token)
		return s.cachePods == 0 && s.cacheAssumed == 0 && s.cacheNodes == nodes, nil
	})
	return s
}

// scrape reads the scheduler's live heap (GET /debug/pprof/heap?gc=1,
// which collects garbage first, so the figure is what is reachable), its
// goroutines and its cache sizes (GET /metrics) on the secure port.
func scrape(t *testing.T, sched *replica, token string) sample {
	t.Helper()
	get := func(path string) []byte {
		code, body, err := sched.GetBody(path, token)
		if err != nil || code != 200 {
			t.Fatalf("GET %s: %d %v %.200s", path, code, err, body)
		}
		return body
	}
	var s sample
	heap := get("/debug/pprof/heap?debug=1&gc=1")
	alloc, ok := statLine(heap, "# HeapAlloc = ")
	if !ok {
		t.Fatalf("/debug/pprof/heap?debug=1 has no HeapAlloc line")
	}
	s.heapAlloc = uint64(alloc)
	metrics := get("/metrics")
	g, ok := statLine(metrics, "go_goroutines ")
	if !ok {
		t.Fatalf("/metrics has no go_goroutines")
	}
	s.goroutines = int(g)
	// The cache publishes its sizes once a second: -1 until the first time.
	for typ, dst := range map[string]*int{"pods": &s.cachePods, "assumed_pods": &s.cacheAssumed, "nodes": &s.cacheNodes} {
		*dst = -1
		if v, ok := statLine(metrics, `scheduler_cache_size{type="`+typ+`"} `); ok {
			*dst = int(v)
		}
	}
	return s
}

// saveHeapProfile writes the scheduler's heap profile (after a GC) to
// path, for `go tool pprof -diff_base` between two idle moments.
func saveHeapProfile(t *testing.T, sched *replica, token, path string) {
	t.Helper()
	code, body, err := sched.GetBody("/debug/pprof/heap?gc=1", token)
	if err != nil || code != 200 {
		t.Fatalf("GET /debug/pprof/heap: %d %v", code, err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// statLine finds the line starting with prefix and parses the number after
// it.
func statLine(body []byte, prefix string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// profilerToken returns the token of a ServiceAccount in ns allowed to GET
// /metrics and /debug/pprof on the scheduler (which asks the apiserver, by
// SubjectAccessReview).
func profilerToken(t *testing.T, ns string) string {
	t.Helper()
	name := "profiler-" + ns
	env.Create(t,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "profiler", Namespace: ns}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/debug/pprof", "/debug/pprof/*"}, Verbs: []string{"get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "profiler", Namespace: ns}},
		})
	return env.ServiceAccountToken(t, ns, "profiler")
}

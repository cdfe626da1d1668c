package examples

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"

	"github.com/placement-scheduler/placement-scheduler/test/framework"
)

// stormSizeEnv sizes the storm: nodes/relabelled/pods. make test runs the
// default; make test-storm the full size, 5000/1000/3000.
const stormSizeEnv = "ENFORCER_STORM"

type stormSize struct{ nodes, relabelled, pods int }

func stormSizeFrom(t *testing.T) stormSize {
	t.Helper()
	s := stormSize{nodes: 200, relabelled: 40, pods: 120}
	if v := os.Getenv(stormSizeEnv); v != "" {
		if _, err := fmt.Sscanf(v, "%d/%d/%d", &s.nodes, &s.relabelled, &s.pods); err != nil ||
			s.relabelled < 10 || s.relabelled >= s.nodes || s.pods < 30 {
			t.Fatalf("%s=%q: want nodes/relabelled/pods, e.g. 5000/1000/3000 (relabelled at least 10 and fewer than nodes, pods at least 30)", stormSizeEnv, v)
		}
	}
	return s
}

// testStorm relabels a fifth of a fleet of KWOK nodes at once under
// opted-in pods, with caps and a rate that bind: every pod that can move
// is moved, exactly once, never beyond a cap or the rate; the pods that
// fit nowhere stay and are reported no-fit; every eviction is recorded as
// an event on its pod. It logs what the storm cost the enforcer: its CPU
// time and peak memory, the time it took to list the cluster and for its
// first pass, and the time until the last pod moved.
func testStorm(t *testing.T, h *enforcement) {
	size := stormSizeFrom(t)
	r := h.newRun(t, 3)
	pool, pinned, taint := r.key("pool"), r.key("pinned"), r.key("storm")
	// How long the slow steps (the fleet, the pods, the moves) may take:
	// a minute beyond the framework's bound, plus a fifth of a second for
	// each pod.
	deadline := env.Timeout + time.Minute + time.Duration(size.pods)*200*time.Millisecond

	// The fleet: every node in the pool; the relabelled ones leave it,
	// and a tenth of them alone are pinned nodes. The taint keeps every
	// other test's pods off.
	var nodes, relabelled []string
	stormNodes := make([]*v1.Node, 0, size.nodes)
	for i := range size.nodes {
		name := fmt.Sprintf("s%d", i)
		n := framework.SchedulableNode(r.nss[0], name).Label(pool, "yes").Label(nodeOfLabel, r.id).
			Taint(taint, "yes", v1.TaintEffectNoSchedule).Obj()
		if i < size.relabelled {
			relabelled = append(relabelled, n.Name)
			if i < size.relabelled/10 {
				n.Labels[pinned] = "yes"
			}
		}
		n.Annotations = map[string]string{framework.KWOKNodeAnnotation: framework.KWOKNodeValue}
		stormNodes = append(stormNodes, n)
		nodes = append(nodes, n.Name)
	}
	createStormNodes(t, r, stormNodes, deadline)

	// The pods: a few ReplicaSets that need a pinned node (they can go
	// nowhere once their nodes leave the pool) and the rest in owners of
	// equal size, spread over the three namespaces.
	tolerate := v1.Toleration{Key: taint, Operator: v1.TolerationOpEqual, Value: "yes", Effect: v1.TaintEffectNoSchedule}
	pinnedOwners, pinnedReplicas := max(1, size.pods/600), min(20, max(2, size.pods/30))
	movable := size.pods - pinnedOwners*pinnedReplicas
	owners := max(3, movable/100)
	replicas := movable / owners
	var apps [][2]string
	for i := range pinnedOwners {
		ns, app := r.nss[i%len(r.nss)], fmt.Sprintf("pinned-%d", i)
		r.replicaSet(t, r.pod(ns, app, enforcedProfile).Toleration(tolerate).
			NodeSelector(map[string]string{pool: "yes", pinned: "yes"}).Obj(), int32(pinnedReplicas))
		apps = append(apps, [2]string{ns, app})
	}
	for i := range owners {
		ns, app := r.nss[i%len(r.nss)], fmt.Sprintf("app-%d", i)
		r.replicaSet(t, r.pod(ns, app, enforcedProfile).Toleration(tolerate).
			NodeSelector(map[string]string{pool: "yes"}).Obj(), int32(replicas))
		apps = append(apps, [2]string{ns, app})
	}
	total := pinnedOwners*pinnedReplicas + owners*replicas
	var before []v1.Pod
	pollUntil(t, deadline, fmt.Sprintf("%d pods Ready", total), func(ctx context.Context) (bool, error) {
		var err error
		before, err = stormPods(ctx, r)
		if err != nil || len(before) != total {
			return false, err
		}
		for i := range before {
			if !ready(&before[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	leaving := map[types.UID]bool{} // on a relabelled node
	var mustMove, mustStay int
	for i := range before {
		p := &before[i]
		if contains(relabelled, p.Spec.NodeName) {
			leaving[p.UID] = true
			if strings.HasPrefix(p.Labels["app"], "pinned-") {
				mustStay++
			} else {
				mustMove++
			}
		}
	}
	t.Logf("storm: %d nodes, %d relabelled (%d pinned); %d pods in %d owners of %d and %d of %d; %d on relabelled nodes: %d must move, %d fit nowhere",
		size.nodes, size.relabelled, size.relabelled/10, total, owners, replicas, pinnedOwners, pinnedReplicas, len(leaving), mustMove, mustStay)

	// Caps and a rate that bind at full size (more owners than the total
	// cap); a storm is what they are for.
	cfg := defaultEnforcerConfig()
	cfg.perNode, cfg.perNS, cfg.total, cfg.rate, cfg.burst = 1, 8, 20, 10, 10
	started := time.Now()
	enf := r.start(t, cfg)
	pollUntil(t, deadline, "the enforcer's first pass", func(context.Context) (bool, error) {
		if enf.Exited() {
			return false, fmt.Errorf("placement-enforcer exited: %v", enf.Err())
		}
		return strings.Contains(enf.Log(), "First pass done"), nil
	})
	takeover := time.Since(started)
	idle, err := enf.Usage()
	if err != nil {
		t.Fatal(err)
	}
	caps := newCapWatch(cfg, replicas)
	w := r.watchPods(t, caps.observe)

	// The storm: every relabelled node leaves the pool at once.
	relabelStart := time.Now()
	relabelNodes(t, relabelled, pool, "no")
	relabelTook := time.Since(relabelStart)

	pollUntil(t, deadline, fmt.Sprintf("%d pods moved off the relabelled nodes, %d kept there, none Pending", mustMove, mustStay), func(ctx context.Context) (bool, error) {
		if enf.Exited() {
			return false, fmt.Errorf("placement-enforcer exited: %v", enf.Err())
		}
		now, err := stormPods(ctx, r)
		if err != nil || len(now) != total {
			return false, err
		}
		kept := 0
		for i := range now {
			p := &now[i]
			switch {
			case !ready(p):
				return false, nil
			case contains(relabelled, p.Spec.NodeName) && strings.HasPrefix(p.Labels["app"], "pinned-"):
				kept++
			case contains(relabelled, p.Spec.NodeName):
				return false, nil
			}
		}
		return kept == mustStay, nil
	})
	movedIn := time.Since(relabelStart)
	storm, err := enf.Usage()
	if err != nil {
		t.Fatal(err)
	}
	pollUntil(t, deadline, fmt.Sprintf("/violations: %d pods no-fit", mustStay), func(context.Context) (bool, error) {
		n, ok := noFit(enf)
		return ok && n == mustStay, nil
	})

	// Exactly the pods that had to move were evicted, each once, by the
	// enforcer, at the rate at most (nothing refuses an eviction here).
	accepted := r.acceptedEvictions(t, mustMove)
	for i := range before {
		p := &before[i]
		_, evicted := accepted[p.Namespace+"/"+p.Name]
		if want := leaving[p.UID] && !strings.HasPrefix(p.Labels["app"], "pinned-"); evicted != want {
			t.Errorf("pod %s/%s on %s: evicted %v, want %v", p.Namespace, p.Name, p.Spec.NodeName, evicted, want)
		}
	}
	checkRate(t, accepted, cfg.rate, cfg.burst)
	caps.check(t, w, owners > cfg.total)
	if len(w.evicted()) != mustMove {
		t.Errorf("the watch saw %d pods evicted, want %d", len(w.evicted()), mustMove)
	}

	// Every eviction is on its pod as an event, however many other state
	// changes the storm reported.
	var missing []types.UID
	pollUntil(t, deadline, fmt.Sprintf("a PlacementEvicted event on each of the %d evicted pods", mustMove), func(ctx context.Context) (bool, error) {
		recorded := map[types.UID]bool{}
		for _, ns := range r.nss {
			sel := fields.Set{"involvedObject.kind": "Pod", "reason": "PlacementEvicted"}.AsSelector().String()
			list, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				return false, err
			}
			for _, ev := range list.Items {
				recorded[ev.InvolvedObject.UID] = true
			}
		}
		missing = missing[:0]
		for uid := range w.evicted() {
			if !recorded[uid] {
				missing = append(missing, uid)
			}
		}
		return len(missing) == 0, nil
	})

	cpu := storm.CPU - idle.CPU
	t.Logf("storm: relabel of %d nodes sent in %s; every pod moved %s after it started", size.relabelled, relabelTook.Round(time.Millisecond), movedIn.Round(time.Millisecond))
	t.Logf("storm: enforcer CPU %s during the storm (%.0f%% of one core over %s), %s before it (start, list, first pass and idle, %s); peak RSS %d MiB",
		cpu.Round(10*time.Millisecond), 100*cpu.Seconds()/movedIn.Seconds(), movedIn.Round(time.Second),
		idle.CPU.Round(10*time.Millisecond), takeover.Round(time.Millisecond), storm.PeakRSS>>20)
	for _, line := range regexp.MustCompile(`(?m)^.*"(Listed the cluster|First pass done)".*$`).FindAllString(enf.Log(), -1) {
		t.Logf("storm: enforcer log: %s", line)
	}
}

// createStormNodes creates nodes (deleted with the test) and waits until
// KWOK reports each Ready and the node lifecycle controller has lifted its
// not-ready taint.
func createStormNodes(t *testing.T, r *run, nodes []*v1.Node, deadline time.Duration) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: nodeOfLabel + "=" + r.id}
	t.Cleanup(func() {
		if err := env.Client.CoreV1().Nodes().DeleteCollection(context.Background(), metav1.DeleteOptions{}, sel); err != nil {
			t.Errorf("deleting the storm's nodes: %v", err)
		}
	})
	forEach(t, len(nodes), func(ctx context.Context, i int) error {
		_, err := env.Client.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
		return err
	})
	pollUntil(t, deadline, fmt.Sprintf("%d nodes Ready without the not-ready taint", len(nodes)), func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Nodes().List(ctx, sel)
		if err != nil || len(list.Items) != len(nodes) {
			return false, err
		}
		for i := range list.Items {
			if !nodeUp(&list.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
}

// relabelNodes sets label key=value on every node in names, many at once.
func relabelNodes(t *testing.T, names []string, key, value string) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value))
	forEach(t, len(names), func(ctx context.Context, i int) error {
		_, err := env.Client.CoreV1().Nodes().Patch(ctx, names[i], types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// forEach runs do for 0..n-1 on 32 workers (client-go's
// ParallelizeUntil) and fails t with the first error, after which no new
// piece starts.
func forEach(t *testing.T, n int, do func(context.Context, int) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	var first error
	workqueue.ParallelizeUntil(ctx, 32, n, func(i int) {
		if err := do(ctx, i); err != nil {
			once.Do(func() { first = err; cancel() })
		}
	})
	if first != nil {
		t.Fatal(first)
	}
}

// stormPods lists the live pods of r's namespaces.
func stormPods(ctx context.Context, r *run) ([]v1.Pod, error) {
	var out []v1.Pod
	for _, ns := range r.nss {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: testLabel + "=" + r.nss[0]})
		if err != nil {
			return nil, err
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// pollUntil is env.Poll with its own deadline, for the steps whose time
// grows with the storm's size.
func pollUntil(t *testing.T, deadline time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Second, deadline, true, cond); err != nil {
		t.Fatalf("waiting %s for %s: %v", deadline, what, err)
	}
}

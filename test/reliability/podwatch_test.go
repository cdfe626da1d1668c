package reliability

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// podWatch is the test's own running account of the pods of a namespace,
// from the apiserver (straight to it, never through a test's proxy): it
// lists them, watches from the list's resourceVersion, and lists again as
// soon as the watch ends (the apiserver stopped, say), every
// watchRetry while the apiserver is away. For each pod it keeps when it
// was first seen bound and every node it was seen bound to.
//
// It gives what neither the pod's final state nor the audit log can: when
// a pod was bound if the audit record of its binding was lost (a
// SIGKILLed apiserver), and a second binding the audit log missed (a
// pod's spec.nodeName never changes once set, so a second node is a
// second binding; a pod seen bound before its only successful binding
// request was received was bound twice).
type podWatch struct {
	mu    sync.Mutex
	pods  map[string]*podSeen
	lists []time.Time // when each successful list was sent
	done  chan struct{}
}

// podSeen is what a podWatch saw of one pod.
type podSeen struct {
	firstBound time.Time // zero: never seen bound
	nodes      []string  // every node it was seen bound to, in order
}

// watchRetry is how soon podWatch lists again after a failure: short, so
// that a pod bound by an apiserver that was then SIGKILLed is seen soon
// after the restart, before much else happens.
const watchRetry = 100 * time.Millisecond

// watchPods follows the pods of ns until the test ends.
func watchPods(t testing.TB, ns string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{pods: map[string]*podSeen{}, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.run(ctx, ns)
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

func (w *podWatch) run(ctx context.Context, ns string) {
	pods := env.Client.CoreV1().Pods(ns)
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(watchRetry):
			return true
		}
	}
	for ctx.Err() == nil {
		sent := time.Now()
		// From the watch cache: it answers while etcd is away.
		list, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			if !pause() {
				return
			}
			continue
		}
		w.mu.Lock()
		w.lists = append(w.lists, sent)
		for i := range list.Items {
			w.observe(&list.Items[i])
		}
		w.mu.Unlock()
		wi, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			if !pause() {
				return
			}
			continue
		}
		for ev := range wi.ResultChan() {
			if ev.Type == watch.Error {
				break // e.g. resourceVersion too old after a restart: list again
			}
			if p, ok := ev.Object.(*v1.Pod); ok {
				w.mu.Lock()
				w.observe(p)
				w.mu.Unlock()
			}
		}
		wi.Stop()
	}
}

// observe records p as seen now; w.mu is held.
func (w *podWatch) observe(p *v1.Pod) {
	s := w.pods[p.Name]
	if s == nil {
		s = &podSeen{}
		w.pods[p.Name] = s
	}
	if p.Spec.NodeName == "" {
		return
	}
	if s.firstBound.IsZero() {
		s.firstBound = time.Now()
	}
	if !slices.Contains(s.nodes, p.Spec.NodeName) {
		s.nodes = append(s.nodes, p.Spec.NodeName)
	}
}

// seen is what the watch saw of pod name.
func (w *podWatch) seen(name string) podSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.pods[name]; s != nil {
		return podSeen{firstBound: s.firstBound, nodes: slices.Clone(s.nodes)}
	}
	return podSeen{}
}

// caughtUp reports whether the watch saw each of pods bound where it is.
func (w *podWatch) caughtUp(pods []*v1.Pod) bool {
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		if s := w.seen(p.Name); !slices.Contains(s.nodes, p.Spec.NodeName) {
			return false
		}
	}
	return true
}

// firstListAfter is when the first successful list sent after t was sent,
// or t if the watch did not list again after t (it never lost the
// apiserver, so it saw every change as it happened).
func (w *podWatch) firstListAfter(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.lists {
		if l.After(t) {
			return l
		}
	}
	return t
}

// interval is the closed interval [from, to]; the zero interval holds no
// time anyone measures.
type interval struct{ from, to time.Time }

func (i interval) contains(t time.Time) bool {
	return !i.from.IsZero() && !t.Before(i.from) && !t.After(i.to)
}

package enforcer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// loops is the enforcer's history of its own evictions, per owner and
// rule, kept to tell a loop from a move: an eviction whose replacement is
// placed in violation of the same rule again (its scheduler does not apply
// the rule as the enforcer judges it, or a controller pins the node), or
// an owner whose replacements are evicted again and again. Such an owner
// is looping for that rule: none of its pods is evicted for it while the
// history says so. The history lives beside the evictions in flight
// (inflight.go), so a new leader continues it and a loop cannot go on
// across failovers.
type loops struct {
	// evictions (N) and window are the config's (Config.Loops).
	evictions int
	window    time.Duration
	// history holds, per owner and rule, its evictions within the window,
	// oldest first, at most evictions of them.
	history map[loopKey][]loopEviction
}

// loopKey is an owner and a rule.
type loopKey struct {
	owner types.UID
	rule  enforcerv1alpha1.Rule
}

// loopEviction is one eviction in an owner's history for a rule.
type loopEviction struct {
	// At is when it was asked for (the enforcer's clock): the window runs
	// from it.
	At time.Time `json:"at"`
	// After is the newest creation time among the owner's pods then (the
	// apiserver's clock): a pod created later is a replacement.
	After time.Time `json:"after"`
	// Target is the node promised to its replacement ("" with
	// evictWithoutFit and nowhere to go).
	Target string `json:"target,omitempty"`
	// Repeat: the evicted pod was itself created after an earlier eviction
	// in the history, a replacement evicted again.
	Repeat bool `json:"repeat,omitempty"`
	// Missed names the replacement (pod on node) that was placed in
	// violation of the rule again, on a node other than the ones promised:
	// the owner loops for as long as this eviction is in the window.
	Missed string `json:"missed,omitempty"`
}

// maxLoopHistory bounds the whole history (every owner's and rule's
// evictions), so that the ConfigMap it is saved in stays small however
// many owners move in a window (about 120 bytes an eviction): the oldest
// evictions go first.
const maxLoopHistory = 4096

// historyKey is the ConfigMap key the history is saved under, beside the
// evictions in flight (keyed by pod UID, which never has this form).
const historyKey = "loop-history"

func newLoops(cfg enforcerv1alpha1.LoopDetection) *loops {
	return &loops{evictions: cfg.Evictions, window: cfg.Window.Duration, history: map[loopKey][]loopEviction{}}
}

// expire drops what has left the window at now, then the oldest
// evictions beyond maxLoopHistory.
func (l *loops) expire(now time.Time) {
	total := 0
	for k, h := range l.history {
		h = slices.DeleteFunc(h, func(e loopEviction) bool { return !now.Before(e.At.Add(l.window)) })
		if len(h) == 0 {
			delete(l.history, k)
			continue
		}
		l.history[k] = h
		total += len(h)
	}
	if total <= maxLoopHistory {
		return
	}
	type at struct {
		k loopKey
		t time.Time
	}
	all := make([]at, 0, total)
	for k, h := range l.history {
		for _, e := range h {
			all = append(all, at{k, e.At})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].t.Before(all[j].t) })
	for _, old := range all[:total-maxLoopHistory] {
		h := l.history[old.k][1:] // oldest first: the oldest is the first
		if len(h) == 0 {
			delete(l.history, old.k)
		} else {
			l.history[old.k] = h
		}
	}
}

// looping says why owner's pods are not evicted for rule ("" when they
// may be) and until when. pod violates rule and is due: when it was
// created after one of the owner's evictions for rule in the window and
// runs on none of the nodes promised to their replacements, it was placed
// in violation again, and that eviction is marked (Missed) for the rest
// of its window. A replacement on a promised node that violates again
// (the node changed since) is evicted; its eviction is a Repeat, and
// evictions-1 of them in the window (evictions in all, counting the first)
// make the owner loop.
func (l *loops) looping(owner types.UID, rule enforcerv1alpha1.Rule, pod *v1.Pod, now time.Time) (string, time.Time) {
	k := loopKey{owner, rule}
	h := l.history[k]
	targets := map[string]bool{}
	for _, e := range h {
		if e.Target != "" {
			targets[e.Target] = true
		}
	}
	if !targets[pod.Spec.NodeName] {
		for i := len(h) - 1; i >= 0; i-- {
			if pod.CreationTimestamp.Time.After(h[i].After) && now.Before(h[i].At.Add(l.window)) {
				if h[i].Missed == "" {
					h[i].Missed = pod.Name + " on " + pod.Spec.NodeName
				}
				break
			}
		}
	}
	var why string
	var until time.Time
	repeats := 0
	for _, e := range h {
		end := e.At.Add(l.window)
		if !now.Before(end) {
			continue
		}
		if e.Missed != "" && end.After(until) {
			why, until = fmt.Sprintf("its replacement %s was placed in violation of the rule again, %s after the eviction at %s; not evicted for it again before %s",
				e.Missed, l.window, e.At.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)), end
		}
		if e.Repeat {
			repeats++
		}
	}
	if why != "" {
		return why, until
	}
	if repeats+1 >= l.evictions {
		// The oldest repeat that leaves the window lets it act again.
		for _, e := range h {
			if e.Repeat && now.Before(e.At.Add(l.window)) {
				until = e.At.Add(l.window)
				break
			}
		}
		return fmt.Sprintf("its pods were evicted %d times for the rule within %s, each time again after their replacement came (loops.evictions %d); not evicted for it again before %s",
			repeats+1, l.window, l.evictions, until.UTC().Format(time.RFC3339)), until
	}
	return "", time.Time{}
}

// add records the eviction of pod (owner's, for rule) asked for at now,
// whose owner's pods were then marked by after and whose replacement is
// promised target. It returns the undo, for an eviction that was not
// accepted.
func (l *loops) add(owner types.UID, rule enforcerv1alpha1.Rule, pod *v1.Pod, after time.Time, target string, now time.Time) func() {
	k := loopKey{owner, rule}
	h := l.history[k]
	e := loopEviction{At: now, After: after, Target: target}
	for _, prev := range h {
		if pod.CreationTimestamp.Time.After(prev.After) && now.Before(prev.At.Add(l.window)) {
			e.Repeat = true
		}
	}
	if len(h) >= l.evictions {
		// At most evictions per owner and rule: the oldest that is not a
		// repeat goes first (repeats are what the count is of).
		i := slices.IndexFunc(h, func(e loopEviction) bool { return !e.Repeat })
		if i < 0 {
			i = 0
		}
		h = slices.Delete(h, i, i+1)
	}
	l.history[k] = append(h, e)
	return func() {
		l.history[k] = slices.DeleteFunc(l.history[k], func(x loopEviction) bool { return x.At.Equal(now) })
		if len(l.history[k]) == 0 {
			delete(l.history, k)
		}
	}
}

// drop forgets owner's evictions asked for at at, for every rule: a
// predecessor saved them before asking, and their pods still run (the
// request was refused or never sent).
func (l *loops) drop(owner types.UID, at time.Time) {
	for k, h := range l.history {
		if k.owner != owner {
			continue
		}
		if h = slices.DeleteFunc(h, func(e loopEviction) bool { return e.At.Equal(at) }); len(h) == 0 {
			delete(l.history, k)
		} else {
			l.history[k] = h
		}
	}
}

// storedLoops is the history as saved: owner UID → rule → evictions.
type storedLoops map[types.UID]map[enforcerv1alpha1.Rule][]loopEviction

// encode is the history as the ConfigMap value ("" when empty).
func (l *loops) encode() (string, error) {
	if len(l.history) == 0 {
		return "", nil
	}
	out := storedLoops{}
	for k, h := range l.history {
		if out[k.owner] == nil {
			out[k.owner] = map[enforcerv1alpha1.Rule][]loopEviction{}
		}
		out[k.owner][k.rule] = h
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// decode replaces the history with a saved one.
func (l *loops) decode(value string) error {
	var in storedLoops
	if err := json.Unmarshal([]byte(value), &in); err != nil {
		return err
	}
	l.history = map[loopKey][]loopEviction{}
	for owner, rules := range in {
		for rule, h := range rules {
			sort.Slice(h, func(i, j int) bool { return h[i].At.Before(h[j].At) })
			if len(h) > l.evictions {
				h = h[len(h)-l.evictions:]
			}
			l.history[loopKey{owner, rule}] = h
		}
	}
	return nil
}

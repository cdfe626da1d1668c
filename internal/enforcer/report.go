package enforcer

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The states a violating pod is reported in.
const (
	StateGrace        = "grace"         // violating, grace period not over
	StateProtected    = "protected"     // never evicted; Detail says why
	StateWaitingOwner = "waiting-owner" // its owner has a pod not Ready or terminating
	StatePaced        = "paced"         // a cap or the rate limit holds it back
	StateNoFit        = "no-fit"        // no other node would take its replacement
	StatePDBBlocked   = "pdb-blocked"   // the Eviction API answered 429
	StateEvicting     = "evicting"      // eviction accepted
	StateDryRun       = "dry-run"       // the server accepted a dryRun eviction
	StateError        = "error"         // the eviction failed otherwise; Detail has the error
	StateLooping      = "looping"       // its owner's evictions for the rule loop; Detail says why
	StateUnjudged     = "unjudged"      // opted in, but cannot be judged; Detail says why
)

// WaitRateLimit is Report.Wait for a pod the rate limit holds back (the
// others are the evictions.Hold names).
const WaitRateLimit = "rate-limit"

// Report is one opted-in pod that violates a rule, after a pass. Its JSON
// form is what /violations serves.
type Report struct {
	Pod    string    `json:"pod"` // namespace/name
	UID    types.UID `json:"uid"`
	Node   string    `json:"node"`
	Rule   Rule      `json:"rule"`
	Reason string    `json:"reason"`
	Terms  []string  `json:"terms,omitempty"`
	State  string    `json:"state"`
	// Detail is the protection reason, the refusal or the error.
	Detail string `json:"detail,omitempty"`
	// Wait names what holds a pod that is due back, for waiting-owner
	// and paced: owner, limits.perNode, limits.perNamespace,
	// limits.total or rate-limit.
	Wait string `json:"wait,omitempty"`
	// Target is where the replacement would be scheduled.
	Target string      `json:"target,omitempty"`
	Since  metav1.Time `json:"since"`
}

// tracked is a violating pod's memory between passes.
type tracked struct {
	since map[Rule]time.Time
	state string // last reported, so events fire on changes only
	// last is the outcome of the last eviction request, reported again
	// while its backoff lasts, until retryAfter (a 429 stays pdb-blocked
	// until the retry).
	last       *Report
	retryAfter time.Time
	// noFit is the clusterState.fitGeneration at which a placement last
	// found no node for its replacement (nil: none since): until the
	// generation moves, the answer stands and it is not placed again.
	noFit *uint64
}

// report records r for pod and, when the state changed since the last
// pass, an event on the pod (and on its owner for evictions and no-fit).
func (p *pass) report(pod *v1.Pod, r Report, t *tracked) {
	r.Pod, r.UID, r.Node = pod.Namespace+"/"+pod.Name, pod.UID, pod.Spec.NodeName
	p.reports = append(p.reports, r)
	if t == nil {
		t = p.tracked[pod.UID]
		if t == nil {
			t = &tracked{since: map[Rule]time.Time{}}
			p.tracked[pod.UID] = t
		}
	}
	p.seen[pod.UID] = true
	if t.state == r.State {
		return
	}
	t.state = r.State
	p.logger.V(2).Info("Placement enforcement", "pod", klog.KObj(pod), "rule", r.Rule, "state", r.State, "detail", r.Detail, "target", r.Target)
	typ, reason, msg := v1.EventTypeWarning, "", ""
	rule := fmt.Sprintf("%s (%s)", r.Rule, r.Reason)
	switch r.State {
	case StateGrace:
		reason, msg = "PlacementViolation", fmt.Sprintf("violates %s; evicted after the grace period unless it clears", rule)
	case StateProtected:
		reason, msg = "PlacementProtected", fmt.Sprintf("violates %s but is never evicted: %s", rule, r.Detail)
	case StateNoFit:
		reason, msg = "PlacementNoFit", fmt.Sprintf("violates %s; kept: no other node would take its replacement", rule)
	case StatePDBBlocked:
		reason, msg = reasonEvictionBlocked, fmt.Sprintf("violates %s; eviction refused, retried after backoff: %s", rule, r.Detail)
	case StateEvicting:
		typ, reason, msg = v1.EventTypeNormal, reasonEvicted, fmt.Sprintf("evicted for %s; its replacement fits on %s", rule, orNone(r.Target))
	case StateDryRun:
		typ, reason, msg = v1.EventTypeNormal, reasonDryRun, fmt.Sprintf("would be evicted for %s (dry run; the Eviction API agreed); its replacement fits on %s", rule, orNone(r.Target))
	case StateError:
		reason, msg = reasonEvictionFailed, fmt.Sprintf("violates %s; eviction failed: %s", rule, r.Detail)
	case StateLooping:
		reason, msg = reasonLooping, fmt.Sprintf("violates %s but is not evicted: %s", rule, r.Detail)
	case StateUnjudged:
		reason, msg = "PlacementUnjudged", "opted in to enforcement but cannot be judged: "+r.Detail
	default: // paced, waiting-owner, backoff: transient, logged only
		return
	}
	p.recorder.Event(pod, typ, reason, msg)
	if o := metav1.GetControllerOf(pod); o != nil && (r.State == StateEvicting || r.State == StateNoFit || r.State == StateLooping) {
		ref := &v1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, UID: o.UID, Namespace: pod.Namespace}
		p.recorder.Event(ref, typ, reason, fmt.Sprintf("pod %s %s", pod.Name, msg))
	}
}

// reasonLooping is the event of a pod held back because its owner loops
// for the rule (loops.go).
const reasonLooping = "PlacementLooping"

// The events of eviction requests: the answer to each request the
// enforcer made. Their number is bounded by the eviction rate, so they get
// a budget of their own (events.go) and a storm of other state changes never
// crowds them out.
const (
	reasonEvicted         = "PlacementEvicted"
	reasonEvictionBlocked = "PlacementEvictionBlocked"
	reasonEvictionFailed  = "PlacementEvictionFailed"
	reasonDryRun          = "PlacementDryRun"
)

// evictionEvent: reason is an eviction request's event.
func evictionEvent(reason string) bool {
	switch reason {
	case reasonEvicted, reasonEvictionBlocked, reasonEvictionFailed, reasonDryRun:
		return true
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "no node (evictWithoutFit)"
	}
	return s
}

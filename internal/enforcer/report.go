package enforcer

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	violationsv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/violations/v1alpha1"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// tracked is a violating pod's memory between passes.
type tracked struct {
	since map[enforcerv1alpha1.Rule]time.Time
	state string // last reported, so events fire on changes only
	// last is the outcome of the last eviction request, reported again
	// while its backoff lasts, until retryAfter (a 429 stays pdb-blocked
	// until the retry).
	last       *violationsv1alpha1.Report
	retryAfter time.Time
	// noFit is the clusterState.fitGeneration at which a placement last
	// found no node for its replacement (nil: none since): until the
	// generation moves, the answer stands and it is not placed again.
	noFit *uint64
}

// report records r for pod and, when the state changed since the last
// pass, an event on the pod (and on its owner for evictions and no-fit).
func (p *pass) report(pod *v1.Pod, r violationsv1alpha1.Report, t *tracked) {
	r.Pod, r.UID, r.Node = pod.Namespace+"/"+pod.Name, pod.UID, pod.Spec.NodeName
	p.reports = append(p.reports, r)
	if t == nil {
		t = p.tracked[pod.UID]
		if t == nil {
			t = &tracked{since: map[enforcerv1alpha1.Rule]time.Time{}}
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
	case violationsv1alpha1.StateGrace:
		reason, msg = "PlacementViolation", fmt.Sprintf("violates %s; evicted after the grace period unless it clears", rule)
	case violationsv1alpha1.StateProtected:
		reason, msg = "PlacementProtected", fmt.Sprintf("violates %s but is never evicted: %s", rule, r.Detail)
	case violationsv1alpha1.StateNoFit:
		reason, msg = "PlacementNoFit", fmt.Sprintf("violates %s; kept: no other node would take its replacement", rule)
	case violationsv1alpha1.StatePDBBlocked:
		reason, msg = reasonEvictionBlocked, fmt.Sprintf("violates %s; eviction refused, retried after backoff: %s", rule, r.Detail)
	case violationsv1alpha1.StateEvicting:
		typ, reason, msg = v1.EventTypeNormal, reasonEvicted, fmt.Sprintf("evicted for %s; its replacement fits on %s", rule, orNone(r.Target))
	case violationsv1alpha1.StateDryRun:
		typ, reason, msg = v1.EventTypeNormal, reasonDryRun, fmt.Sprintf("would be evicted for %s (dry run; the Eviction API agreed); its replacement fits on %s", rule, orNone(r.Target))
	case violationsv1alpha1.StateError:
		reason, msg = reasonEvictionFailed, fmt.Sprintf("violates %s; eviction failed: %s", rule, r.Detail)
	case violationsv1alpha1.StateLooping:
		reason, msg = reasonLooping, fmt.Sprintf("violates %s but is not evicted: %s", rule, r.Detail)
	case violationsv1alpha1.StateUnjudged:
		reason, msg = "PlacementUnjudged", "opted in to enforcement but cannot be judged: "+r.Detail
	default: // paced, waiting-owner, backoff: transient, logged only
		return
	}
	p.recorder.Event(pod, typ, reason, msg)
	if o := metav1.GetControllerOf(pod); o != nil && (r.State == violationsv1alpha1.StateEvicting || r.State == violationsv1alpha1.StateNoFit || r.State == violationsv1alpha1.StateLooping) {
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

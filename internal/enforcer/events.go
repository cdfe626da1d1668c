package enforcer

import (
	"context"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	enforcerv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/enforcer/v1alpha1"
)

// newRecorder returns the enforcer's event recorder and the function that
// stops it. Events never share the evictions' client budget: a storm of
// them never delays an eviction or a record. They go through two
// broadcasters, each with a client of its own:
//   - the events of eviction requests (evictionEvent), whose number the
//     eviction rate bounds: their budget is sized from that rate (two
//     events per request, the pod's and its owner's), so their queue
//     never grows and every request's answer is recorded on its pod, however
//     many other state changes a storm brings;
//   - every other event (violations, no-fit, protections...), on
//     clientConnection.eventQPS/eventBurst: in a storm they queue, and a
//     broadcaster drops what is beyond its queue of 1000 (client-go's).
//
// Both broadcasters' correlators aggregate similar events on one object
// and cap each object's rate (client-go's defaults): an owner whose pods
// move by the hundred gets its first 25 events, then one per 5 minutes.
func newRecorder(ctx context.Context, restConfig *rest.Config, cfg *enforcerv1alpha1.EnforcerConfiguration) (record.EventRecorder, func(), error) {
	cc := cfg.ClientConnection
	evictQPS, evictBurst := evictionEventBudget(cfg)
	evictions, stopEvictions, err := broadcast(ctx, restConfig, evictQPS, evictBurst)
	if err != nil {
		return nil, nil, err
	}
	states, stopStates, err := broadcast(ctx, restConfig, cc.EventQPS, cc.EventBurst)
	if err != nil {
		stopEvictions()
		return nil, nil, err
	}
	return eventRouter{evictions: evictions, states: states}, func() { stopStates(); stopEvictions() }, nil
}

// evictionEventBudget is the client budget of the eviction requests'
// events: at least the events' own, and enough for two events per request
// at the eviction rate and burst.
func evictionEventBudget(cfg *enforcerv1alpha1.EnforcerConfiguration) (float32, int) {
	cc := cfg.ClientConnection
	return float32(math.Max(float64(cc.EventQPS), 2*cfg.EvictionsPerSecond)), max(cc.EventBurst, 2*cfg.Burst)
}

// broadcast starts a broadcaster writing events through a client of qps
// and burst.
func broadcast(ctx context.Context, restConfig *rest.Config, qps float32, burst int) (record.EventRecorder, func(), error) {
	c := rest.CopyConfig(restConfig)
	c.QPS, c.Burst = qps, burst
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: Component}), b.Shutdown, nil
}

// eventRouter sends each event to the broadcaster of its kind
// (newRecorder).
type eventRouter struct{ evictions, states record.EventRecorder }

func (r eventRouter) pick(reason string) record.EventRecorder {
	if evictionEvent(reason) {
		return r.evictions
	}
	return r.states
}

func (r eventRouter) Event(obj runtime.Object, typ, reason, msg string) {
	r.pick(reason).Event(obj, typ, reason, msg)
}

func (r eventRouter) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	r.pick(reason).Eventf(obj, typ, reason, format, args...)
}

func (r eventRouter) AnnotatedEventf(obj runtime.Object, annotations map[string]string, typ, reason, format string, args ...any) {
	r.pick(reason).AnnotatedEventf(obj, annotations, typ, reason, format, args...)
}

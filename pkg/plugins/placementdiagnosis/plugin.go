// Package placementdiagnosis implements PlacementDiagnosis, an opt-in
// PostFilter plugin: when no node fits a pod, it records one compact
// Warning event on the pod (reason PlacementDiagnosis) that names, per
// plugin, the deciding term, taint or pod and a few example nodes, so that
// `kubectl describe pod` answers "why Pending" without kubectl-placement.
//
// It is off unless a profile enables it. PostFilter runs only after
// filtering found no node, so a pod that schedules never reaches it; it
// returns Unschedulable with no reasons, which leaves kube-scheduler's own
// FailedScheduling message exactly as it is, and it never nominates.
package placementdiagnosis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/utils/clock"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
)

const (
	// Name is the name the plugin is registered under.
	Name = "PlacementDiagnosis"
	// Reason is the event reason.
	Reason = "PlacementDiagnosis"

	// maxNote is the longest event note the events API accepts (1 kB).
	maxNote = 1024
	// Cluster-wide cap on diagnosis events, whatever the per-pod interval:
	// a burst of unschedulable pods must not flood the apiserver.
	eventsPerSecond = 1
	eventsBurst     = 10
)

// Args are the plugin's pluginConfig args.
type Args struct {
	// MinInterval is the least time between two diagnoses of the same pod
	// (default 5m): the scheduler retries an unschedulable pod often.
	MinInterval *metav1.Duration `json:"minInterval,omitempty"`
	// Examples is how many node names each cause lists (default 3, 0-10).
	Examples *int `json:"examples,omitempty"`
}

// PlacementDiagnosis is the plugin.
type PlacementDiagnosis struct {
	handle      fwk.Handle
	explainers  map[string]explanation.FilterExplainer
	minInterval time.Duration
	examples    int
	clock       clock.PassiveClock
	limiter     flowcontrol.PassiveRateLimiter

	mu   sync.Mutex
	last map[types.UID]time.Time // when each pod was last diagnosed
}

var _ fwk.PostFilterPlugin = &PlacementDiagnosis{}

// Factory is the shape of a plugin package's New (pkg/plugins.Factory).
type Factory = func(ctx context.Context, args runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error)

// NewWith returns the plugin's factory. The plugin builds its own instances
// of the plugins explainers build (with default args) and asks those that
// implement explanation.FilterExplainer to explain their rejections; their
// state is read from the cycle state the profile's instances wrote, which
// they share by package. pkg/plugins hands it the New of every row of its
// Set, so this package keeps no list of its own (and cannot import
// pkg/plugins, which imports it).
func NewWith(explainers ...Factory) Factory {
	return func(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
		return newWithClock(ctx, obj, h, fts, clock.RealClock{}, explainers)
	}
}

func newWithClock(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features, c clock.PassiveClock, explainers []Factory) (*PlacementDiagnosis, error) {
	var args Args
	if err := pluginargs.DecodeStrict(obj, &args); err != nil {
		return nil, err
	}
	pl := &PlacementDiagnosis{
		handle:      h,
		explainers:  map[string]explanation.FilterExplainer{},
		minInterval: 5 * time.Minute,
		examples:    3,
		clock:       c,
		limiter:     flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(eventsPerSecond, eventsBurst, c),
		last:        map[types.UID]time.Time{},
	}
	if args.MinInterval != nil {
		if args.MinInterval.Duration < 0 {
			return nil, fmt.Errorf("minInterval: Invalid value: %q: must not be negative", args.MinInterval.Duration)
		}
		pl.minInterval = args.MinInterval.Duration
	}
	if args.Examples != nil {
		if *args.Examples < 0 || *args.Examples > 10 {
			return nil, fmt.Errorf("examples: Invalid value: %d: not in valid range [0, 10]", *args.Examples)
		}
		pl.examples = *args.Examples
	}
	for _, f := range explainers {
		p, err := f(ctx, nil, h, fts)
		if err != nil {
			return nil, err
		}
		if ex, ok := p.(explanation.FilterExplainer); ok {
			pl.explainers[p.Name()] = ex
		}
	}
	return pl, nil
}

// Name returns the registered plugin name.
func (pl *PlacementDiagnosis) Name() string { return Name }

// Explains returns the names of the plugins whose rejections it explains,
// sorted.
func (pl *PlacementDiagnosis) Explains() []string {
	return slices.Sorted(maps.Keys(pl.explainers))
}

// PostFilter records the diagnosis event when the pod's and the cluster's
// rate limits allow, and always leaves the outcome to the other PostFilter
// plugins: Unschedulable, no reasons, no nomination.
func (pl *PlacementDiagnosis) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if pl.allow(pod.UID) {
		note, err := pl.diagnose(ctx, state, pod, statuses)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("No placement diagnosis", "pod", klog.KObj(pod), "err", err)
		} else {
			pl.handle.EventRecorder().Eventf(pod, nil, v1.EventTypeWarning, Reason, "Scheduling", "%s", note)
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// allow reports whether pod may be diagnosed now, and records it if so.
func (pl *PlacementDiagnosis) allow(uid types.UID) bool {
	now := pl.clock.Now()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if t, ok := pl.last[uid]; ok && now.Sub(t) < pl.minInterval {
		return false
	}
	if !pl.limiter.TryAccept() {
		return false
	}
	// Forget pods diagnosed long enough ago: they may be retried anyway,
	// and deleted pods must not keep the map growing.
	for id, t := range pl.last {
		if now.Sub(t) >= pl.minInterval {
			delete(pl.last, id)
		}
	}
	pl.last[uid] = now
	return true
}

// cause is one deciding reason and the nodes it decided.
type cause struct {
	plugin, what string
	nodes        []string
}

// diagnose groups the nodes by the status the scheduler recorded for them
// (the first failing plugin), refined by our plugins' explanations.
func (pl *PlacementDiagnosis) diagnose(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (string, error) {
	nodes, err := pl.handle.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return "", err
	}
	byKey := map[[2]string]*cause{}
	add := func(plugin, what, node string) {
		k := [2]string{plugin, what}
		c, ok := byKey[k]
		if !ok {
			c = &cause{plugin: plugin, what: what}
			byKey[k] = c
		}
		c.nodes = append(c.nodes, node)
	}
	for _, ni := range nodes {
		name := ni.Node().Name
		st := statuses.Get(name)
		if st.IsSuccess() {
			continue
		}
		plugin := st.Plugin()
		// Our NodeAffinity instance has no addedAffinity (the profile's args
		// are not ours to read): the scheduler's reason says it all.
		enforced := plugin == nodeaffinity.Name && slices.Contains(st.Reasons(), nodeaffinity.ErrReasonEnforced)
		if ex, ok := pl.explainers[plugin]; ok && !enforced {
			if causes := ex.ExplainFilter(ctx, state, pod, ni); len(causes) > 0 {
				for _, c := range causes {
					add(plugin, c.Message, name)
				}
				continue
			}
		}
		for _, r := range st.Reasons() {
			add(plugin, r, name)
		}
	}
	causes := make([]*cause, 0, len(byKey))
	for _, c := range byKey {
		sort.Strings(c.nodes)
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		if len(causes[i].nodes) != len(causes[j].nodes) {
			return len(causes[i].nodes) > len(causes[j].nodes)
		}
		return causes[i].plugin+causes[i].what < causes[j].plugin+causes[j].what
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d node(s), by deciding plugin: ", len(nodes))
	for i, c := range causes {
		part := fmt.Sprintf("%s: %s (%d node(s)%s)", c.plugin, c.what, len(c.nodes), pl.exampleList(c.nodes))
		if i > 0 {
			part = "; " + part
		}
		if b.Len()+len(part) > maxNote {
			rest := fmt.Sprintf("; +%d more", len(causes)-i)
			if b.Len()+len(rest) <= maxNote {
				b.WriteString(rest)
			}
			break
		}
		b.WriteString(part)
	}
	return b.String(), nil
}

func (pl *PlacementDiagnosis) exampleList(nodes []string) string {
	if pl.examples == 0 {
		return ""
	}
	if len(nodes) > pl.examples {
		nodes = nodes[:pl.examples]
	}
	return ", e.g. " + strings.Join(nodes, ", ")
}

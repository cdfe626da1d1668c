package interpodaffinity

import (
	"context"
	"errors"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/cyclestate"
)

// Name is the name the plugin is registered under. The in-tree name
// "InterPodAffinity" is taken by kube-scheduler's own registry.
const Name = "PlacementInterPodAffinity"

// InterPodAffinity places pods relative to other pods: by required and
// preferred pod (anti-)affinity of the incoming pod, and by the terms of the
// pods already running.
type InterPodAffinity struct {
	args         args
	parallelizer fwk.Parallelizer
	sharedLister fwk.SharedLister
	// nsLister resolves namespaceSelectors of the incoming pod's terms and
	// the incoming pod's namespace labels for existing pods' terms.
	nsLister listersv1.NamespaceLister
	// hostnameFastPath mirrors gate InterPodAffinityHostnameFastPath:
	// kubernetes.io/hostname-scoped terms are checked against the candidate
	// node's own pods instead of cluster-wide topology counts (docs/behavior.md §7.8).
	hostnameFastPath bool
	// skipDeferredResize makes PreFilter Skip and Filter pass for pods whose
	// in-place resize is deferred
	// (gate InPlacePodVerticalScalingSchedulerPreemption).
	skipDeferredResize bool
	// caches are kept across cycles (doc.go).
	caches *caches
}

var (
	_ fwk.PreFilterPlugin     = &InterPodAffinity{}
	_ fwk.PreFilterExtensions = &InterPodAffinity{}
	_ fwk.FilterPlugin        = &InterPodAffinity{}
	_ fwk.PreScorePlugin      = &InterPodAffinity{}
	_ fwk.ScorePlugin         = &InterPodAffinity{}
	_ fwk.ScoreExtensions     = &InterPodAffinity{}
	_ fwk.EnqueueExtensions   = &InterPodAffinity{}
	_ fwk.SignPlugin          = &InterPodAffinity{}
)

// New builds the plugin from args that arrive undecoded (*runtime.Unknown) or
// nil, because kube-scheduler neither decodes nor defaults args of plugin
// names it does not know.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features) (fwk.Plugin, error) {
	return newPlugin(ctx, obj, h, fts, options{})
}

// newPlugin is New with options that are not configuration (tests turn
// the caches off with them).
func newPlugin(_ context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features, opts options) (fwk.Plugin, error) {
	if h.SnapshotSharedLister() == nil {
		// upstream's text, typo included
		return nil, errors.New("SnapshotSharedlister is nil")
	}
	a, err := decodeArgs(obj)
	if err != nil {
		return nil, err
	}
	return &InterPodAffinity{
		args:         a,
		parallelizer: h.Parallelizer(),
		sharedLister: h.SnapshotSharedLister(),
		// Asking the factory for the lister registers the Namespace
		// informer, so it is started and synced with the others.
		nsLister:           h.SharedInformerFactory().Core().V1().Namespaces().Lister(),
		hostnameFastPath:   k8sline.HostnameFastPath(fts),
		skipDeferredResize: k8sline.SkipsDeferredResize(fts),
		caches:             newCaches(Name, fts, opts),
	}, nil
}

// Name returns the registered plugin name.
func (pl *InterPodAffinity) Name() string { return Name }

// resizeDeferred reports whether the pod is a deferred in-place resize that
// the scheduler evaluates for preemption only; it is already bound, so pod
// placement rules do not apply to it.
func (pl *InterPodAffinity) resizeDeferred(pod *v1.Pod) bool {
	return pl.skipDeferredResize && resource.IsPodResizeDeferred(pod)
}

// foldNamespaceSelector rewrites one of the incoming pod's terms so that it
// can be matched against thousands of existing pods with no namespace
// lookups: the namespaces its namespaceSelector selects right now join the
// term's namespace list, and the selector becomes after (what after is
// differs between minors: resolveNamespaces in minor_*.go). The lister is
// asked once per term and cycle instead of once per existing pod.
//
// Two selectors are left alone. {} (Empty) must keep selecting every
// namespace, including ones the lister has not seen; Nothing (from a nil
// selector) selects none, so listing with it would add nothing.
func (pl *InterPodAffinity) foldNamespaceSelector(t *fwk.AffinityTerm, after labels.Selector) error {
	sel := t.NamespaceSelector
	if sel.Empty() {
		return nil
	}
	if _, selectsSome := sel.Requirements(); !selectsSome {
		return nil
	}
	selected, err := pl.nsLister.List(sel)
	if err != nil {
		return err
	}
	t.NamespaceSelector = after
	for _, ns := range selected {
		t.Namespaces.Insert(ns.Name)
	}
	return nil
}

// resolveAllNamespaces applies resolveNamespaces to every term, in place.
func (pl *InterPodAffinity) resolveAllNamespaces(terms []fwk.AffinityTerm) error {
	for i := range terms {
		if err := pl.resolveNamespaces(&terms[i]); err != nil {
			return err
		}
	}
	return nil
}

// namespaceLabels returns the labels existing pods' namespaceSelectors are
// matched against: those of the incoming pod's namespace, copied because
// the lister hands out the informer cache's object. When the namespace is
// unknown (deleted, or not synced yet) the labels are nil, which only
// selectors accepting an empty label set match.
func (pl *InterPodAffinity) namespaceLabels(logger klog.Logger, name string) labels.Set {
	ns, err := pl.nsLister.Get(name)
	if err != nil {
		logger.V(3).Info("Namespace of the incoming pod unavailable; matching namespaceSelectors of existing pods' terms against no labels", "namespace", name, "err", err)
		return nil
	}
	return labels.Set(maps.Clone(ns.Labels))
}

// matchesAny reports whether pod matches at least one term (nil namespace
// labels, as for podaffinity.MatchesAll).
func matchesAny(terms []fwk.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		if terms[i].Matches(pod, nil) {
			return true
		}
	}
	return false
}

// stored is what the cycle state holds under key, or nil: the fast path
// of preFilterStateOf and preScoreStateOf, which Filter and Score take for
// every node (no generic assertion, no error test).
func stored(cycleState fwk.CycleState, key fwk.StateKey) fwk.StateData {
	data, _ := cycleState.Read(key)
	return data
}

// readState is their slow path: a missing state (PreFilter or PreScore
// Skipped, or is not enabled) is reported in upstream's words, missing
// (a format of the key and the error), which users see in the Error
// status; a state of another type keeps cyclestate.Read's explanation.
func readState[T fwk.StateData](cycleState fwk.CycleState, key fwk.StateKey, missing string) (T, error) {
	s, err := cyclestate.Read[T](cycleState, key)
	if errors.Is(err, fwk.ErrNotFound) {
		var none T
		return none, fmt.Errorf(missing, key, err)
	}
	return s, err
}

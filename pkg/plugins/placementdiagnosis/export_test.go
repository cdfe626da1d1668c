package placementdiagnosis

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/utils/clock"
)

// The tests live in package placementdiagnosis_test so that they can take
// the explaining plugins from pkg/plugins.Set(), which imports this package;
// these are the unexported parts they need.

// MaxNote is maxNote.
const MaxNote = maxNote

// NewWithClock is NewWith's factory with its clock given.
func NewWithClock(ctx context.Context, obj runtime.Object, h fwk.Handle, fts feature.Features, c clock.PassiveClock, explainers ...Factory) (*PlacementDiagnosis, error) {
	return newWithClock(ctx, obj, h, fts, c, explainers)
}

// Diagnose is diagnose.
func (pl *PlacementDiagnosis) Diagnose(ctx context.Context, state fwk.CycleState, pod *v1.Pod, statuses fwk.NodeToStatusReader) (string, error) {
	return pl.diagnose(ctx, state, pod, statuses)
}

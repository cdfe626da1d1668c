package plugins

import (
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/placementdiagnosis"
)

// DiagnosisName is the opt-in PlacementDiagnosis plugin's registered name.
const DiagnosisName = placementdiagnosis.Name

// OptIn returns the plugins we ship that replace no in-tree plugin and do
// nothing unless a profile enables them (PlacementDiagnosis). They are kept
// out of Registry, which is the replacement set everything compares with
// upstream.
func OptIn() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		placementdiagnosis.Name: withGates(placementdiagnosis.NewWith(news(Set())...)),
	}
}

// news is the New of each row of set.
func news(set []Plugin) []Factory {
	out := make([]Factory, len(set))
	for i, p := range set {
		out[i] = p.New
	}
	return out
}

// All returns Registry and OptIn merged: every plugin the binary can run,
// for the binary itself and for tools that build a profile's framework.
func All() frameworkruntime.Registry {
	r := Registry()
	for name, f := range OptIn() {
		r[name] = f
	}
	return r
}

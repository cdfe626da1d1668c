package nodeaffinity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Status shorthands for test tables.
const (
	success    = fwk.Success
	unresolved = fwk.UnschedulableAndUnresolvable
)

// newPlugin builds the plugin the way the framework does for an out-of-tree
// plugin: args marshalled to JSON and handed over as *runtime.Unknown (nil
// when added is nil, like a profile with no pluginConfig entry).
func newPlugin(t *testing.T, added *v1.NodeAffinity, fts feature.Features) *NodeAffinity {
	t.Helper()
	var args runtime.Object // a nil *runtime.Unknown would not be a nil interface
	if added != nil {
		args = tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: added})
	}
	return tu.NewPlugin[*NodeAffinity](t, New, args, fts)
}

// requiredAdded is an addedAffinity with only required terms.
func requiredAdded(terms ...v1.NodeSelectorTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}
}

// preferredAdded is an addedAffinity with only preferred terms.
func preferredAdded(terms ...v1.PreferredSchedulingTerm) *v1.NodeAffinity {
	return &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}
}

// pref is shorthand for a preferred term.
func pref(weight int32, term v1.NodeSelectorTerm) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: term}
}

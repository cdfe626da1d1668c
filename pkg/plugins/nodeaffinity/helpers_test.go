package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
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
	var p fwk.Plugin
	var err error
	if added == nil {
		p, err = New(context.Background(), nil, nil, fts)
	} else {
		p, err = New(context.Background(), tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: added}), nil, fts)
	}
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(*NodeAffinity)
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

// checkStatus asserts code and message of a status (nil counts as Success
// with an empty message).
func checkStatus(t *testing.T, what string, got *fwk.Status, code fwk.Code, msg string) {
	t.Helper()
	if got.Code() != code || got.Message() != msg {
		t.Errorf("%s = %v %q, want %v %q", what, got.Code(), got.Message(), code, msg)
	}
}

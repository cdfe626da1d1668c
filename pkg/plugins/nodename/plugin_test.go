package nodename

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestName(t *testing.T) {
	if got := newPlugin(t, feature.Features{}).Name(); got != "PlacementNodeName" {
		t.Errorf("Name() = %q", got)
	}
}

// NodeName takes no args: none or empty ones start, any other is refused
// with the fix (upstream ignores them; whoever wrote them expects an effect).
func TestNewRefusesArgs(t *testing.T) {
	for _, ok := range []runtime.Object{nil, tu.RawArgs(``), tu.RawArgs(`{}`), tu.RawArgs(`null`)} {
		if _, err := New(context.Background(), ok, nil, feature.Features{}); err != nil {
			t.Errorf("New(%v): %v", ok, err)
		}
	}
	_, err := New(context.Background(), tu.RawArgs(`{"whatever":1}`), nil, feature.Features{})
	if want := `this plugin takes no args: remove its pluginConfig entry (got fields: whatever)`; err == nil || err.Error() != want {
		t.Errorf("New with args: %v, want %q", err, want)
	}
}

package nodename

import (
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func newPlugin(t *testing.T, fts feature.Features) *NodeName {
	t.Helper()
	return tu.NewPlugin[*NodeName](t, New, nil, fts)
}

package equivalence

import (
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"

	ourstainttoleration "github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// Compare our TaintToleration against upstream's (delete this file to fall back to
// upstream vs upstream while the package is broken).
func init() {
	ours[upstream.Name] = ourPlugin{Name: ourstainttoleration.Name, New: ourstainttoleration.New}
}

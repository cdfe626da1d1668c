package equivalence

import (
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodename"

	oursnodename "github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
)

// Compare our NodeName against upstream's (delete this file to fall back to
// upstream vs upstream while the package is broken).
func init() {
	ours[upstream.Name] = ourPlugin{Name: oursnodename.Name, New: oursnodename.New}
}

package equivalence

import (
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"

	oursnodeaffinity "github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
)

// Compare our NodeAffinity against upstream's (delete this file to fall back to
// upstream vs upstream while the package is broken).
func init() {
	ours[upstream.Name] = ourPlugin{Name: oursnodeaffinity.Name, New: oursnodeaffinity.New}
}

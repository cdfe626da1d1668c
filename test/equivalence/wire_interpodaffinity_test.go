package equivalence

import (
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"

	oursinterpodaffinity "github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
)

// Compare our InterPodAffinity against upstream's (delete this file to fall back to
// upstream vs upstream while the package is broken).
func init() {
	ours[upstream.Name] = ourPlugin{Name: oursinterpodaffinity.Name, New: oursinterpodaffinity.New}
}

//go:build k8s1.35

package plugins

import fwk "k8s.io/kube-scheduler/framework"

// minorInterfaces: 1.35's framework has no extension points beyond the
// common ones.
func minorInterfaces(fwk.Plugin, func(bool, string)) {}

// containPreQueueingHint: 1.35 has no pre-queueing hints.
func containPreQueueingHint(*fwk.ClusterEventWithHint, string, string) {}

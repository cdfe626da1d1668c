//go:build k8s1.36

package plugins

import fwk "k8s.io/kube-scheduler/framework"

// minorInterfaces adds the extension points 1.36's framework has beyond
// 1.35's: the placement (pod group) points.
func minorInterfaces(p fwk.Plugin, add func(bool, string)) {
	_, ok := p.(fwk.PlacementGeneratePlugin)
	add(ok, "PlacementGenerate")
	_, ok = p.(fwk.PlacementScorePlugin)
	add(ok, "PlacementScore")
}

// containPreQueueingHint: 1.36 has no pre-queueing hints.
func containPreQueueingHint(*fwk.ClusterEventWithHint, string, string) {}

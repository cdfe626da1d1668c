//go:build !k8s1.35 && !k8s1.36

package plugins

import (
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// minorInterfaces adds the extension points 1.37's framework has beyond
// 1.35's: the placement (pod group) points of 1.36 and PodGroupPostFilter.
func minorInterfaces(p fwk.Plugin, add func(bool, string)) {
	_, ok := p.(fwk.PodGroupPostFilterPlugin)
	add(ok, "PodGroupPostFilter")
	_, ok = p.(fwk.PlacementGeneratePlugin)
	add(ok, "PlacementGenerate")
	_, ok = p.(fwk.PlacementScorePlugin)
	add(ok, "PlacementScore")
}

// containPreQueueingHint wraps ev's pre-queueing hint (new in 1.37) so that
// its panic queues every pod instead of crashing the scheduler.
func containPreQueueingHint(ev *fwk.ClusterEventWithHint, plugin, point string) {
	pre := ev.PreQueueingHintFn
	if pre == nil {
		return
	}
	prePoint := "Pre" + point
	ev.PreQueueingHintFn = func(logger klog.Logger, oldObj, newObj any) (res fwk.PreQueueingHintResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = fwk.PreQueueingHintResult{AllPods: true}, recovered(logger, plugin, prePoint, nil, r).AsError()
			}
		}()
		return pre(logger, oldObj, newObj)
	}
}

// containLineShape: on 1.37 every plugin of ours has one of containment.go's
// shapes.
func containLineShape(fwk.Plugin) fwk.Plugin { return nil }

package explain

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// Trim drops, in place, what no placement answer reads from obj, so that
// a cluster of tens of thousands of pods fits a laptop's memory: every
// object's managedFields and last-applied-configuration annotation, and
// the status fields of pods and nodes that neither the scheduler's plugins
// (on every line), nor explain and simulate, read. Both sources of a
// Cluster (the live lists, page by page, and a snapshot as it is decoded)
// go through it, so they are one model.
//
// What is kept, because something reads it: a pod's phase, conditions
// (preemption's DisruptionTarget, in-place resize's PodResizePending and
// PodResizeInProgress), nominatedNodeName, startTime (preemption ranks
// victims by it), qosClass, the claim statuses DynamicResources reads,
// its pod-level resources and allocatedResources and, of each container
// status, the name, allocatedResources and resources (what NodeInfo
// counts for a pod being resized); a node's capacity, allocatable,
// images (ImageLocality), declaredFeatures (NodeDeclaredFeatures) and the
// rest of its status but the fields below. Fields are cleared by name
// (never kept by name), so a field a later line adds is kept.
func Trim(obj runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[v1.LastAppliedConfigAnnotation] != "" {
			delete(a, v1.LastAppliedConfigAnnotation)
			if len(a) == 0 {
				m.SetAnnotations(nil)
			}
		}
	}
	switch o := obj.(type) {
	case *v1.Pod:
		trimPodStatus(&o.Status)
	case *v1.Node:
		trimNodeStatus(&o.Status)
	}
}

// trimPodStatus clears what the kubelet reports and placement never reads:
// addresses, messages, and the runtime state of containers.
func trimPodStatus(s *v1.PodStatus) {
	s.HostIP, s.HostIPs, s.PodIP, s.PodIPs = "", nil, "", nil
	s.Message, s.Reason = "", ""
	// Ephemeral containers request no resources: NodeInfo does not count them.
	s.EphemeralContainerStatuses = nil
	for _, cs := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses} {
		for i := range cs {
			c := &cs[i]
			c.State, c.LastTerminationState = v1.ContainerState{}, v1.ContainerState{}
			c.Image, c.ImageID, c.ContainerID = "", "", ""
			c.VolumeMounts, c.User, c.AllocatedResourcesStatus = nil, nil, nil
		}
	}
}

// trimNodeStatus clears what the kubelet reports and no plugin's Filter or
// Score reads: conditions (the scheduler sees a node's health through the
// taints the node lifecycle controller sets), addresses, system info and
// volumes.
func trimNodeStatus(s *v1.NodeStatus) {
	s.Conditions, s.Addresses = nil, nil
	s.NodeInfo = v1.NodeSystemInfo{}
	s.VolumesInUse, s.VolumesAttached = nil, nil
	s.Config = nil
}

package explain

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"

	explainv1alpha1 "github.com/placement-scheduler/placement-scheduler/apis/explain/v1alpha1"
	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
)

const maxHolders = 5

// resourceFits details NodeResourcesFit's rejection of ni: the entries of
// noderesources.Fits (the plugin's own check, exported for this kind of
// caller) whose reason is among the status's reasons, so resources the
// profile's args ignore are left out just as the plugin leaves them out.
func resourceFits(pod *v1.Pod, ni fwk.NodeInfo, reasons []string, dra fwk.SharedDRAManager) []explainv1alpha1.ResourceFit {
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	opts := k8sline.ResourceRequestsOptions(fts)
	if !fts.EnableDRAExtendedResource {
		dra = nil
	}
	want := sets.New(reasons...)
	var out []explainv1alpha1.ResourceFit
	for _, ir := range noderesources.Fits(pod, ni, dra, opts) {
		if !want.Has(ir.Reason) {
			continue
		}
		free := ir.Capacity - ir.Used
		if free < 0 {
			free = 0
		}
		rf := explainv1alpha1.ResourceFit{
			Resource:     string(ir.ResourceName),
			Requested:    quantity(ir.ResourceName, ir.Requested),
			Allocatable:  quantity(ir.ResourceName, ir.Capacity),
			Used:         quantity(ir.ResourceName, ir.Used),
			Free:         quantity(ir.ResourceName, free),
			Short:        quantity(ir.ResourceName, ir.Requested-free),
			Unresolvable: ir.Unresolvable,
		}
		if ir.ResourceName != v1.ResourcePods {
			rf.Holders, rf.MoreHolders = holders(ni, ir.ResourceName)
		}
		out = append(out, rf)
	}
	return out
}

// holders ranks the pods on ni by their request of name, as NodeInfo
// counted it when it added them up into Requested.
func holders(ni fwk.NodeInfo, name v1.ResourceName) ([]explainv1alpha1.Holder, int) {
	type held struct {
		pod *v1.Pod
		n   int64
	}
	var all []held
	for _, pi := range ni.GetPods() {
		if n := amount(pi.CalculateResource().Resource, name); n > 0 {
			all = append(all, held{pi.GetPod(), n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].pod.Namespace+"/"+all[i].pod.Name < all[j].pod.Namespace+"/"+all[j].pod.Name
	})
	more := 0
	if len(all) > maxHolders {
		more = len(all) - maxHolders
		all = all[:maxHolders]
	}
	out := make([]explainv1alpha1.Holder, len(all))
	for i, h := range all {
		out[i] = explainv1alpha1.Holder{Pod: h.pod.Namespace + "/" + h.pod.Name, Request: quantity(name, h.n), Priority: corev1helpers.PodPriority(h.pod)}
	}
	return out, more
}

// amount reads one resource from the framework's Resource in the unit
// Fits reports it in (millicores for cpu, bytes or counts otherwise).
func amount(r fwk.Resource, name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.GetMilliCPU()
	case v1.ResourceMemory:
		return r.GetMemory()
	case v1.ResourceEphemeralStorage:
		return r.GetEphemeralStorage()
	default:
		return r.GetScalarResources()[name]
	}
}

// quantity renders n (in Fits's unit) as a Kubernetes quantity.
func quantity(name v1.ResourceName, n int64) string {
	switch name {
	case v1.ResourceCPU:
		return resource.NewMilliQuantity(n, resource.DecimalSI).String()
	case v1.ResourceMemory, v1.ResourceEphemeralStorage:
		return resource.NewQuantity(n, resource.BinarySI).String()
	default:
		return resource.NewQuantity(n, resource.DecimalSI).String()
	}
}

// resourceRows renders a ResourceFit as table lines: the shortfall, then
// who holds the resource.
func resourceRows(rf explainv1alpha1.ResourceFit) []string {
	var rows []string
	if rf.Resource == string(v1.ResourcePods) {
		rows = append(rows, fmt.Sprintf("Too many pods: %s of %s pods allowed already run here", rf.Used, rf.Allocatable))
		return rows
	}
	if rf.Unresolvable {
		rows = append(rows, fmt.Sprintf("Insufficient %s: pod requests %s, more than the node's allocatable %s (no eviction can make room)",
			rf.Resource, rf.Requested, rf.Allocatable))
	} else {
		rows = append(rows, fmt.Sprintf("Insufficient %s: pod requests %s, node has %s free (allocatable %s, requested by pods %s): short by %s",
			rf.Resource, rf.Requested, rf.Free, rf.Allocatable, rf.Used, rf.Short))
	}
	if len(rf.Holders) > 0 {
		parts := make([]string, 0, len(rf.Holders)+1)
		for _, h := range rf.Holders {
			parts = append(parts, fmt.Sprintf("%s %s (priority %d)", h.Pod, h.Request, h.Priority))
		}
		if rf.MoreHolders > 0 {
			parts = append(parts, fmt.Sprintf("%d more", rf.MoreHolders))
		}
		rows = append(rows, fmt.Sprintf("  %s held by: %s", rf.Resource, strings.Join(parts, ", ")))
	}
	return rows
}

// Package v1alpha1 is the output of kubectl placement simulate -o
// json/yaml, simulate.placement-scheduler.io/v1alpha1 PlacementSimulation:
// a schema, not a served API, that scripts can rely on.
//
// +k8s:deepcopy-gen=package
// +groupName=simulate.placement-scheduler.io
package v1alpha1

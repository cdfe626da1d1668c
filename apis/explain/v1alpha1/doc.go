// Package v1alpha1 is the output of kubectl placement explain -o json/yaml,
// explain.placement-scheduler.io/v1alpha1 PlacementExplanation: a schema,
// not a served API, that scripts can rely on.
//
// +k8s:deepcopy-gen=package
// +groupName=explain.placement-scheduler.io
package v1alpha1

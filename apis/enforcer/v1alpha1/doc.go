// Package v1alpha1 is the enforcer's configuration file,
// enforcer.placement-scheduler.io/v1alpha1 EnforcerConfiguration: its
// types, defaults and validation (docs/enforcement.md lists every field).
//
// +k8s:deepcopy-gen=package
// +groupName=enforcer.placement-scheduler.io
package v1alpha1

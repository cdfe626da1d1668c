// Package v1alpha1 is what the enforcer's /violations serves and
// kubectl placement violations reads: a JSON list of Report, with no
// apiVersion or kind of its own.
//
// +k8s:deepcopy-gen=package
// +groupName=violations.placement-scheduler.io
package v1alpha1

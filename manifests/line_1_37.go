//go:build !k8s1.35 && !k8s1.36

package manifests

// The newest line installs from the base itself.
const lineBase = "."

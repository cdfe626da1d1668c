//go:build k8s1.36

package manifests

// The 1.36 line installs from its overlay: upstream v1.36's profile order.
const lineBase = "lines/k8s-1.36"

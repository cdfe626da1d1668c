//go:build k8s1.35

package manifests

// The 1.35 line installs from its overlay: upstream v1.35's profile order,
// without NodeDeclaredFeatures (off by default on 1.35).
const lineBase = "lines/k8s-1.35"

// Package k8sline holds, in one place, the differences between the
// Kubernetes minors placement-scheduler is built for that are differences of
// the framework's API rather than of a plugin's own rules: feature gates a
// minor does not have, framework calls it lacks, and option structs whose
// fields differ. Everything else is written once against whichever minor the
// build selects.
//
// A line is selected by the module graph and a build tag together: the root
// go.mod builds the newest line with no tag; lines/k8s-1.X/go.work replaces
// every k8s.io module with that minor's release and the Makefile passes
// -tags k8s1.X with it (make ... K8S=1.X). A build that mixes them (the
// 1.36 modules without the tag, or the tag with the 1.37 modules) does not
// compile: each file here names APIs that only its own minor has.
//
// The plugin-level differences (an extension point a minor's in-tree plugin
// lacks, queueing hints it decides differently) live beside the plugin they
// concern, in files named minor_*.go with the same tags; docs/compatibility.md
// lists every difference and the upstream change it follows.
package k8sline

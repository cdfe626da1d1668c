package k8sline

// Lines returns the Kubernetes minors placement-scheduler is built for,
// oldest first: one build line each, Minor among them. It is the Go copy of
// the Makefile's K8S_LINES and the chart's placement-scheduler.k8sLines;
// TestLines fails when it drifts from the Makefile, go.mod or lines/. A
// function, not a variable, so that no caller can change the list.
func Lines() []string {
	return []string{"1.35", "1.36", "1.37"}
}

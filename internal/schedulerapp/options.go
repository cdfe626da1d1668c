// Package schedulerapp turns our plugin registry into kube-scheduler app
// options, so the binary and the tests that run app.Setup register exactly
// the same plugins the same way.
package schedulerapp

import (
	"sort"

	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins"
)

// Options returns one app.WithPlugin per plugin in plugins.All (the replacements and the opt-in ones), in name
// order so start-up is deterministic.
func Options() []app.Option {
	return OptionsOf(plugins.All())
}

// OptionsOf is Options for another registry (a test's, with a plugin
// swapped).
func OptionsOf(reg frameworkruntime.Registry) []app.Option {
	names := make([]string, 0, len(reg))
	for name := range reg {
		names = append(names, name)
	}
	sort.Strings(names)
	opts := make([]app.Option, 0, len(names))
	for _, name := range names {
		opts = append(opts, app.WithPlugin(name, reg[name]))
	}
	return opts
}

package plugins

import (
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
)

// Cause is one concrete reason a plugin rejected a node (see package
// explanation, which the plugin packages can import without a cycle).
type Cause = explanation.Cause

// FilterExplainer is how our filter plugins say why they rejected a node
// (see package explanation). Every row of Set implements it: Contain, which
// Registry wraps each in, refuses a filter plugin that does not.
type FilterExplainer = explanation.FilterExplainer

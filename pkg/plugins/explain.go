package plugins

import (
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/explanation"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodeaffinity"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/nodename"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/tainttoleration"
)

// Cause is one concrete reason a plugin rejected a node (see package
// explanation, which the plugin packages can import without a cycle).
type Cause = explanation.Cause

// FilterExplainer is how our filter plugins say why they rejected a node
// (see package explanation).
type FilterExplainer = explanation.FilterExplainer

// Each of our filter plugins explains its rejections.
var (
	_ FilterExplainer = &nodename.NodeName{}
	_ FilterExplainer = &tainttoleration.TaintToleration{}
	_ FilterExplainer = &nodeaffinity.NodeAffinity{}
	_ FilterExplainer = &interpodaffinity.InterPodAffinity{}
)

package aggregate

// This file holds what lets a sweep go through a list by position: the
// snapshot keeps its lists' order and reuses its NodeInfos between
// cycles, so that a list of the same NodeInfos in the same order is
// checked by comparing generations alone, without hashing a node name per
// node (which would cost several times the comparisons).

import (
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// order is the list a sweep last went through and each position's
// record. It holds the NodeInfos themselves, so that none of them can be
// freed and another allocated in its place while it is remembered.
type order[R any] struct {
	nodes []*framework.NodeInfo
	recs  []*R
}

// same reports whether nodes are o's NodeInfos in o's order (a NodeInfo
// of another implementation than the framework's never is).
func (o *order[R]) same(nodes []fwk.NodeInfo) bool {
	if len(nodes) != len(o.nodes) {
		return false
	}
	for i, ni := range nodes {
		if p, ok := ni.(*framework.NodeInfo); !ok || p != o.nodes[i] {
			return false
		}
	}
	return true
}

// remember makes nodes, with recs by position, the list to compare the
// next with; a list with a NodeInfo of another implementation is not
// remembered.
func (o *order[R]) remember(nodes []fwk.NodeInfo, recs []*R) {
	o.nodes, o.recs = o.nodes[:0], recs
	for _, ni := range nodes {
		p, ok := ni.(*framework.NodeInfo)
		if !ok {
			o.nodes, o.recs = nil, nil
			return
		}
		o.nodes = append(o.nodes, p)
	}
}

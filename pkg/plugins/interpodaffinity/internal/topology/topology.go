// Package topology is the topology table of the PlacementInterPodAffinity
// plugin: the topology labels of the cycle's nodes, kept across cycles in
// arrays, so that Filter and Score find a node's domain for a term without
// reading the node's label map. Filter runs for hundreds of nodes per
// cycle, and each node's Node object and label map are cold in memory:
// reading one label cost more than the rest of the check. The labels are
// still the nodes' own; a node whose NodeInfo is not one of the cycle's list
// (a clone for nominated pods or preemption) is read directly.
//
// Syncer is what the plugin asks; Table keeps the labels, PassThrough keeps
// nothing (every label is read from its node, as upstream reads it).
//
// Invariants: a view handed out never changes (the table copies before it
// changes one lent); a row is refreshed whenever its node's generation
// moved (the snapshot changes a node's labels only by SetNode, which takes
// a new generation; 0 proves nothing); a pod-group cycle gets no view.
//
// Memory: per listed node, its pointer (a copy of the list's, which the
// view's rows share), two to four 4-byte slots to find its row (rows.go), its
// generation, and a 24-byte value per copied key (at most maxTopologyKeys
// keys), the values' strings interned.
package topology

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/placement-scheduler/placement-scheduler/internal/k8sline"
	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/interpodaffinity/internal/nodegen"
)

// maxTopologyKeys bounds the keys whose labels the table copies; a key
// beyond it is read from the nodes. Terms use a key or two (hostname,
// zone), so the bound only stops keys from piling up over time: the key
// least recently asked for makes room.
const maxTopologyKeys = 8

// Pair names a topology domain: the nodes whose label Key has Value.
type Pair struct {
	Key   string
	Value string
}

// HostScoped reports whether a term's domain is a single node (by its
// kubernetes.io/hostname label), which the hostname fast path checks
// against the candidate node's own pods instead of counting cluster-wide.
// The one rule for the decisions and for the pod summaries, which must
// note exactly the terms the decisions do.
func HostScoped(t fwk.AffinityTerm) bool { return t.TopologyKey == v1.LabelHostname }

// Syncer hands a cycle the topology labels of its node list.
type Syncer interface {
	// Sync calls use with the generation of each of nodes (nil: not
	// read) and the view of their labels for keys (nil: none, read every
	// label from the node), and returns that view, which the caller must
	// not change.
	Sync(cs fwk.CycleState, nodes []fwk.NodeInfo, keys []string, use func(gens []int64, view *View)) *View
}

// PassThrough is the Syncer that keeps nothing: no view, every label read
// from its node, as upstream reads it.
type PassThrough struct{}

// Sync calls use(nil, nil) and returns nil.
func (PassThrough) Sync(_ fwk.CycleState, _ []fwk.NodeInfo, _ []string, use func(gens []int64, view *View)) *View {
	use(nil, nil)
	return nil
}

// label is one node's label value for one key.
type label struct {
	value string
	ok    bool
}

// View answers, for the NodeInfos of one cycle's node list, the
// value of each key the table copies. It is never changed once handed
// out; the table makes a new one when labels or the list change.
type View struct {
	// row finds each listed NodeInfo's row in the columns (rows.go). A
	// NodeInfo's pointer says nothing about what it holds in another cycle
	// (the snapshot reuses NodeInfos); the view is only handed to a cycle
	// after every row was checked against its list.
	row rows
	// keys and cols: the copied keys, and for each a value per row.
	keys []string
	cols [][]label
}

// Node reads the topology labels of one node: from the view if the
// node is one of its rows, otherwise from the node.
type Node struct {
	ni   fwk.NodeInfo
	view *View
	row  int32
	// inView: ni is one of view's rows; known once looked is set.
	inView, looked bool
}

// Of returns how to read ni's topology labels in a cycle that was
// handed view (nil: no view). The node's row is looked up on the first
// read: a scan visits thousands of nodes whose pods match nothing and
// never read a label.
func Of(view *View, ni fwk.NodeInfo) Node {
	return Node{ni: ni, view: view}
}

// Located is Of with the node's row looked up at once, for
// Filter and Score, which read a label of nearly every node they are
// given, through at.
func Located(view *View, ni fwk.NodeInfo) Node {
	t := Node{ni: ni, view: view}
	if view != nil {
		t.located()
	}
	return t
}

// Get returns the node's value for key, and whether it has the label.
func (t *Node) Get(key string) (string, bool) {
	_, v, ok := t.Pair(key)
	return v, ok
}

// Pair is get that also returns the key: the view's own string for it when
// read through the view (the same for every node), key otherwise.
func (t *Node) Pair(key string) (string, string, bool) {
	if t.view != nil && t.located() {
		for i, k := range t.view.keys {
			if k == key {
				v := t.view.cols[i][t.row]
				return k, v.value, v.ok
			}
		}
	}
	v, ok := NodeLabels(t.ni)[key]
	return key, v, ok
}

// At is get for a key whose column in the view is col (View.col),
// which Filter and Score resolve once per cycle instead of searching the
// keys for every node; col -1: the view does not copy key. t comes from
// Located (otherwise at reads the node's labels), which keeps at
// small enough to be inlined.
func (t *Node) At(col int, key string) (string, bool) {
	if col >= 0 && t.inView {
		v := &t.view.cols[col][t.row]
		return v.value, v.ok
	}
	return t.fromNode(key)
}

// fromNode reads key from the node's own labels.
func (t *Node) fromNode(key string) (string, bool) {
	v, ok := NodeLabels(t.ni)[key]
	return v, ok
}

// InView reports whether the node's labels are read through the view
// (tests check that counted domains share the view's strings).
func (t *Node) InView() bool { return t.view != nil && t.located() }

// located looks the node's row up in the view on the first call and
// reports whether it has one. t.view must not be nil.
func (t *Node) located() bool {
	if !t.looked {
		t.looked = true
		if p, ok := t.ni.(*framework.NodeInfo); ok {
			t.row, t.inView = t.view.row.row(p)
		}
	}
	return t.inView
}

// Col is key's column in v, or -1 when v (nil: no view) does not copy key.
func (v *View) Col(key string) int {
	if v == nil {
		return -1
	}
	return slices.Index(v.keys, key)
}

// Key is the view's own string for key (the same as Pair returns), or key
// itself when v (nil: no view) does not copy it.
func (v *View) Key(key string) string {
	if i := v.Col(key); i >= 0 {
		return v.keys[i]
	}
	return key
}

// Table is the Syncer that keeps the view across cycles.
type Table struct {
	mu sync.Mutex
	// primed: sync was called before; the view is built from the
	// second call on.
	primed bool
	// nodes and gens are the list last synced and its generations; the
	// view's rows share nodes, which is never changed.
	nodes []*framework.NodeInfo
	gens  []int64
	view  *View
	// lent: view has been handed out and must not change.
	lent bool
	// ownCol: the view's column of the same index is not shared with a
	// view handed out before.
	ownCol []bool
	// lastUse per key of view.keys, in calls to sync.
	lastUse []uint64
	clock   uint64
	// intern shares one copy of each value, so that the columns' strings
	// lie together in memory instead of in every node's own objects.
	intern map[string]string
	// reads: where the nodes' generations are read.
	reads nodegen.Shared
}

// NewTable returns a Table that reads the nodes' generations through
// gens, which the caches sweeping the same lists share.
func NewTable(gens *nodegen.Reader) *Table { return &Table{reads: nodegen.Share(gens)} }

// Sync brings the view up to date with nodes for keys, calls use with the
// generation of each of nodes (read once a cycle, nodegen, so that no
// cache over the same list reads them again) and with the view, and returns
// the view, which the caller must not change. The indexes read the labels
// of the nodes they recompute through the view too: its values are the
// table's interned copies, so the domains they count hold the very strings
// Filter and Score later look up, and a hit compares pointers instead of
// bytes in the nodes' cold label maps. It returns nil (and use gets nils)
// in a pod-group cycle, which the indexes answer by a
// plain scan too.
func (t *Table) Sync(cs fwk.CycleState, nodes []fwk.NodeInfo, keys []string, use func(gens []int64, view *View)) *View {
	if k8sline.PodGroupCycle(cs) {
		use(nil, nil)
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	same, built := t.view != nil && len(t.nodes) == len(nodes), true
	t.reads.With(cs, nodes, func(gens []int64) {
		for i := 0; same && i < len(nodes); i++ {
			if p, ok := nodes[i].(*framework.NodeInfo); !ok || p != t.nodes[i] {
				same = false
			} else if g := gens[i]; g != t.gens[i] || g == 0 {
				// A generation changes with labels and with pods (the
				// snapshot changes a node's labels only by SetNode,
				// which takes a new one); 0 (hand-built NodeInfos)
				// proves nothing.
				t.gens[i] = g
				t.refresh(i)
			}
		}
		switch {
		case same:
		case !t.primed:
			// The table's first call: building the view costs more
			// than this one cycle's reads from the nodes, and a plugin
			// that is asked once (or a scheduler that just started)
			// should pay no more than the scan.
			t.primed, built = true, false
		default:
			built = t.rebuild(nodes, gens)
		}
	})
	if !built {
		use(nil, nil)
		return nil
	}
	for _, k := range keys {
		t.useKey(k)
	}
	use(t.gens, t.view)
	t.lent = true
	return t.view
}

// Prime makes the table build its view from its first call on (tests of
// the paths through a view).
func (t *Table) Prime() { t.primed = true }

// rebuild starts over from list nodes, of generations gens: every row,
// every copied key. A list of NodeInfos of another implementation than the
// framework's has no view.
func (t *Table) rebuild(nodes []fwk.NodeInfo, gens []int64) bool {
	var keys []string
	if t.view != nil {
		keys = t.view.keys
	}
	t.nodes, t.gens, t.view = nil, nil, nil
	v := &View{keys: slices.Clone(keys)}
	ptrs := make([]*framework.NodeInfo, len(nodes))
	for i, ni := range nodes {
		p, ok := ni.(*framework.NodeInfo)
		if !ok {
			t.lastUse, t.ownCol, t.lent = nil, nil, false
			return false
		}
		ptrs[i] = p
	}
	v.row = newRows(ptrs)
	t.nodes = ptrs
	t.gens = slices.Clone(gens)
	v.cols = make([][]label, len(v.keys))
	t.intern = make(map[string]string)
	for j, k := range v.keys {
		v.cols[j] = t.column(k)
	}
	t.ownCol = make([]bool, len(v.keys))
	for j := range t.ownCol {
		t.ownCol[j] = true
	}
	t.view, t.lent = v, false
	return true
}

// refresh rereads row i's values, copying the view first if a value
// changed while the view is lent.
func (t *Table) refresh(i int) {
	if len(t.intern) > 2*len(t.nodes)*maxTopologyKeys {
		// Values that came and went: start a new set (the columns keep
		// their strings).
		t.intern = make(map[string]string)
	}
	nl := NodeLabels(t.nodes[i])
	for j, k := range t.view.keys {
		val, ok := nl[k]
		if cur := t.view.cols[j][i]; cur.ok == ok && cur.value == val {
			continue
		}
		t.own()
		if !t.ownCol[j] {
			t.view.cols[j] = slices.Clone(t.view.cols[j])
			t.ownCol[j] = true
		}
		t.view.cols[j][i] = t.valueOf(val, ok)
	}
}

// own makes the view changeable: a copy, if it was handed out. Columns
// are still shared; a change copies the one it changes.
func (t *Table) own() {
	if !t.lent {
		return
	}
	v := *t.view
	v.keys = slices.Clone(v.keys)
	v.cols = slices.Clone(v.cols)
	t.view, t.lent = &v, false
	clear(t.ownCol)
}

// useKey makes sure key is copied, making room if needed. A key is not
// evicted in the call that asked for it: beyond maxTopologyKeys keys in
// one call, the rest are read from the nodes.
func (t *Table) useKey(key string) {
	if j := slices.Index(t.view.keys, key); j >= 0 {
		t.lastUse[j] = t.clock
		return
	}
	oldest := -1
	if len(t.view.keys) >= maxTopologyKeys {
		oldest = 0
		for j := range t.lastUse {
			if t.lastUse[j] < t.lastUse[oldest] {
				oldest = j
			}
		}
		if t.lastUse[oldest] == t.clock {
			return
		}
	}
	t.own()
	if oldest >= 0 {
		t.view.keys = slices.Delete(t.view.keys, oldest, oldest+1)
		t.view.cols = slices.Delete(t.view.cols, oldest, oldest+1)
		t.lastUse = slices.Delete(t.lastUse, oldest, oldest+1)
		t.ownCol = slices.Delete(t.ownCol, oldest, oldest+1)
	}
	t.view.keys = append(t.view.keys, key)
	t.view.cols = append(t.view.cols, t.column(key))
	t.lastUse = append(t.lastUse, t.clock)
	t.ownCol = append(t.ownCol, true)
}

// column reads key's value on every node of the list.
func (t *Table) column(key string) []label {
	col := make([]label, len(t.nodes))
	for i, ni := range t.nodes {
		v, ok := NodeLabels(ni)[key]
		col[i] = t.valueOf(v, ok)
	}
	return col
}

// AddKey appends key to keys unless it is there already.
func AddKey(keys []string, key string) []string {
	if slices.Contains(keys, key) {
		return keys
	}
	return append(keys, key)
}

func (t *Table) valueOf(v string, ok bool) label {
	if !ok {
		return label{}
	}
	s, seen := t.intern[v]
	if !seen {
		s = string([]byte(v))
		t.intern[s] = s
	}
	return label{value: s, ok: true}
}

// NodeLabels returns the labels of a NodeInfo's node, tolerating a NodeInfo
// without a node (test snapshots create those for pods bound to unknown node
// names), which then simply has no topology domains.
func NodeLabels(ni fwk.NodeInfo) map[string]string {
	if n := ni.Node(); n != nil {
		return n.Labels
	}
	return nil
}

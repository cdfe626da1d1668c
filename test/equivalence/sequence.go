package equivalence

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

// Sequence is the input of the sequence mode: one evolving cluster and the
// scheduling cycles run on it, replayed step by step against ONE long-lived
// instance of each plugin per side. Like a Scenario it is self-contained (the
// harness draws no further randomness), so it can be shrunk, written as YAML
// and replayed. Steps name the objects they touch; a step whose object is
// gone (e.g. after the shrinker dropped the step that created it) is a no-op.
type Sequence struct {
	Setup `json:",inline"`

	Steps []SeqStep `json:"steps"`
}

// Step operations. Each is what kube-scheduler's event handlers or its
// scheduling loop do to the backend cache, the namespace informer or the
// snapshot.
const (
	OpAddNode    = "AddNode"    // cache.AddNode (also re-adds a removed name)
	OpUpdateNode = "UpdateNode" // cache.UpdateNode(current, Node): labels, taints
	OpRemoveNode = "RemoveNode" // cache.RemoveNode: its pods stay in the cache
	OpAddPod     = "AddPod"     // informer add of a bound pod: cache.AddPod
	OpRelabelPod = "RelabelPod" // cache.UpdatePod with Labels
	OpDeletePod  = "DeletePod"  // cache.RemovePod, or k8sline.RemoveAssumedPod if still assumed
	OpMovePod    = "MovePod"    // delete, then re-create under the same name on Node.Name
	OpConfirm    = "Confirm"    // informer add of an assumed pod once bound: cache.AddPod
	OpForget     = "Forget"     // binding failed: cache.ForgetPod
	OpSetNS      = "SetNamespace"
	OpDeleteNS   = "DeleteNamespace"
	OpCycle      = "Cycle" // UpdateSnapshot, then a scheduling cycle (see SeqCycle)
)

// SeqStep is one step; which fields are used depends on Op.
type SeqStep struct {
	Op        string            `json:"op"`
	Name      string            `json:"name,omitempty"` // node name, pod namespace/name, namespace name
	Node      *v1.Node          `json:"node,omitempty"`
	Pod       *v1.Pod           `json:"pod,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Namespace *v1.Namespace     `json:"namespace,omitempty"`
	Cycle     *SeqCycle         `json:"cycle,omitempty"`
}

// SeqCycle is one scheduling cycle for Pod on the snapshot the cache just
// produced. Everything the one-cycle mode compares is compared. Then, if
// Assume > 0, the pod is assumed in the cache on the (Assume-1 mod n)-th node
// upstream's whole profile found feasible. With Group, it is a pod-group
// cycle instead: Pod and the members are scheduled one after another on the
// same snapshot, each assumed on the snapshot itself (Snapshot.AssumePod,
// which keeps the node's generation), the placement is reverted
// (Snapshot.ForgetPod, LIFO) and tried a second time, then the members are
// assumed in the cache if BindGroup. A line without pod-group cycles (1.35)
// runs Pod's own cycle and leaves the members out.
type SeqCycle struct {
	Pod           *v1.Pod        `json:"pod"`
	Nominated     []*v1.Pod      `json:"nominated,omitempty"`
	Preemption    []PreemptionOp `json:"preemption,omitempty"`
	NoStateChecks bool           `json:"noStateChecks,omitempty"`
	Assume        int            `json:"assume,omitempty"`
	Group         []*v1.Pod      `json:"group,omitempty"`
	BindGroup     bool           `json:"bindGroup,omitempty"`
}

// PodKey is the cache's key for a pod in steps: namespace/name.
func PodKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// SequenceOptions size a generated sequence.
type SequenceOptions struct {
	// Steps after the initial cluster is built.
	Steps int
	// MaxNodes caps the initial cluster (0: the default mix, up to 300).
	MaxNodes int
	// Interleaved makes every cycle's pod one of a pool of pod shapes
	// drawn up front (otherwise a quarter of the sequences are so).
	Interleaved bool
}

// GenerateSequence builds sequence index of the run seeded with seed.
func GenerateSequence(seed, index uint64, opts SequenceOptions) *Sequence {
	g := &gen{r: NewRand(seed^0x5e9e9ce, index), sc: &Scenario{Setup: Setup{Seed: seed, Index: index}}}
	sg := &seqGen{gen: g, seq: &Sequence{Setup: g.sc.Setup}, nodes: map[string]*v1.Node{},
		bound: map[string]*v1.Pod{}, namespaces: map[string]bool{}}
	sg.build(opts)
	return sg.seq
}

// seqGen tracks what the generator knows of the cluster, so that steps aim
// at objects that exist. It cannot know where the harness assumes pods (that
// depends on Filter results), so those are only tracked by key.
type seqGen struct {
	*gen
	seq       *Sequence
	nodes     map[string]*v1.Node // live
	nodeOrder []string            // live, creation order
	removed   []string            // removed names, to re-add
	// bound pods whose node the generator knows (created by AddPod/MovePod).
	bound     map[string]*v1.Pod
	boundKeys []string
	// pending: cycled pods the harness may have assumed; confirmed: keys of
	// pods that became bound through Confirm; forgotten: candidates for a retry.
	pending, confirmed []string
	forgotten          []*v1.Pod
	cycled             map[string]*v1.Pod
	namespaces         map[string]bool
	nodeSeq            int
	moves              int
	// shapes, when set, are the pods every cycle's pod is a copy of
	// (SequenceOptions.Interleaved).
	shapes []*v1.Pod
}

func (s *seqGen) step(st SeqStep) { s.seq.Steps = append(s.seq.Steps, st) }

// syncView points the one-cycle generator's helpers (which read g.sc) at
// the current cluster.
func (s *seqGen) syncView() {
	s.sc.Nodes = s.sc.Nodes[:0]
	for _, n := range s.nodeOrder {
		s.sc.Nodes = append(s.sc.Nodes, s.nodes[n])
	}
	s.sc.Pods = s.sc.Pods[:0]
	for _, k := range s.boundKeys {
		s.sc.Pods = append(s.sc.Pods, s.bound[k])
	}
}

func (s *seqGen) build(opts SequenceOptions) {
	seq := s.seq
	seq.Gates.TaintTolerationComparisonOperators = s.p(50)
	seq.Gates.InPlacePodVerticalScalingSchedulerPreemption = s.p(15)
	seq.ArgsAsYAML = s.p(10)
	seq.NodeAffinityArgs = s.nodeAffinityArgs()
	seq.InterPodAffinityArgs = s.interPodAffinityArgs()
	s.friendly = s.p(50)
	s.cycled = map[string]*v1.Pod{}

	for _, name := range nsNames {
		if s.p(80) {
			s.setNamespace(name)
		}
	}
	var numNodes int
	switch x := s.n(100); {
	case x < 55:
		numNodes = 3 + s.n(10)
	case x < 88:
		numNodes = 13 + s.n(40)
	case x < 98:
		numNodes = 60 + s.n(90)
	default:
		numNodes = 150 + s.n(151)
	}
	if opts.MaxNodes > 0 && numNodes > opts.MaxNodes {
		numNodes = opts.MaxNodes
	}
	for range numNodes {
		s.addNode()
	}
	for range s.n(numNodes + 3) {
		s.addPod()
	}
	if opts.Interleaved || s.p(25) {
		// Pods of a few to dozens of workloads, interleaved: each cycle
		// schedules a fresh pod of one of them, so pod shapes recur at
		// reuse distances below and above what a cache keyed by them
		// holds (the interpodaffinity index admits and evicts by it).
		for range 4 + s.n(37) {
			s.shapes = append(s.shapes, s.seqPod(true))
		}
	}
	for range opts.Steps {
		s.randomStep()
	}
}

func (s *seqGen) randomStep() {
	switch x := s.n(100); {
	case x < 32:
		s.cycle()
	case x < 37:
		s.addNode()
	case x < 47 && len(s.nodeOrder) > 0:
		s.updateNode()
	case x < 50 && len(s.nodeOrder) > 1:
		s.removeNode()
	case x < 60:
		s.addPod()
	case x < 67:
		s.relabelPod()
	case x < 72:
		s.deletePod()
	case x < 76:
		s.movePod()
	case x < 85:
		s.confirm()
	case x < 89:
		s.forget()
	case x < 95:
		s.setNamespace(pick(s.gen, nsNames))
	case x < 96:
		name := pick(s.gen, nsNames)
		delete(s.namespaces, name)
		s.step(SeqStep{Op: OpDeleteNS, Name: name})
	default:
		s.cycle()
	}
}

func (s *seqGen) setNamespace(name string) {
	s.namespaces[name] = true
	s.step(SeqStep{Op: OpSetNS, Namespace: testutil.MakeNamespace(name, s.labels(nsLabelKeys, nsLabelValues, 20))})
}

func (s *seqGen) addNode() {
	var name string
	if len(s.removed) > 0 && s.p(40) {
		// Re-added under the same name, possibly with other labels/taints;
		// pods left on it while it was gone are still in the cache.
		i := s.n(len(s.removed))
		name = s.removed[i]
		s.removed = slices.Delete(s.removed, i, i+1)
	} else {
		name = fmt.Sprintf("n%d", s.nodeSeq)
		s.nodeSeq++
	}
	n := s.node(name)
	s.nodes[name] = n
	s.nodeOrder = append(s.nodeOrder, name)
	s.step(SeqStep{Op: OpAddNode, Node: n})
}

func (s *seqGen) updateNode() {
	name := pick(s.gen, s.nodeOrder)
	n := s.mutateNode(s.nodes[name])
	if s.p(15) {
		// A topology move: the node changes zone/rack.
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[keyZone] = pick(s.gen, nodeLabelValues[keyZone])
		n.Labels[keyRack] = pick(s.gen, nodeLabelValues[keyRack])
	}
	s.nodes[name] = n
	s.step(SeqStep{Op: OpUpdateNode, Node: n})
}

func (s *seqGen) removeNode() {
	i := s.n(len(s.nodeOrder))
	name := s.nodeOrder[i]
	s.nodeOrder = slices.Delete(s.nodeOrder, i, i+1)
	delete(s.nodes, name)
	s.removed = append(s.removed, name)
	s.step(SeqStep{Op: OpRemoveNode, Name: name})
}

// seqPod is a generated pod as the apiserver would store it.
func (s *seqGen) seqPod(incoming bool) *v1.Pod {
	s.syncView()
	var p *v1.Pod
	if incoming {
		p = s.incomingPod()
	} else {
		p = s.pod(true)
	}
	mergeMatchLabelKeys(p)
	return p
}

func (s *seqGen) addPod() {
	p := s.seqPod(false)
	switch x := s.n(100); {
	case x < 90 && len(s.nodeOrder) > 0:
		p.Spec.NodeName = pick(s.gen, s.nodeOrder)
	case x < 96 && len(s.removed) > 0:
		p.Spec.NodeName = pick(s.gen, s.removed) // the informer may deliver it before/after the node
	default:
		p.Spec.NodeName = fmt.Sprintf("n%d", s.nodeSeq) // a node not seen yet
	}
	s.bound[PodKey(p)] = p
	s.boundKeys = append(s.boundKeys, PodKey(p))
	s.step(SeqStep{Op: OpAddPod, Pod: p})
}

// anyBoundKey picks a pod that is (probably) bound: generated on a known
// node, or confirmed after a cycle.
func (s *seqGen) anyBoundKey() string {
	if len(s.confirmed) > 0 && (len(s.boundKeys) == 0 || s.p(35)) {
		return pick(s.gen, s.confirmed)
	}
	if len(s.boundKeys) > 0 {
		return pick(s.gen, s.boundKeys)
	}
	return ""
}

func (s *seqGen) relabelPod() {
	key := s.anyBoundKey()
	if key == "" {
		return
	}
	labels := s.labels(podLabelKeys, podLabelValues, 15)
	if p, ok := s.bound[key]; ok {
		q := p.DeepCopy()
		q.Labels = labels
		s.bound[key] = q
	}
	s.step(SeqStep{Op: OpRelabelPod, Name: key, Labels: labels})
}

func (s *seqGen) forgetBound(key string) {
	delete(s.bound, key)
	s.boundKeys = slices.DeleteFunc(s.boundKeys, func(k string) bool { return k == key })
	s.confirmed = slices.DeleteFunc(s.confirmed, func(k string) bool { return k == key })
}

func (s *seqGen) deletePod() {
	var key string
	if len(s.pending) > 0 && s.p(25) {
		key = pick(s.gen, s.pending) // deleted while assumed
		s.pending = slices.DeleteFunc(s.pending, func(k string) bool { return k == key })
	} else if key = s.anyBoundKey(); key == "" {
		return
	}
	s.forgetBound(key)
	s.step(SeqStep{Op: OpDeletePod, Name: key})
}

func (s *seqGen) movePod() {
	key := s.anyBoundKey()
	if key == "" || len(s.nodeOrder) == 0 {
		return
	}
	p, ok := s.bound[key]
	if !ok {
		p = s.cycled[key]
	}
	if p == nil {
		return
	}
	// Delete and re-create: same namespace/name, new UID, another node (a
	// StatefulSet pod being rescheduled).
	q := p.DeepCopy()
	s.moves++
	q.UID = types.UID(fmt.Sprintf("%s-m%d", p.UID, s.moves))
	q.Spec.NodeName = pick(s.gen, s.nodeOrder)
	q.Status = v1.PodStatus{}
	s.forgetBound(key)
	s.bound[key] = q
	s.boundKeys = append(s.boundKeys, key)
	s.step(SeqStep{Op: OpMovePod, Name: key, Pod: q})
}

// takePending removes and returns a random pending key.
func (s *seqGen) takePending() (string, bool) {
	if len(s.pending) == 0 {
		return "", false
	}
	i := s.n(len(s.pending))
	key := s.pending[i]
	s.pending = slices.Delete(s.pending, i, i+1)
	return key, true
}

func (s *seqGen) confirm() {
	if key, ok := s.takePending(); ok {
		s.confirmed = append(s.confirmed, key)
		s.step(SeqStep{Op: OpConfirm, Name: key})
	}
}

func (s *seqGen) forget() {
	if key, ok := s.takePending(); ok {
		s.forgotten = append(s.forgotten, s.cycled[key])
		s.step(SeqStep{Op: OpForget, Name: key})
	}
}

func (s *seqGen) cycle() {
	var pod *v1.Pod
	if len(s.forgotten) > 0 && s.p(40) {
		// The queue retries a pod whose binding failed.
		i := s.n(len(s.forgotten))
		pod = s.forgotten[i]
		s.forgotten = slices.Delete(s.forgotten, i, i+1)
	} else if len(s.shapes) > 0 {
		pod = pick(s.gen, s.shapes).DeepCopy()
		pod.Name = s.podName()
		pod.UID = types.UID("uid-" + pod.Name)
		pod.Spec.NodeName = ""
	} else {
		pod = s.seqPod(true)
		pod.Spec.NodeName = "" // spec.nodeName pods bypass the scheduler's assume path
	}
	c := &SeqCycle{Pod: pod, NoStateChecks: s.p(10)}
	s.syncView()
	if len(s.nodeOrder) > 0 {
		for range s.n(3) {
			op := s.preemptionOp()
			for _, st := range op.Steps {
				if st.Add != nil {
					mergeMatchLabelKeys(st.Add)
				}
			}
			c.Preemption = append(c.Preemption, op)
		}
		for range s.n(3) {
			p := s.seqPod(false)
			p.Status.NominatedNodeName = pick(s.gen, s.nodeOrder)
			c.Nominated = append(c.Nominated, p)
		}
	}
	if s.p(70) {
		c.Assume = 1 + s.n(1000)
	}
	if s.p(10) {
		// A pod group: members look alike (same template), names differ.
		group := "g-" + pod.Name
		pod = pod.DeepCopy()
		setSchedulingGroup(pod, group)
		c.Pod = pod
		for range 1 + s.n(3) {
			m := pod.DeepCopy()
			m.Name = s.podName()
			m.UID = types.UID("uid-" + m.Name)
			c.Group = append(c.Group, m)
		}
		c.BindGroup = s.p(60)
		c.Assume = 1 + s.n(1000)
	}
	s.cycled[PodKey(pod)] = pod
	if c.Assume > 0 {
		s.pending = append(s.pending, PodKey(pod))
	}
	if c.BindGroup {
		for _, m := range c.Group {
			s.cycled[PodKey(m)] = m
			s.pending = append(s.pending, PodKey(m))
		}
	}
	s.step(SeqStep{Op: OpCycle, Cycle: c})
}

// mergeMatchLabelKeys stores p's affinity terms the way the apiserver does on
// create (MatchLabelKeysInPodAffinity): each matchLabelKeys key the pod
// carries becomes `key In (value)`, each mismatchLabelKeys key `key NotIn
// (value)`, in the term's labelSelector. The scheduler then reads only the
// selector.
func mergeMatchLabelKeys(p *v1.Pod) {
	a := p.Spec.Affinity
	if a == nil {
		return
	}
	merge := func(t *v1.PodAffinityTerm) {
		if t.LabelSelector == nil {
			return
		}
		add := func(keys []string, op metav1.LabelSelectorOperator) {
			for _, k := range keys {
				if v, ok := p.Labels[k]; ok {
					t.LabelSelector.MatchExpressions = append(t.LabelSelector.MatchExpressions,
						metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
				}
			}
		}
		add(t.MatchLabelKeys, metav1.LabelSelectorOpIn)
		add(t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	var req [][]v1.PodAffinityTerm
	var pref [][]v1.WeightedPodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		req, pref = append(req, pa.RequiredDuringSchedulingIgnoredDuringExecution), append(pref, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		req, pref = append(req, pa.RequiredDuringSchedulingIgnoredDuringExecution), append(pref, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	for _, terms := range req {
		for i := range terms {
			merge(&terms[i])
		}
	}
	for _, terms := range pref {
		for i := range terms {
			merge(&terms[i].PodAffinityTerm)
		}
	}
}

// Stats counts a sequence's steps by kind.
func (s *Sequence) Stats() (steps, cycles int) {
	for _, st := range s.Steps {
		if st.Op == OpCycle {
			cycles += 1 + len(st.Cycle.Group)
		}
	}
	return len(s.Steps), cycles
}

// cloneLabels copies a label map keeping nil vs empty.
func cloneLabels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return maps.Clone(m)
}

package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

const (
	in           = v1.NodeSelectorOpIn
	notIn        = v1.NodeSelectorOpNotIn
	exists       = v1.NodeSelectorOpExists
	doesNotExist = v1.NodeSelectorOpDoesNotExist
	gt           = v1.NodeSelectorOpGt
	lt           = v1.NodeSelectorOpLt
	nameField    = "metadata.name"
)

func TestPreFilter(t *testing.T) {
	gateOn := feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: true}
	pod := func() *tu.PodWrapper { return tu.MakePod("ns", "p") }
	tests := []struct {
		name  string
		pod   *v1.Pod
		added *v1.NodeAffinity
		fts   feature.Features
		// wantCode/wantMsg: PreFilter status. wantNames: nil means a nil
		// PreFilterResult (all nodes).
		wantCode  fwk.Code
		wantMsg   string
		wantNames sets.Set[string]
		// wantState: whether the cycle state is written.
		wantState bool
	}{
		// --- Skip rules ---
		{name: "bare pod skips", pod: pod().Obj(), wantCode: fwk.Skip},
		{
			name: "pod affinity without node affinity skips",
			pod:  pod().PodAffinity(&v1.PodAffinity{}).Obj(), wantCode: fwk.Skip,
		},
		{
			name: "node affinity with only preferred terms skips",
			pod:  pod().PreferredNodeTerm(5, tu.Term(tu.Expr("zone", in, "a"))).Obj(), wantCode: fwk.Skip,
		},
		{
			name: "empty nodeAffinity object skips",
			pod:  pod().NodeAffinity(&v1.NodeAffinity{}).Obj(), wantCode: fwk.Skip,
		},
		{
			name: "nodeSelector {} (non-nil, empty) does not skip and writes state",
			pod:  pod().NodeSelector(map[string]string{}).Obj(), wantCode: success, wantState: true,
		},
		{
			name: "nodeSelector does not skip, never narrows",
			pod:  pod().NodeSelector(map[string]string{"zone": "a"}).Obj(), wantCode: success, wantState: true,
		},
		{
			name:     "added required affinity disables skip for a bare pod, never narrows",
			pod:      pod().Obj(),
			added:    requiredAdded(tu.FieldTerm(tu.Expr(nameField, in, "n1"))),
			wantCode: success, wantState: true,
		},
		{
			name:     "added preferred-only affinity does not disable skip",
			pod:      pod().Obj(),
			added:    preferredAdded(pref(5, tu.Term(tu.Expr("zone", in, "a")))),
			wantCode: fwk.Skip,
		},
		// --- deferred resize gate ---
		{
			name:     "gate on, resize deferred: skip even with required affinity",
			pod:      pod().ResizeDeferred().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1"))).Obj(),
			fts:      gateOn,
			wantCode: fwk.Skip,
		},
		{
			name:      "gate off, resize deferred: normal narrowing",
			pod:       pod().ResizeDeferred().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1"),
			wantState: true,
		},
		{
			name: "gate on, resize pending but infeasible (not deferred): normal narrowing",
			pod: pod().Condition(v1.PodResizePending, v1.ConditionTrue, v1.PodReasonInfeasible).
				RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1"))).Obj(),
			fts:       gateOn,
			wantCode:  success,
			wantNames: sets.New("n1"),
			wantState: true,
		},
		// --- narrowing by metadata.name In ---
		{
			name:     "required with no terms: no narrowing (Filter rejects everything)",
			pod:      pod().RequiredNodeTerms().Obj(),
			wantCode: success, wantState: true,
		},
		{
			name:     "term without matchFields: all nodes",
			pod:      pod().RequiredNodeTerms(tu.Term(tu.Expr("zone", in, "a"))).Obj(),
			wantCode: success, wantState: true,
		},
		{
			name:      "single name In narrows",
			pod:       pod().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1"),
			wantState: true,
		},
		{
			name:      "name In with two values narrows to both despite being a parse error",
			pod:       pod().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1", "n2"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1", "n2"),
			wantState: true,
		},
		{
			name: "requirements in one term intersect",
			pod: pod().RequiredNodeTerms(tu.FieldTerm(
				tu.Expr(nameField, in, "n1", "n2"), tu.Expr(nameField, in, "n2", "n3"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n2"),
			wantState: true,
		},
		{
			name: "terms union",
			pod: pod().RequiredNodeTerms(
				tu.FieldTerm(tu.Expr(nameField, in, "n1")), tu.FieldTerm(tu.Expr(nameField, in, "n3"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1", "n3"),
			wantState: true,
		},
		{
			name: "matchExpressions alongside the name field do not widen or cancel narrowing",
			pod: pod().RequiredNodeTerms(v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{tu.Expr("zone", in, "a")},
				MatchFields:      []v1.NodeSelectorRequirement{tu.Expr(nameField, in, "n1")},
			}).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1"),
			wantState: true,
		},
		{
			name: "one term without a name field: all nodes (terms are ORed)",
			pod: pod().RequiredNodeTerms(
				tu.FieldTerm(tu.Expr(nameField, in, "n1")), tu.Term(tu.Expr("zone", in, "a"))).Obj(),
			wantCode: success, wantState: true,
		},
		{
			name: "an empty term counts as a term without a name field",
			pod: pod().RequiredNodeTerms(
				v1.NodeSelectorTerm{}, tu.FieldTerm(tu.Expr(nameField, in, "n1"))).Obj(),
			wantCode: success, wantState: true,
		},
		{
			name:     "name NotIn does not narrow",
			pod:      pod().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, notIn, "n1"))).Obj(),
			wantCode: success, wantState: true,
		},
		{
			name:     "other field key does not narrow",
			pod:      pod().RequiredNodeTerms(tu.FieldTerm(tu.Expr("metadata.uid", in, "n1"))).Obj(),
			wantCode: success, wantState: true,
		},
		{
			name: "name NotIn next to name In: only In counts",
			pod: pod().RequiredNodeTerms(tu.FieldTerm(
				tu.Expr(nameField, in, "n1"), tu.Expr(nameField, notIn, "n1"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n1"),
			wantState: true,
		},
		{
			name: "disjoint requirements in a term: conflict",
			pod: pod().RequiredNodeTerms(tu.FieldTerm(
				tu.Expr(nameField, in, "n1"), tu.Expr(nameField, in, "n2"))).Obj(),
			wantCode: unresolved, wantMsg: "pod affinity terms conflict", wantState: true,
		},
		{
			name: "every term conflicting: conflict",
			pod: pod().RequiredNodeTerms(
				tu.FieldTerm(tu.Expr(nameField, in, "n1"), tu.Expr(nameField, in, "n2")),
				tu.FieldTerm(tu.Expr(nameField, in))).Obj(),
			wantCode: unresolved, wantMsg: "pod affinity terms conflict", wantState: true,
		},
		{
			name: "one conflicting term, one pinned term: the pinned one",
			pod: pod().RequiredNodeTerms(
				tu.FieldTerm(tu.Expr(nameField, in, "n1"), tu.Expr(nameField, in, "n2")),
				tu.FieldTerm(tu.Expr(nameField, in, "n3"))).Obj(),
			wantCode:  success,
			wantNames: sets.New("n3"),
			wantState: true,
		},
		{
			name:     "added affinity never narrows, only the pod's terms do",
			pod:      pod().RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n2"))).Obj(),
			added:    requiredAdded(tu.FieldTerm(tu.Expr(nameField, in, "n1"))),
			wantCode: success, wantNames: sets.New("n2"), wantState: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newPlugin(t, tc.added, tc.fts)
			state := framework.NewCycleState()
			nodes := tu.NodeInfos(tu.MakeNode("n1").Obj(), tu.MakeNode("n2").Obj())
			res, st := pl.PreFilter(context.Background(), state, tc.pod, nodes)
			tu.CheckStatus(t, "PreFilter", st, tc.wantCode, tc.wantMsg)
			switch {
			case tc.wantNames == nil && res != nil:
				t.Errorf("PreFilterResult = %v, want nil", sets.List(res.NodeNames))
			case tc.wantNames != nil && (res == nil || !res.NodeNames.Equal(tc.wantNames)):
				t.Errorf("PreFilterResult = %v, want %v", res, sets.List(tc.wantNames))
			}
			_, err := state.Read("PreFilterNodeAffinity") // upstream's key
			if gotState := err == nil; gotState != tc.wantState {
				t.Errorf("state written = %v, want %v", gotState, tc.wantState)
			}
			if pl.PreFilterExtensions() != nil {
				t.Error("PreFilterExtensions() must be nil")
			}
		})
	}
}

func TestFilter(t *testing.T) {
	const (
		podReason      = "node(s) didn't match Pod's node affinity/selector"
		enforcedReason = "node(s) didn't match scheduler-enforced node affinity"
	)
	node := func(labels ...string) *v1.Node {
		n := tu.MakeNode("node-1").NoLabels()
		for i := 0; i+1 < len(labels); i += 2 {
			n.Label(labels[i], labels[i+1])
		}
		return n.Obj()
	}
	pod := func() *tu.PodWrapper { return tu.MakePod("ns", "p") }
	req := func(terms ...v1.NodeSelectorTerm) *v1.Pod { return pod().RequiredNodeTerms(terms...).Obj() }
	term := tu.Term
	expr := tu.Expr

	tests := []struct {
		name  string
		pod   *v1.Pod
		node  *v1.Node
		added *v1.NodeAffinity
		code  fwk.Code
		msg   string
	}{
		// --- nodeSelector ---
		{name: "no constraints", pod: pod().Obj(), node: node(), code: success},
		{name: "nodeSelector {} matches any node", pod: pod().NodeSelector(map[string]string{}).Obj(), node: node(), code: success},
		{name: "nodeSelector matches", pod: pod().NodeSelector(map[string]string{"zone": "a"}).Obj(), node: node("zone", "a"), code: success},
		{name: "nodeSelector value differs", pod: pod().NodeSelector(map[string]string{"zone": "a"}).Obj(), node: node("zone", "b"), code: unresolved, msg: podReason},
		{name: "nodeSelector label absent", pod: pod().NodeSelector(map[string]string{"zone": "a"}).Obj(), node: node(), code: unresolved, msg: podReason},
		{
			name: "nodeSelector needs every pair",
			pod:  pod().NodeSelector(map[string]string{"zone": "a", "disk": "ssd"}).Obj(),
			node: node("zone", "a"), code: unresolved, msg: podReason,
		},
		{
			name: "nodeSelector AND affinity: selector fails",
			pod:  pod().NodeSelector(map[string]string{"zone": "a"}).RequiredNodeTerms(term(expr("disk", in, "ssd"))).Obj(),
			node: node("zone", "b", "disk", "ssd"), code: unresolved, msg: podReason,
		},
		{
			name: "nodeSelector AND affinity: affinity fails",
			pod:  pod().NodeSelector(map[string]string{"zone": "a"}).RequiredNodeTerms(term(expr("disk", in, "ssd"))).Obj(),
			node: node("zone", "a", "disk", "hdd"), code: unresolved, msg: podReason,
		},
		{
			name: "nodeSelector AND affinity: both match",
			pod:  pod().NodeSelector(map[string]string{"zone": "a"}).RequiredNodeTerms(term(expr("disk", in, "ssd"))).Obj(),
			node: node("zone", "a", "disk", "ssd"), code: success,
		},
		// --- term structure ---
		{name: "terms are ORed: second matches", pod: req(term(expr("zone", in, "a")), term(expr("zone", in, "b"))), node: node("zone", "b"), code: success},
		{name: "terms are ORed: none matches", pod: req(term(expr("zone", in, "a")), term(expr("zone", in, "b"))), node: node("zone", "c"), code: unresolved, msg: podReason},
		{name: "expressions in a term are ANDed", pod: req(term(expr("zone", in, "a"), expr("disk", exists))), node: node("zone", "a"), code: unresolved, msg: podReason},
		{
			name: "expressions and fields in a term are ANDed",
			pod: req(v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", in, "a")},
				MatchFields:      []v1.NodeSelectorRequirement{expr(nameField, in, "other")},
			}),
			node: node("zone", "a"), code: unresolved, msg: podReason,
		},
		{name: "nodeSelectorTerms [] matches nothing", pod: req(), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "[{}] matches nothing", pod: req(v1.NodeSelectorTerm{}), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "[{}, {zone In a}] on zone=a", pod: req(v1.NodeSelectorTerm{}, term(expr("zone", in, "a"))), node: node("zone", "a"), code: success},
		{name: "[{}, {zone In a}] on zone=b", pod: req(v1.NodeSelectorTerm{}, term(expr("zone", in, "a"))), node: node("zone", "b"), code: unresolved, msg: podReason},
		{
			name: "empty expression list next to empty field list is an empty term",
			pod:  req(v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{}, MatchFields: []v1.NodeSelectorRequirement{}}),
			node: node(), code: unresolved, msg: podReason,
		},
		// --- lazy per-term parse errors ---
		{name: "bad operator term is skipped, next term matches", pod: req(term(expr("zone", "Bogus", "a")), term(expr("zone", in, "b"))), node: node("zone", "b"), code: success},
		{name: "bad operator term never matches", pod: req(term(expr("zone", "Bogus", "a")), term(expr("zone", in, "b"))), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "bad term after a matching one", pod: req(term(expr("zone", in, "b")), term(expr("zone", "Bogus"))), node: node("zone", "b"), code: success},
		{name: "In without values is a parse error", pod: req(term(expr("zone", in))), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "Exists with a value is a parse error", pod: req(term(expr("zone", exists, "a"))), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "invalid key is a parse error", pod: req(term(expr("bad key!", exists))), node: node("bad key!", "a"), code: unresolved, msg: podReason},
		{name: "invalid value is a parse error", pod: req(term(expr("zone", in, "a b"))), node: node("zone", "a b"), code: unresolved, msg: podReason},
		{
			name: "a parse error anywhere in a term voids the whole term",
			pod:  req(term(expr("zone", in, "a"), expr("disk", "Bogus"))),
			node: node("zone", "a", "disk", "x"), code: unresolved, msg: podReason,
		},
		// --- label operators ---
		{name: "In: value in set", pod: req(term(expr("zone", in, "a", "b"))), node: node("zone", "b"), code: success},
		{name: "In: value not in set", pod: req(term(expr("zone", in, "a", "b"))), node: node("zone", "c"), code: unresolved, msg: podReason},
		{name: "In: label absent", pod: req(term(expr("zone", in, "a"))), node: node(), code: unresolved, msg: podReason},
		{name: "NotIn: value not in set", pod: req(term(expr("zone", notIn, "a"))), node: node("zone", "b"), code: success},
		{name: "NotIn: value in set", pod: req(term(expr("zone", notIn, "a", "b"))), node: node("zone", "a"), code: unresolved, msg: podReason},
		{name: "NotIn: label absent matches", pod: req(term(expr("zone", notIn, "a"))), node: node(), code: success},
		{name: "Exists: present", pod: req(term(expr("zone", exists))), node: node("zone", ""), code: success},
		{name: "Exists: absent", pod: req(term(expr("zone", exists))), node: node(), code: unresolved, msg: podReason},
		{name: "DoesNotExist: absent", pod: req(term(expr("zone", doesNotExist))), node: node(), code: success},
		{name: "DoesNotExist: present", pod: req(term(expr("zone", doesNotExist))), node: node("zone", "a"), code: unresolved, msg: podReason},
		// --- Gt / Lt ---
		{name: "Gt: greater", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "5"), code: success},
		{name: "Gt: equal is not greater", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "4"), code: unresolved, msg: podReason},
		{name: "Gt: smaller", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "3"), code: unresolved, msg: podReason},
		{name: "Lt: smaller", pod: req(term(expr("cpus", lt, "4"))), node: node("cpus", "3"), code: success},
		{name: "Lt: equal is not smaller", pod: req(term(expr("cpus", lt, "4"))), node: node("cpus", "4"), code: unresolved, msg: podReason},
		{name: "Lt: greater", pod: req(term(expr("cpus", lt, "4"))), node: node("cpus", "9"), code: unresolved, msg: podReason},
		{name: "Gt: label absent", pod: req(term(expr("cpus", gt, "4"))), node: node(), code: unresolved, msg: podReason},
		{name: "Lt: label absent", pod: req(term(expr("cpus", lt, "4"))), node: node(), code: unresolved, msg: podReason},
		{name: "Gt: node value with leading zeros", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "007"), code: success},
		{name: "Gt: node value with leading plus", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "+5"), code: success},
		{name: "Lt: negative node value", pod: req(term(expr("cpus", lt, "0"))), node: node("cpus", "-3"), code: success},
		{name: "Gt: non-numeric node value", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "many"), code: unresolved, msg: podReason},
		{name: "Gt: node value overflowing int64", pod: req(term(expr("cpus", gt, "4"))), node: node("cpus", "99999999999999999999"), code: unresolved, msg: podReason},
		{name: "Gt: leading zeros in the term value", pod: req(term(expr("cpus", gt, "04"))), node: node("cpus", "5"), code: success},
		{name: "Gt: negative term value is a parse error", pod: req(term(expr("cpus", gt, "-5"))), node: node("cpus", "10"), code: unresolved, msg: podReason},
		{name: "Gt: non-integer term value is a parse error", pod: req(term(expr("cpus", gt, "x"))), node: node("cpus", "10"), code: unresolved, msg: podReason},
		{name: "Gt: two values is a parse error", pod: req(term(expr("cpus", gt, "1", "2"))), node: node("cpus", "10"), code: unresolved, msg: podReason},
		{name: "Lt: no value is a parse error", pod: req(term(expr("cpus", lt))), node: node("cpus", "1"), code: unresolved, msg: podReason},
		{
			name: "negative Gt term is skipped lazily, next term matches",
			pod:  req(term(expr("cpus", gt, "-5")), term(expr("zone", in, "a"))),
			node: node("cpus", "10", "zone", "a"), code: success,
		},
		// --- matchFields ---
		{name: "field name In: match", pod: req(tu.FieldTerm(expr(nameField, in, "node-1"))), node: node(), code: success},
		{name: "field name In: other node", pod: req(tu.FieldTerm(expr(nameField, in, "node-2"))), node: node(), code: unresolved, msg: podReason},
		{name: "field name NotIn: other node", pod: req(tu.FieldTerm(expr(nameField, notIn, "node-2"))), node: node(), code: success},
		{name: "field name NotIn: this node", pod: req(tu.FieldTerm(expr(nameField, notIn, "node-1"))), node: node(), code: unresolved, msg: podReason},
		{name: "field In with two values is a parse error, even listing the node", pod: req(tu.FieldTerm(expr(nameField, in, "node-1", "node-2"))), node: node(), code: unresolved, msg: podReason},
		{name: "field NotIn without values is a parse error", pod: req(tu.FieldTerm(expr(nameField, notIn))), node: node(), code: unresolved, msg: podReason},
		{name: "field Exists is a parse error", pod: req(tu.FieldTerm(expr(nameField, exists))), node: node(), code: unresolved, msg: podReason},
		{
			name: "field requirements are ANDed",
			pod:  req(tu.FieldTerm(expr(nameField, in, "node-1"), expr(nameField, notIn, "node-1"))),
			node: node(), code: unresolved, msg: podReason,
		},
		{name: "unknown field key In never matches a named node", pod: req(tu.FieldTerm(expr("metadata.uid", in, "x"))), node: node(), code: unresolved, msg: podReason},
		{name: "unknown field key NotIn matches a named node", pod: req(tu.FieldTerm(expr("metadata.uid", notIn, "x"))), node: node(), code: success},
		{
			name: "node with empty name: matchFields are ignored",
			pod:  req(tu.FieldTerm(expr(nameField, in, "node-2"))),
			node: tu.MakeNode("").NoLabels().Obj(), code: success,
		},
		{
			name: "node with empty name: expressions still apply",
			pod: req(v1.NodeSelectorTerm{
				MatchExpressions: []v1.NodeSelectorRequirement{expr("zone", in, "a")},
				MatchFields:      []v1.NodeSelectorRequirement{expr(nameField, in, "node-2")},
			}),
			node: tu.MakeNode("").NoLabels().Label("zone", "b").Obj(), code: unresolved, msg: podReason,
		},
		{
			name: "node with empty name: field parse errors still void the term",
			pod:  req(tu.FieldTerm(expr(nameField, in, "a", "b"))),
			node: tu.MakeNode("").NoLabels().Obj(), code: unresolved, msg: podReason,
		},
		// --- addedAffinity ---
		{name: "added required matches, pod has none", pod: pod().Obj(), added: requiredAdded(term(expr("zone", in, "a"))), node: node("zone", "a"), code: success},
		{name: "added required fails", pod: pod().Obj(), added: requiredAdded(term(expr("zone", in, "a"))), node: node("zone", "b"), code: unresolved, msg: enforcedReason},
		{
			name:  "added required is checked first",
			pod:   pod().NodeSelector(map[string]string{"disk": "ssd"}).Obj(),
			added: requiredAdded(term(expr("zone", in, "a"))),
			node:  node("zone", "b"), code: unresolved, msg: enforcedReason,
		},
		{
			name:  "added required passes, pod fails",
			pod:   pod().NodeSelector(map[string]string{"disk": "ssd"}).Obj(),
			added: requiredAdded(term(expr("zone", in, "a"))),
			node:  node("zone", "a"), code: unresolved, msg: podReason,
		},
		{
			name:  "added required is ANDed with the pod's terms",
			pod:   req(term(expr("disk", in, "ssd"))),
			added: requiredAdded(term(expr("zone", in, "a"))),
			node:  node("zone", "a", "disk", "ssd"), code: success,
		},
		{name: "added nodeSelectorTerms [] rejects every node", pod: pod().Obj(), added: requiredAdded(), node: node("zone", "a"), code: unresolved, msg: enforcedReason},
		{name: "added [{}] rejects every node", pod: pod().Obj(), added: requiredAdded(v1.NodeSelectorTerm{}), node: node("zone", "a"), code: unresolved, msg: enforcedReason},
		{name: "added terms are ORed", pod: pod().Obj(), added: requiredAdded(term(expr("zone", in, "a")), term(expr("zone", in, "b"))), node: node("zone", "b"), code: success},
		{name: "added field term", pod: pod().Obj(), added: requiredAdded(tu.FieldTerm(expr(nameField, notIn, "node-1"))), node: node(), code: unresolved, msg: enforcedReason},
		{
			name:  "added preferred terms never filter",
			pod:   pod().NodeSelector(map[string]string{}).Obj(),
			added: preferredAdded(pref(10, term(expr("zone", in, "a")))),
			node:  node("zone", "b"), code: success,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pl := newPlugin(t, tc.added, feature.Features{})
			ni := tu.NodeInfo(tc.node)

			// As the framework runs it: PreFilter, then Filter unless Skipped
			// or rejected in PreFilter.
			state := framework.NewCycleState()
			_, pfStatus := pl.PreFilter(ctx, state, tc.pod, []fwk.NodeInfo{ni})
			if pfStatus.IsSkip() {
				if tc.code != success {
					t.Fatalf("PreFilter skipped, but Filter is expected to reject")
				}
			} else if tu.CheckStatus(t, "PreFilter", pfStatus, success, "") {
				tu.CheckStatus(t, "Filter after PreFilter", pl.Filter(ctx, state, tc.pod, ni), tc.code, tc.msg)
			}

			// With PreFilter disabled in the profile, Filter parses on its own.
			tu.CheckStatus(t, "Filter without PreFilter state", pl.Filter(ctx, framework.NewCycleState(), tc.pod, ni), tc.code, tc.msg)
		})
	}
}

func TestResizeDeferred(t *testing.T) {
	ctx := context.Background()
	gateOn := feature.Features{EnableInPlacePodVerticalScalingSchedulerPreemption: true}
	added := requiredAdded(tu.Term(tu.Expr("zone", in, "a")))
	node := tu.NodeInfo(tu.MakeNode("n1").Label("zone", "b").Obj())
	deferred := tu.MakePod("ns", "p").ResizeDeferred().NodeSelector(map[string]string{"zone": "a"}).Obj()
	notDeferred := tu.MakePod("ns", "p").NodeSelector(map[string]string{"zone": "a"}).Obj()

	// Gate on, resize deferred: Filter passes even a node failing both the
	// added and the pod's own affinity.
	pl := newPlugin(t, added, gateOn)
	tu.CheckStatus(t, "Filter(gate on, deferred)", pl.Filter(ctx, framework.NewCycleState(), deferred, node), success, "")
	tu.CheckStatus(t, "Filter(gate on, not deferred)", pl.Filter(ctx, framework.NewCycleState(), notDeferred, node),
		unresolved, "node(s) didn't match scheduler-enforced node affinity")

	// Gate off: a deferred resize changes nothing.
	pl = newPlugin(t, added, feature.Features{})
	tu.CheckStatus(t, "Filter(gate off, deferred)", pl.Filter(ctx, framework.NewCycleState(), deferred, node),
		unresolved, "node(s) didn't match scheduler-enforced node affinity")

	// Scoring has no deferred-resize exemption upstream: PreScore still
	// parses (and fails on) the pod's preferred terms.
	badPref := tu.MakePod("ns", "p").ResizeDeferred().PreferredNodeTerm(1, tu.Term(tu.Expr("cpus", gt, "x"))).Obj()
	pl = newPlugin(t, nil, gateOn)
	tu.CheckStatus(t, "PreScore(gate on, deferred, bad preferred term)", pl.PreScore(ctx, framework.NewCycleState(), badPref, []fwk.NodeInfo{node}),
		fwk.Error, `[0].matchExpressions[0].values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`)
}

func TestFilterPreFilterResultWithTwoValuedField(t *testing.T) {
	// PreFilter narrows to {n1, n2} from raw values, yet the term is a
	// parse error (field In takes one value), so Filter rejects both.
	ctx := context.Background()
	pl := newPlugin(t, nil, feature.Features{})
	pod := tu.MakePod("ns", "p").RequiredNodeTerms(tu.FieldTerm(tu.Expr(nameField, in, "n1", "n2"))).Obj()
	nodes := tu.NodeInfos(tu.MakeNode("n1").Obj(), tu.MakeNode("n2").Obj(), tu.MakeNode("n3").Obj())
	state := framework.NewCycleState()
	res, st := pl.PreFilter(ctx, state, pod, nodes)
	tu.CheckStatus(t, "PreFilter", st, success, "")
	if res == nil || !res.NodeNames.Equal(sets.New("n1", "n2")) {
		t.Fatalf("PreFilterResult = %v, want [n1 n2]", res)
	}
	for _, ni := range nodes {
		if !res.NodeNames.Has(ni.Node().Name) {
			continue
		}
		tu.CheckStatus(t, "Filter("+ni.Node().Name+")", pl.Filter(ctx, state, pod, ni), unresolved, errReasonPod)
	}
}

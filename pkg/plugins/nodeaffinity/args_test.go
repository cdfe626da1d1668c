package nodeaffinity

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestNewArgs(t *testing.T) {
	const reqPath = "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
	const prefPath = "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
	badOp := reqPath + `[0].matchExpressions[0].operator: Unsupported value: "Bogus": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"`
	tests := []struct {
		name string
		obj  runtime.Object
		// wantErr is the exact construction error; empty means success.
		wantErr string
		// wantErrSub is a substring check for errors whose exact text
		// belongs to the JSON library.
		wantErrSub string
		// For successful cases: whether an added required selector and
		// added preferred terms were compiled.
		wantRequired, wantPreferred bool
	}{
		{name: "nil args: no added affinity", obj: nil},
		{name: "empty raw args", obj: &runtime.Unknown{}},
		{name: "empty object", obj: tu.RawArgs(`{}`)},
		{name: "kind and apiVersion are accepted", obj: tu.RawArgs(`{"kind":"NodeAffinityArgs","apiVersion":"kubescheduler.config.k8s.io/v1"}`)},
		{name: "null addedAffinity", obj: tu.RawArgs(`{"addedAffinity":null}`)},
		{name: "empty addedAffinity", obj: tu.RawArgs(`{"addedAffinity":{}}`)},
		{
			name:         "valid required",
			obj:          tu.RawArgs(`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}`),
			wantRequired: true,
		},
		{
			name: "valid required and preferred as YAML",
			obj: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte(`
addedAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
    - matchFields:
      - {key: metadata.name, operator: NotIn, values: [n0]}
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 3
    preference:
      matchExpressions:
      - {key: cpus, operator: Gt, values: ["4"]}
`)},
			wantRequired: true, wantPreferred: true,
		},
		{
			name:         "nodeSelectorTerms [] is valid (and matches nothing)",
			obj:          tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: requiredAdded()}),
			wantRequired: true,
		},
		{name: "preferred [] compiles to nothing", obj: tu.RawArgs(`{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[]}}`)},
		{
			name:          "negative and out-of-range preferred weights are not checked",
			obj:           tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: preferredAdded(pref(-5, tu.Term(tu.Expr("a", exists))), pref(1000, tu.Term(tu.Expr("b", exists))))}),
			wantPreferred: true,
		},
		{
			name:          "weight-0 preferred terms are dropped before validation",
			obj:           tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: preferredAdded(pref(0, tu.Term(tu.Expr("a", gt, "x"))))}),
			wantPreferred: true,
		},
		// --- decoding errors ---
		{name: "unknown top-level field", obj: tu.RawArgs(`{"addedAfinity":{}}`), wantErrSub: `unknown field "addedAfinity"`},
		{
			name:       "unknown nested field",
			obj:        tu.RawArgs(`{"addedAffinity":{"requiredDuringSchedulingRequiredDuringExecution":{}}}`),
			wantErrSub: `unknown field "addedAffinity.requiredDuringSchedulingRequiredDuringExecution"`,
		},
		{name: "duplicate field", obj: tu.RawArgs(`{"addedAffinity":{},"addedAffinity":{}}`), wantErrSub: `duplicate field "addedAffinity"`},
		{name: "malformed JSON", obj: tu.RawArgs(`{"addedAffinity":`), wantErrSub: "decoding args"},
		{name: "wrong object type", obj: &v1.Pod{}, wantErr: "want args of type runtime.Unknown, got *v1.Pod"},
		{
			// The framework never hands out-of-tree plugins typed args (docs/behavior.md §2.2).
			name:    "typed args are rejected like any other object",
			obj:     &configv1.NodeAffinityArgs{AddedAffinity: requiredAdded(tu.Term(tu.Expr("zone", exists)))},
			wantErr: "want args of type runtime.Unknown, got *v1.NodeAffinityArgs",
		},
		// --- validation errors, with field paths ---
		{
			name:    "invalid required operator",
			obj:     tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: requiredAdded(tu.Term(tu.Expr("zone", "Bogus", "a")))}),
			wantErr: badOp,
		},
		{
			name: "a bad required term is fatal even when another term is fine",
			obj: tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: requiredAdded(
				tu.Term(tu.Expr("zone", in, "a")), tu.FieldTerm(tu.Expr(nameField, in, "n1", "n2")))}),
			wantErr: reqPath + `[1].matchFields[0].values: Invalid value: ["n1","n2"]: must have one element`,
		},
		{
			name:    "invalid preferred Gt value",
			obj:     tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: preferredAdded(pref(1, tu.Term(tu.Expr("cpus", gt, "x"))))}),
			wantErr: prefPath + `[0].matchExpressions[0].values[0]: Invalid value: "x": for 'Gt', 'Lt' operators, the value must be an integer`,
		},
		{
			name: "required and preferred errors are aggregated",
			obj: tu.ArgsOf(configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{tu.Term(tu.Expr("zone", "Bogus", "a"))}},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{pref(1, tu.Term(tu.Expr("zone", in)))},
			}}),
			wantErr: "[" + badOp + ", " + prefPath + "[0].matchExpressions[0].values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(context.Background(), tc.obj, nil, feature.Features{})
			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("New error = %v,\nwant %s", err, tc.wantErr)
				}
				return
			case tc.wantErrSub != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("New error = %v, want it to contain %q", err, tc.wantErrSub)
				}
				return
			case err != nil:
				t.Fatalf("New: %v", err)
			}
			pl := p.(*NodeAffinity)
			if got := pl.addedNodeSelector != nil; got != tc.wantRequired {
				t.Errorf("added required selector compiled = %v, want %v", got, tc.wantRequired)
			}
			if got := pl.addedPrefSchedTerms != nil; got != tc.wantPreferred {
				t.Errorf("added preferred terms compiled = %v, want %v", got, tc.wantPreferred)
			}
			if pl.Name() != "PlacementNodeAffinity" {
				t.Errorf("Name() = %q", pl.Name())
			}
		})
	}
}

// TestArgsEndToEnd checks that decoded args drive behaviour: added required
// terms filter and added preferred terms score.
func TestArgsEndToEnd(t *testing.T) {
	ctx := context.Background()
	p, err := New(ctx, tu.RawArgs(`{"addedAffinity":{
		"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["batch"]}]}]},
		"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":7,"preference":{"matchExpressions":[{"key":"disk","operator":"Exists"}]}}]}}`),
		nil, feature.Features{})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*NodeAffinity)
	pod := tu.MakePod("ns", "p").Obj()
	batch := tu.NodeInfo(tu.MakeNode("b").Label("pool", "batch").Label("disk", "ssd").Obj())
	web := tu.NodeInfo(tu.MakeNode("w").Label("pool", "web").Obj())

	state := framework.NewCycleState()
	_, st := pl.PreFilter(ctx, state, pod, []fwk.NodeInfo{batch, web})
	tu.CheckStatus(t, "PreFilter", st, fwk.Success, "")
	tu.CheckStatus(t, "Filter(batch)", pl.Filter(ctx, state, pod, batch), fwk.Success, "")
	tu.CheckStatus(t, "Filter(web)", pl.Filter(ctx, state, pod, web), fwk.UnschedulableAndUnresolvable, "node(s) didn't match scheduler-enforced node affinity")

	tu.CheckStatus(t, "PreScore", pl.PreScore(ctx, state, pod, []fwk.NodeInfo{batch}), fwk.Success, "")
	s, st := pl.Score(ctx, state, pod, batch)
	tu.CheckStatus(t, "Score(batch)", st, fwk.Success, "")
	if s != 7 {
		t.Errorf("Score(batch) = %d, want 7", s)
	}
}

package pluginargs

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

func TestDecodeStrict(t *testing.T) {
	cases := []struct {
		name    string
		obj     runtime.Object
		want    int32 // decoded hardPodAffinityWeight, -1 when left nil
		wantErr string
	}{
		{name: "nil object", obj: nil, want: -1},
		{name: "no raw bytes", obj: &runtime.Unknown{}, want: -1},
		{name: "json", obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWeight":7}`)}, want: 7},
		{name: "json with type meta", obj: &runtime.Unknown{Raw: []byte(`{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"InterPodAffinityArgs","hardPodAffinityWeight":3}`)}, want: 3},
		{name: "yaml", obj: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("hardPodAffinityWeight: 9\n")}, want: 9},
		{name: "unknown field", obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWieght":7}`)}, wantErr: `unknown field "hardPodAffinityWieght"`},
		{name: "duplicate field", obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWeight":7,"hardPodAffinityWeight":8}`)}, wantErr: `duplicate field "hardPodAffinityWeight"`},
		{name: "yaml unknown field", obj: &runtime.Unknown{ContentType: runtime.ContentTypeYAML, Raw: []byte("weight: 9\n")}, wantErr: `unknown field "weight"`},
		{name: "wrong type", obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWeight":"seven"}`)}, wantErr: "decoding args"},
		{name: "unsupported content type", obj: &runtime.Unknown{ContentType: "application/vnd.kubernetes.protobuf", Raw: []byte{1}}, wantErr: "unsupported content type"},
		{name: "not runtime.Unknown", obj: &configv1.InterPodAffinityArgs{}, wantErr: "want args of type runtime.Unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var args configv1.InterPodAffinityArgs
			err := DecodeStrict(tc.obj, &args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := int32(-1)
			if args.HardPodAffinityWeight != nil {
				got = *args.HardPodAffinityWeight
			}
			if got != tc.want {
				t.Errorf("hardPodAffinityWeight = %d, want %d", got, tc.want)
			}
		})
	}
}

// Decode applies kube-scheduler's defaults for the versioned kind and hands
// over the internal type upstream's validation takes.
func TestDecodeDefaultsAndConverts(t *testing.T) {
	for name, tc := range map[string]struct {
		obj  runtime.Object
		want int32
	}{
		"no args: default 1":    {obj: nil, want: 1},
		"empty args: default 1": {obj: &runtime.Unknown{Raw: []byte(`{}`)}, want: 1},
		"explicit 0 stays 0":    {obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWeight":0}`)}, want: 0},
		"explicit 7":            {obj: &runtime.Unknown{Raw: []byte(`{"hardPodAffinityWeight":7}`)}, want: 7},
	} {
		t.Run(name, func(t *testing.T) {
			var got config.InterPodAffinityArgs
			if err := Decode(tc.obj, &configv1.InterPodAffinityArgs{}, &got); err != nil {
				t.Fatal(err)
			}
			if got.HardPodAffinityWeight != tc.want {
				t.Errorf("hardPodAffinityWeight = %d, want %d", got.HardPodAffinityWeight, tc.want)
			}
		})
	}
	var got config.InterPodAffinityArgs
	if err := Decode(&runtime.Unknown{Raw: []byte(`{"hardPodAffinityWieght":7}`)}, &configv1.InterPodAffinityArgs{}, &got); err == nil || !strings.Contains(err.Error(), `unknown field "hardPodAffinityWieght"`) {
		t.Errorf("misspelt field: err = %v, want the strict decoder's", err)
	}
}

// Errors carry the fix: an unknown field comes with the fields valid where
// it was found, a type error with what the field takes.
func TestDecodeStrictSaysTheFix(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		into any
		want string
	}{
		{"unknown top-level field", `{"hardPodAfinityWeight":1}`, &configv1.InterPodAffinityArgs{},
			`decoding args: unknown field "hardPodAfinityWeight" (valid fields: hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)`},
		{"unknown nested field", `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpression":[]}]}}}`, &configv1.NodeAffinityArgs{},
			`decoding args: unknown field "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression" ` +
				`(valid fields of addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: matchExpressions, matchFields)`},
		{"integer given a string", `{"hardPodAffinityWeight":"1"}`, &configv1.InterPodAffinityArgs{},
			`decoding args: hardPodAffinityWeight must be an integer (int32), not string: json: cannot unmarshal`},
		{"bool given a number", `{"ignorePreferredTermsOfExistingPods":1}`, &configv1.InterPodAffinityArgs{},
			`decoding args: ignorePreferredTermsOfExistingPods must be true or false, not number: json: cannot unmarshal`},
		{"list given a string", `{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":"x"}}`, &configv1.NodeAffinityArgs{},
			`decoding args: addedAffinity.preferredDuringSchedulingIgnoredDuringExecution must be a list of objects (PreferredSchedulingTerm), not string`},
		{"args not an object", `[1]`, &configv1.NodeAffinityArgs{},
			`decoding args: args must be an object (NodeAffinityArgs), not array: json: cannot unmarshal`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeStrict(&runtime.Unknown{Raw: []byte(tc.raw)}, tc.into)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant prefix %s", err, tc.want)
			}
		})
	}
}

package interpodaffinity

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	tu "github.com/placement-scheduler/placement-scheduler/internal/testutil"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		want    args
		wantErr string
	}{
		{name: "nil: defaults", obj: nil, want: args{hardPodAffinityWeight: 1}},
		{name: "empty raw: defaults", obj: tu.RawArgs(""), want: args{hardPodAffinityWeight: 1}},
		{name: "{}: defaults", obj: tu.RawArgs(`{}`), want: args{hardPodAffinityWeight: 1}},
		{name: "explicit 0 is kept", obj: tu.RawArgs(`{"hardPodAffinityWeight": 0}`), want: args{}},
		{name: "bounds inclusive", obj: tu.RawArgs(`{"hardPodAffinityWeight": 100}`), want: args{hardPodAffinityWeight: 100}},
		{
			name: "typed args marshalled, with type meta",
			obj: tu.ArgsOf(&configv1.InterPodAffinityArgs{
				HardPodAffinityWeight:              ptr.To[int32](5),
				IgnorePreferredTermsOfExistingPods: true,
			}),
			want: args{hardPodAffinityWeight: 5, ignorePreferredTermsOfExistingPods: true},
		},
		{
			name: "kind and apiVersion accepted",
			obj:  tu.RawArgs(`{"kind": "InterPodAffinityArgs", "apiVersion": "kubescheduler.config.k8s.io/v1", "ignorePreferredTermsOfExistingPods": true}`),
			want: args{hardPodAffinityWeight: 1, ignorePreferredTermsOfExistingPods: true},
		},
		{
			name: "YAML",
			obj:  &runtime.Unknown{Raw: []byte("hardPodAffinityWeight: 3\n"), ContentType: runtime.ContentTypeYAML},
			want: args{hardPodAffinityWeight: 3},
		},
		{
			name:    "above range",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": 101}`),
			wantErr: "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
		},
		{
			name:    "below range",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": -1}`),
			wantErr: "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]",
		},
		{
			name:    "unknown field",
			obj:     tu.RawArgs(`{"hardPodAfinityWeight": 2}`),
			wantErr: `decoding args: unknown field "hardPodAfinityWeight" (valid fields: hardPodAffinityWeight, ignorePreferredTermsOfExistingPods)`,
		},
		{
			name:    "wrong type",
			obj:     tu.RawArgs(`{"hardPodAffinityWeight": "2"}`),
			wantErr: "decoding args: hardPodAffinityWeight must be an integer (int32), not string: json: cannot unmarshal string into Go struct field InterPodAffinityArgs.hardPodAffinityWeight of type int32",
		},
		{
			name:    "already typed objects are not expected",
			obj:     &configv1.InterPodAffinityArgs{},
			wantErr: "want args of type runtime.Unknown, got *v1.InterPodAffinityArgs",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeArgs(tc.obj)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

package interpodaffinity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
)

// Bounds of hardPodAffinityWeight, as upstream validates them.
const (
	minHardPodAffinityWeight = 0
	maxHardPodAffinityWeight = 100
)

// args are the plugin's settings after decoding, defaulting and validation.
type args struct {
	// hardPodAffinityWeight is the score an existing pod's required affinity
	// term gives to the domain it runs in when the incoming pod matches the
	// term. 0 disables this symmetric contribution.
	hardPodAffinityWeight int32
	// ignorePreferredTermsOfExistingPods skips scoring entirely for pods
	// without preferred terms of their own.
	ignorePreferredTermsOfExistingPods bool
}

// decodeArgs decodes configv1.InterPodAffinityArgs strictly, then applies the
// defaults and validation that kube-scheduler applies only to the in-tree
// plugin's args kind.
func decodeArgs(obj runtime.Object) (args, error) {
	var in configv1.InterPodAffinityArgs
	if err := pluginargs.DecodeStrict(obj, &in); err != nil {
		return args{}, err
	}
	a := args{
		hardPodAffinityWeight:              1, // SetDefaults_InterPodAffinityArgs
		ignorePreferredTermsOfExistingPods: in.IgnorePreferredTermsOfExistingPods,
	}
	if in.HardPodAffinityWeight != nil {
		a.hardPodAffinityWeight = *in.HardPodAffinityWeight
	}
	if err := a.validate(); err != nil {
		return args{}, err
	}
	return a, nil
}

// validate checks the args like upstream's ValidateInterPodAffinityArgs, with
// errors naming the field, e.g.
// `hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]`.
// The args are a pluginConfig entry of their own, so field paths start at
// the args' root.
func (a args) validate() error {
	w := a.hardPodAffinityWeight
	if w < minHardPodAffinityWeight || w > maxHardPodAffinityWeight {
		return field.Invalid(field.NewPath("hardPodAffinityWeight"), w,
			fmt.Sprintf("not in valid range [%d, %d]", minHardPodAffinityWeight, maxHardPodAffinityWeight))
	}
	return nil
}

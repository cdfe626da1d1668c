package interpodaffinity

import (
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
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

// decodeArgs gives our args the treatment kube-scheduler gives only the
// in-tree plugin's args kind: strict decoding, its defaults
// (hardPodAffinityWeight 1) and upstream's own validation, called rather
// than restated, so the bounds and the error text are upstream's by
// construction, e.g.
// `hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]`.
// The nil path is what upstream's New passes: the args are a pluginConfig
// entry of their own, so field paths start at the args' root.
func decodeArgs(obj runtime.Object) (args, error) {
	var in config.InterPodAffinityArgs
	if err := pluginargs.Decode(obj, &configv1.InterPodAffinityArgs{}, &in); err != nil {
		return args{}, err
	}
	if err := validation.ValidateInterPodAffinityArgs(nil, &in); err != nil {
		return args{}, err
	}
	return args{
		hardPodAffinityWeight:              in.HardPodAffinityWeight,
		ignorePreferredTermsOfExistingPods: in.IgnorePreferredTermsOfExistingPods,
	}, nil
}

package nodeaffinity

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
)

// decodeArgs turns the pluginConfig args into configv1.NodeAffinityArgs.
//
// kube-scheduler only decodes args for in-tree plugin names, so ours arrive
// as *runtime.Unknown, or nil when the profile has no pluginConfig entry,
// which means no added affinity. Any other object, typed args included, is
// rejected by the decoder. NodeAffinityArgs has no defaults, so there is
// nothing to apply after decoding.
func decodeArgs(obj runtime.Object) (*configv1.NodeAffinityArgs, error) {
	args := &configv1.NodeAffinityArgs{}
	// DecodeStrict already says "decoding args: ..." and the framework
	// prefixes the plugin name, so the error is returned as is.
	if err := pluginargs.DecodeStrict(obj, args); err != nil {
		return nil, err
	}
	return args, nil
}

// addedAffinity is the compiled form of args.addedAffinity.
type addedAffinity struct {
	required  *nodeaffinity.NodeSelector
	preferred *nodeaffinity.PreferredSchedulingTerms
}

// compileAddedAffinity validates args.addedAffinity and compiles it in one
// pass, with upstream's ValidateNodeAffinityArgs semantics:
//   - required is parsed strictly (any term's parse error is fatal, unlike
//     the lazy parsing applied to pods' own terms);
//   - preferred is parsed only when non-empty, so `preferred: []` behaves
//     like no preferred terms at all;
//   - there is no weight range check and no "at least one term" check, so
//     `nodeSelectorTerms: []` is valid and matches no node;
//   - errors carry field paths rooted at addedAffinity and are aggregated,
//     e.g. `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.
//     nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: ...`.
//
// The returned error text equals upstream's validation error, so a profile
// migrated from the in-tree plugin reports the same problem.
func compileAddedAffinity(args *configv1.NodeAffinityArgs) (addedAffinity, error) {
	var out addedAffinity
	if args.AddedAffinity == nil {
		return out, nil
	}
	root := field.NewPath("addedAffinity")
	var errs []error
	if ns := args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		sel, err := nodeaffinity.NewNodeSelector(ns, field.WithPath(root.Child("requiredDuringSchedulingIgnoredDuringExecution")))
		if err != nil {
			errs = append(errs, err)
		}
		out.required = sel
	}
	if terms := args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
		pref, err := nodeaffinity.NewPreferredSchedulingTerms(terms, field.WithPath(root.Child("preferredDuringSchedulingIgnoredDuringExecution")))
		if err != nil {
			errs = append(errs, err)
		}
		out.preferred = pref
	}
	if err := utilerrors.Flatten(utilerrors.NewAggregate(errs)); err != nil {
		return addedAffinity{}, err
	}
	return out, nil
}

package nodeaffinity

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"

	"github.com/placement-scheduler/placement-scheduler/pkg/plugins/internal/pluginargs"
)

// decodeArgs gives our args the treatment kube-scheduler gives only the
// in-tree plugin's args kind: strict decoding, defaulting (NodeAffinityArgs
// has no defaults today; running kube-scheduler's keeps it that way if one
// appears) and upstream's own ValidateNodeAffinityArgs, called rather than
// restated. Its semantics, which compileAddedAffinity relies on:
//   - required is parsed strictly (any term's parse error is fatal, unlike
//     the lazy parsing applied to pods' own terms);
//   - preferred is parsed only when non-empty, so `preferred: []` behaves
//     like no preferred terms at all;
//   - there is no weight range check and no "at least one term" check, so
//     `nodeSelectorTerms: []` is valid and matches no node;
//   - errors carry field paths rooted at addedAffinity (the nil path is what
//     upstream's New passes) and are aggregated, e.g.
//     `addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.
//     nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: ...`.
//
// nil args (no pluginConfig entry) mean no added affinity. Any object other
// than *runtime.Unknown, typed args included, is rejected by the decoder.
// Errors are returned as they are: the framework prefixes the plugin name.
func decodeArgs(obj runtime.Object) (*config.NodeAffinityArgs, error) {
	var args config.NodeAffinityArgs
	if err := pluginargs.Decode(obj, &configv1.NodeAffinityArgs{}, &args); err != nil {
		return nil, err
	}
	if err := validation.ValidateNodeAffinityArgs(nil, &args); err != nil {
		return nil, err
	}
	return &args, nil
}

// addedAffinity is the compiled form of args.addedAffinity.
type addedAffinity struct {
	required  *requiredSelector
	preferred *preferredTerms
}

// compileAddedAffinity compiles validated args.addedAffinity into the
// matchers Filter and Score use. component-helpers parses the terms first,
// for its errors (which carry the field paths users see), though
// validation already parsed them; then ours, for the per-node matchers.
// Once, at start-up. A parse error cannot happen after validation; it is
// still returned rather than assumed away.
func compileAddedAffinity(args *config.NodeAffinityArgs) (addedAffinity, error) {
	var out addedAffinity
	if args.AddedAffinity == nil {
		return out, nil
	}
	root := field.NewPath("addedAffinity")
	var errs []error
	if ns := args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		if _, err := nodeaffinity.NewNodeSelector(ns, field.WithPath(root.Child("requiredDuringSchedulingIgnoredDuringExecution"))); err != nil {
			errs = append(errs, err)
		}
		out.required = newRequiredSelector(ns)
	}
	if terms := args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) != 0 {
		if _, err := nodeaffinity.NewPreferredSchedulingTerms(terms, field.WithPath(root.Child("preferredDuringSchedulingIgnoredDuringExecution"))); err != nil {
			errs = append(errs, err)
		} else if pref, ok := newPreferredTerms(terms); ok {
			out.preferred = pref
		} else {
			errs = append(errs, fmt.Errorf("addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: our parser rejects what component-helpers accepts (a bug of %s)", Name))
		}
	}
	if err := utilerrors.Flatten(utilerrors.NewAggregate(errs)); err != nil {
		return addedAffinity{}, err
	}
	return out, nil
}

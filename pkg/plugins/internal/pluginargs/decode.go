// Package pluginargs decodes the args our plugins receive from a
// KubeSchedulerConfiguration.
//
// kube-scheduler only knows the args kinds of in-tree plugin names, so an
// out-of-tree plugin receives its pluginConfig args undecoded, as a
// *runtime.Unknown (or nil when the profile has none). The framework's own
// helper (frameworkruntime.DecodeInto) is lenient: a misspelt field is
// silently dropped and the plugin runs with defaults. We decode strictly so a
// typo fails at start-up instead.
package pluginargs

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// DecodeStrict decodes obj into into, rejecting unknown and duplicate fields.
// A nil obj, or one with no raw bytes, leaves into untouched and is not an
// error: the profile simply gave no args.
func DecodeStrict(obj runtime.Object, into any) error {
	if obj == nil {
		return nil
	}
	unknown, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("want args of type runtime.Unknown, got %T", obj)
	}
	raw := unknown.Raw
	if len(raw) == 0 {
		return nil
	}
	switch unknown.ContentType {
	case runtime.ContentTypeJSON, "":
	case runtime.ContentTypeYAML:
		var err error
		if raw, err = sigsyaml.YAMLToJSONStrict(raw); err != nil {
			return fmt.Errorf("decoding args: %w", err)
		}
	default:
		return fmt.Errorf("decoding args: unsupported content type %q", unknown.ContentType)
	}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, into)
	if err != nil {
		return fmt.Errorf("decoding args: %w", err)
	}
	if len(strictErrs) > 0 {
		// e.g. `unknown field "addedAfinity"`; the framework prefixes the plugin name.
		return fmt.Errorf("decoding args: %w", errors.Join(strictErrs...))
	}
	return nil
}

// Decode is what kube-scheduler does for an in-tree plugin's args, for ours:
// DecodeStrict into versioned (a k8s.io/kube-scheduler/config/v1 args type),
// then kube-scheduler's own defaults for that type, then conversion into
// internal (the k8s.io/kubernetes/pkg/scheduler/apis/config type), the form
// upstream's exported args validation takes. Start-up cost only: plugins call
// it once, in New.
func Decode(obj runtime.Object, versioned runtime.Object, internal any) error {
	if err := DecodeStrict(obj, versioned); err != nil {
		return err
	}
	scheme.Scheme.Default(versioned)
	if err := scheme.Scheme.Convert(versioned, internal, nil); err != nil {
		return fmt.Errorf("converting args: %w", err)
	}
	return nil
}

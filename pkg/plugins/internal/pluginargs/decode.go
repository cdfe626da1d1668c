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
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		return fmt.Errorf("decoding args: %s%w", typeHint(raw, into), err)
	}
	if len(strictErrs) > 0 {
		// e.g. `unknown field "addedAfinity"`; the framework prefixes the
		// plugin name. Each unknown field is followed by the fields valid
		// where it was found, so the fix is in the message.
		errs := make([]error, len(strictErrs))
		for i, e := range strictErrs {
			errs[i] = e
			var fe sigsjson.FieldError
			if errors.As(e, &fe) && strings.HasPrefix(e.Error(), "unknown field") {
				errs[i] = fmt.Errorf("%w (%s)", e, validFieldsHint(reflect.TypeOf(into), fe.FieldPath()))
			}
		}
		return fmt.Errorf("decoding args: %w", errors.Join(errs...))
	}
	return nil
}

// DecodeNone is for a plugin that takes no args: nil, empty, {} or null
// pass; anything else is an error telling to remove the entry (upstream's
// in-tree plugins ignore such args; a user who wrote them meant something
// that would silently not happen).
func DecodeNone(obj runtime.Object) error {
	var v any
	if err := DecodeStrict(obj, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		if len(v) == 0 {
			return nil
		}
		fields := slices.Sorted(maps.Keys(v))
		return fmt.Errorf("this plugin takes no args: remove its pluginConfig entry (got fields: %s)", strings.Join(fields, ", "))
	default:
		raw, _ := json.Marshal(v)
		return fmt.Errorf("this plugin takes no args: remove its pluginConfig entry (got %s)", raw)
	}
}

// typeHint explains a type error of the strict decoder ("json: cannot
// unmarshal string into Go struct field ...") as the field and the kind of
// value it takes, found by decoding again with encoding/json, whose
// UnmarshalTypeError is exported (the strict decoder's is internal). Empty
// when err is not a type error.
func typeHint(raw []byte, into any) string {
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(raw, reflect.New(reflect.TypeOf(into).Elem()).Interface()); !errors.As(err, &te) {
		return ""
	}
	if te.Field == "" {
		return fmt.Sprintf("args must be %s, not %s: ", describeType(te.Type), te.Value)
	}
	return fmt.Sprintf("%s must be %s, not %s: ", te.Field, describeType(te.Type), te.Value)
}

// describeType says what a YAML author writes for a Go type.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("an integer (%s)", t.Kind())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a non-negative integer (%s)", t.Kind())
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list of " + plural(describeType(t.Elem()))
	case reflect.Map:
		return "a map"
	case reflect.Struct:
		return fmt.Sprintf("an object (%s)", t.Name())
	}
	return t.String()
}

// plural turns describeType's "an integer (int32)" into "integers (int32)".
func plural(desc string) string {
	desc = strings.TrimPrefix(strings.TrimPrefix(desc, "a "), "an ")
	if desc == "true or false" {
		return "true/false values"
	}
	word, rest, _ := strings.Cut(desc, " (")
	if rest != "" {
		rest = " (" + rest
	}
	return word + "s" + rest
}

// validFieldsHint lists the JSON fields of the object at path (the parent
// of the unknown field path names) in t, e.g. "valid fields of
// addedAffinity: preferredDuringSchedulingIgnoredDuringExecution,
// requiredDuringSchedulingIgnoredDuringExecution".
func validFieldsHint(t reflect.Type, path string) string {
	parts := strings.Split(path, ".")
	parent := parts[:len(parts)-1]
	for _, p := range parent {
		name, _, _ := strings.Cut(p, "[") // list indexes: the element type
		t = fieldType(t, name)
		if t == nil {
			return "see the args type's documentation for its fields"
		}
	}
	fields := jsonFields(t)
	where := "valid fields"
	if len(parent) > 0 {
		where += " of " + strings.Join(parent, ".")
	}
	return where + ": " + strings.Join(fields, ", ")
}

// deref strips pointers, slices and arrays down to the element type.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

// fieldType is the type of t's JSON field name (inline structs included),
// nil if there is none.
func fieldType(t reflect.Type, name string) reflect.Type {
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" && strings.Contains(opts, "inline") || f.Anonymous && tag == "" {
			if ft := fieldType(f.Type, name); ft != nil {
				return ft
			}
			continue
		}
		if tag == name {
			return f.Type
		}
	}
	return nil
}

// jsonFields lists t's JSON field names, sorted, leaving out apiVersion and
// kind (valid, but never what a misspelt field meant).
func jsonFields(t reflect.Type) []string {
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type == reflect.TypeFor[metav1.TypeMeta]() || !f.IsExported() {
			continue
		}
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case tag == "" && (strings.Contains(opts, "inline") || f.Anonymous):
			out = append(out, jsonFields(f.Type)...)
		case tag != "":
			out = append(out, tag)
		}
	}
	slices.Sort(out)
	return out
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

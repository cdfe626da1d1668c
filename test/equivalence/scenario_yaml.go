package equivalence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// Several contract corners are in-process only: `nodeSelector: {}` (does not
// Skip), `namespaces: []`, `preferred...: []` (does not Skip) are dropped by
// the API types' `omitempty` tags, so a plain YAML dump would silently turn
// them into nil. The encoder records the JSON paths of every empty non-nil
// map or slice in `emptyNonNil`, and the decoder restores them, so a
// reproducer replays exactly what the generator produced.

// EncodeScenario renders sc as YAML without losing empty-vs-nil distinctions.
func EncodeScenario(sc *Scenario) ([]byte, error) { return encodeLossless(sc) }

// DecodeScenario parses what EncodeScenario wrote.
func DecodeScenario(data []byte) (*Scenario, error) { return decodeLossless[Scenario](data) }

// encodeLossless renders v (a pointer to a struct) as YAML plus the
// emptyNonNil list.
func encodeLossless(v any) ([]byte, error) {
	var paths []string
	walkEmpty(reflect.ValueOf(v).Elem(), "", func(path string) { paths = append(paths, path) })
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m, err := jsonObject(raw)
	if err != nil {
		return nil, err
	}
	if len(paths) > 0 {
		m[emptyNonNilKey] = paths
	}
	return sigsyaml.Marshal(m)
}

const emptyNonNilKey = "emptyNonNil"

// jsonObject decodes a JSON object keeping numbers exact (seeds are uint64).
func jsonObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	return m, d.Decode(&m)
}

// decodeLossless parses what encodeLossless wrote (strictly: unknown fields
// are errors).
func decodeLossless[T any](data []byte) (*T, error) {
	raw, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	m, err := jsonObject(raw)
	if err != nil {
		return nil, err
	}
	var paths []string
	if p, ok := m[emptyNonNilKey].([]any); ok {
		for _, x := range p {
			paths = append(paths, fmt.Sprint(x))
		}
	}
	delete(m, emptyNonNilKey)
	raw, err = json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var v T
	if err := sigsyaml.UnmarshalStrict(raw, &v); err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := setEmpty(reflect.ValueOf(&v).Elem(), p); err != nil {
			return nil, fmt.Errorf("%s %q: %w", emptyNonNilKey, p, err)
		}
	}
	return &v, nil
}

// CloneScenario deep-copies sc through the lossless encoding.
func CloneScenario(sc *Scenario) *Scenario { return cloneLossless(sc) }

// cloneLossless deep-copies v through the lossless encoding, which keeps
// every distinction a plugin can see (nil vs empty included). Scenarios
// and sequences are the harness's own values, so a failure is a bug in
// the encoding: it panics.
func cloneLossless[T any](v *T) *T {
	raw, err := encodeLossless(v)
	if err != nil {
		panic(err)
	}
	out, err := decodeLossless[T](raw)
	if err != nil {
		panic(err)
	}
	return out
}

// jsonName returns the field's JSON name, "" for inlined/embedded fields and
// "-" for skipped ones.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" && opts == "" {
		return "-"
	}
	if f.Anonymous || strings.Contains(opts, "inline") {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func walkEmpty(v reflect.Value, path string, visit func(string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkEmpty(v.Elem(), path, visit)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := jsonName(f)
			switch name {
			case "-":
				continue
			case "":
				walkEmpty(v.Field(i), path, visit)
			default:
				walkEmpty(v.Field(i), join(path, name), visit)
			}
		}
	case reflect.Map:
		if !v.IsNil() && v.Len() == 0 {
			visit(path)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // []byte
		}
		if !v.IsNil() && v.Len() == 0 {
			visit(path)
			return
		}
		for i := range v.Len() {
			walkEmpty(v.Index(i), path+"["+strconv.Itoa(i)+"]", visit)
		}
	}
}

// setEmpty makes the map or slice at path an empty non-nil value.
func setEmpty(v reflect.Value, path string) error {
	for _, seg := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(seg, "[")
		var err error
		if v, err = field(v, name); err != nil {
			return err
		}
		for rest != "" {
			idx, tail, ok := strings.Cut(rest, "]")
			if !ok {
				return fmt.Errorf("bad index in %q", seg)
			}
			i, err := strconv.Atoi(idx)
			if err != nil {
				return err
			}
			v = deref(v)
			if v.Kind() != reflect.Slice || i >= v.Len() {
				return fmt.Errorf("no element %d", i)
			}
			v = v.Index(i)
			rest = strings.TrimPrefix(tail, "[")
		}
	}
	switch v.Kind() {
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	default:
		return fmt.Errorf("not a map or slice: %s", v.Kind())
	}
	return nil
}

func deref(v reflect.Value) reflect.Value {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v
}

// field finds the field with JSON name name in struct v, looking through
// inlined/embedded structs.
func field(v reflect.Value, name string) (reflect.Value, error) {
	v = deref(v)
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("%q: not a struct", name)
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		switch jsonName(f) {
		case name:
			return v.Field(i), nil
		case "":
			if got, err := field(v.Field(i), name); err == nil {
				return got, nil
			}
		}
	}
	return reflect.Value{}, fmt.Errorf("no field %q in %s", name, t)
}

// EncodeSequence renders seq as YAML without losing empty-vs-nil
// distinctions (the same scheme as EncodeScenario).
func EncodeSequence(seq *Sequence) ([]byte, error) { return encodeLossless(seq) }

// DecodeSequence parses what EncodeSequence wrote.
func DecodeSequence(data []byte) (*Sequence, error) { return decodeLossless[Sequence](data) }

// CloneSequence deep-copies seq through the lossless encoding.
func CloneSequence(seq *Sequence) *Sequence { return cloneLossless(seq) }

package equivalence

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// Every row of pkg/plugins.Set() is compared with no list kept here: kinds,
// FuzzHostile's rows and seeds, versionedArgs and the shrinker all read Set.
// What cannot be derived is how to vary a plugin's args, which is knowledge
// of that plugin: a row that takes args needs a field of its Args type in
// Setup, filled by the one-cycle generator, the sequence generator and the
// hostile decoder. This test fails until all of that is there, and for a
// Setup args field that no row reads any more.
func TestSetupCarriesEveryRowsArgs(t *testing.T) {
	const tries = 200
	type fill struct{ generator, sequence, hostile bool }
	filled := map[reflect.Type]*fill{}
	for _, k := range kinds {
		if k.row.Args == nil {
			continue
		}
		typ := reflect.TypeOf(k.row.Args)
		n := 0
		for _, f := range argsFields(&Setup{}) {
			if f.Type() == typ {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s takes %v args: Setup (test/equivalence/generator.go) has %d fields of that type, want 1", k.OursName, typ, n)
			continue
		}
		filled[typ] = &fill{}
	}
	for _, f := range argsFields(&Setup{}) {
		if filled[f.Type()] == nil {
			t.Errorf("Setup has args field of type %v, which no row of pkg/plugins.Set() takes", f.Type())
		}
	}
	note := func(s *Setup, mark func(*fill)) {
		for typ, f := range filled {
			if s.args(typ) != nil {
				mark(f)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range uint64(tries) {
		note(&Generate(1, i).Setup, func(f *fill) { f.generator = true })
		note(&GenerateSequence(1, i, SequenceOptions{Steps: 1, MaxNodes: 2}).Setup, func(f *fill) { f.sequence = true })
		data := make([]byte, 64)
		for j := range data {
			data[j] = byte(r.UintN(256))
		}
		note(&decodeHostile(data).Setup, func(f *fill) { f.hostile = true })
	}
	for typ, f := range filled {
		if !f.generator || !f.sequence || !f.hostile {
			t.Errorf("%v args in %d tries: set by the one-cycle generator %v, the sequence generator %v, the hostile decoder %v; each must vary them",
				typ, tries, f.generator, f.sequence, f.hostile)
		}
	}
}

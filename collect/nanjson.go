package collect

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
)

// Unknown numbers in JSON: one idiom for every collect type.
//
// collect keeps an unknown value as NaN in a plain float64 field, so that
// readers in every package compare, add and test it (math.IsNaN) without
// conversions. encoding/json refuses NaN, so a type with such fields
// (BreakerSample, Evidence) implements MarshalJSON with marshalNullNaN and
// UnmarshalJSON with unmarshalNullNaN. Both derive, by reflection from the
// struct itself, a mirror type whose float64 fields are jsonFloat (NaN and
// infinities written as null, null read as NaN) with the same names and json
// tags, in the same order; everything else (omitempty, "-", key order, HTML
// escaping) stays encoding/json's. A float64 field added to such a struct is
// therefore covered without editing anything else (TestNaNJSONEveryFloatField
// checks every one by reflection), where a hand-written mirror struct had to be
// edited in step. Keys follow the declaration order, which is why Evidence
// declares its numbers last.
//
// The price is one reflect.StructOf per call: BenchmarkBreakerSampleJSON (one
// marshal and one unmarshal) went from about 35 µs to about 130 µs on the
// 2-core machine at load 2, paid once per breaker and poll by watch --json.
//
// The alternative, a named float type for the fields themselves, was not
// chosen: experiments, runner, results and cmd/cbprobe read these fields as
// float64, and each of those uses would need a conversion.

// jsonFloat is a float64 that encodes NaN and infinities as null and decodes
// null as NaN.
type jsonFloat float64

// MarshalJSON writes NaN and infinities as null.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads null as NaN.
func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// nullNaNMirror returns the mirror of struct type t (float64 fields as
// jsonFloat, same names, tags and order) and, for each mirror field, the index
// of the field of t it copies. Unexported fields are left out: encoding/json
// never writes them and reflect.StructOf cannot declare them.
func nullNaNMirror(t reflect.Type) (reflect.Type, []int, error) {
	fields := make([]reflect.StructField, 0, t.NumField())
	index := make([]int, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, nil, fmt.Errorf("null-NaN JSON of %s: embedded field %s is not supported", t, f.Name)
		}
		if !f.IsExported() {
			continue
		}
		typ := f.Type
		if typ == reflect.TypeFor[float64]() {
			typ = reflect.TypeFor[jsonFloat]()
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: typ, Tag: f.Tag})
		index = append(index, i)
	}
	return reflect.StructOf(fields), index, nil
}

// marshalNullNaN encodes the struct v like json.Marshal, except that its
// float64 fields holding NaN or an infinity are written as null.
func marshalNullNaN(v any) ([]byte, error) {
	src := reflect.ValueOf(v)
	mt, index, err := nullNaNMirror(src.Type())
	if err != nil {
		return nil, err
	}
	m := reflect.New(mt).Elem()
	for j, i := range index {
		f := m.Field(j)
		f.Set(src.Field(i).Convert(f.Type()))
	}
	return json.Marshal(m.Interface())
}

// unmarshalNullNaN decodes b into the struct ptr points to, replacing its
// whole value like a decode into a fresh struct, except that its float64
// fields read null, or a missing key, as NaN.
func unmarshalNullNaN(b []byte, ptr any) error {
	dst := reflect.ValueOf(ptr).Elem()
	mt, index, err := nullNaNMirror(dst.Type())
	if err != nil {
		return err
	}
	m := reflect.New(mt).Elem()
	for j := range index {
		if f := m.Field(j); f.Type() == reflect.TypeFor[jsonFloat]() {
			f.SetFloat(math.NaN())
		}
	}
	if err := json.Unmarshal(b, m.Addr().Interface()); err != nil {
		return fmt.Errorf("read %s: %w", dst.Type(), err)
	}
	dst.SetZero()
	for j, i := range index {
		f := dst.Field(i)
		f.Set(m.Field(j).Convert(f.Type()))
	}
	return nil
}

// MarshalJSON writes unknown (NaN) values as null.
func (s BreakerSample) MarshalJSON() ([]byte, error) { return marshalNullNaN(s) }

// UnmarshalJSON reads null and absent values as NaN.
func (s *BreakerSample) UnmarshalJSON(b []byte) error { return unmarshalNullNaN(b, s) }

// MarshalJSON writes unknown (NaN) values as null.
func (e Evidence) MarshalJSON() ([]byte, error) { return marshalNullNaN(e) }

// UnmarshalJSON reads null and absent values as NaN.
func (e *Evidence) UnmarshalJSON(b []byte) error { return unmarshalNullNaN(b, e) }

package collect

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestNaNJSONGolden pins the exact bytes written for BreakerSample and
// Evidence, with known, unknown (NaN), -1 and zero values, against
// testdata/nanjson.golden.json (rewrite with -update after checking).
func TestNaNJSONGolden(t *testing.T) {
	t0 := time.Date(2026, 5, 5, 9, 0, 0, 123000000, time.UTC)
	full := newBreakerSample("pg", "10.0.0.1:8080")
	full.Sent, full.Received, full.ObservedAt, full.State = t0, t0.Add(2*time.Millisecond), t0.Add(time.Millisecond), "OPEN"
	full.FailureRate, full.SlowCallRate, full.FailureRateThreshold, full.SlowCallRateThreshold = 66.666664, -1, 60, 50
	full.Buffered, full.Failed, full.Slow, full.SlowFailed = 20, 12, 0, 0
	full.NotPermitted, full.NotPermittedTotal, full.CallsSuccessful, full.CallsFailed, full.CallsIgnored = 3, 7, 100, 40, 1
	full.ProcessStart = 1.7779e9
	unknown := newBreakerSample("pg <&>", "")
	unknown.State = "CLOSED"
	ev := newEvidence()
	ev.ExceededEvents = []string{"SLOW_CALL_RATE_EXCEEDED"}
	ev.SampleTime = t0
	ev.FailureRate, ev.SlowCallRate, ev.ThresholdSource = 40, 60, "actuator"
	ev.Buffered, ev.Failed, ev.TimeoutShare, ev.TimeoutSource = 20, 8, 0.25, "error-messages"
	ev.Missing, ev.Notes = []string{"m"}, []string{"n"}
	got, err := json.MarshalIndent(map[string]any{
		"samples":  []BreakerSample{full, unknown, {}},
		"evidence": []any{ev, Evidence{}, newEvidence()},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "nanjson.golden.json", got)
}

// TestBreakerSampleJSONRoundTrip reads back what MarshalJSON writes: null as
// NaN, numbers and -1 as themselves, absent values as NaN.
func TestBreakerSampleJSONRoundTrip(t *testing.T) {
	in := newBreakerSample("pg", "i")
	in.State, in.FailureRate, in.SlowCallRate, in.Buffered = "OPEN", -1, 55.5, 0
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out BreakerSample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Name != "pg" || out.Instance != "i" || out.State != "OPEN" || out.FailureRate != -1 || out.SlowCallRate != 55.5 || out.Buffered != 0 {
		t.Errorf("round trip changed known values: %+v", out)
	}
	if !math.IsNaN(out.Failed) || !math.IsNaN(out.ProcessStart) {
		t.Errorf("round trip: null values not read as NaN: %+v", out)
	}
	var partial BreakerSample
	if err := json.Unmarshal([]byte(`{"breaker":"x","failureRate":5}`), &partial); err != nil {
		t.Fatal(err)
	}
	if partial.FailureRate != 5 || !math.IsNaN(partial.SlowCallRate) || !math.IsNaN(partial.CallsIgnored) {
		t.Errorf("absent values not read as NaN: %+v", partial)
	}
}

// BenchmarkBreakerSampleJSON measures one marshal and one unmarshal of a
// sample with known and unknown values (watch --json writes one per breaker
// and poll).
func BenchmarkBreakerSampleJSON(b *testing.B) {
	s := newBreakerSample("pg", "i")
	s.State, s.FailureRate, s.SlowCallRate, s.Buffered = "OPEN", 60, -1, 20
	for b.Loop() {
		data, err := json.Marshal(s)
		if err != nil {
			b.Fatal(err)
		}
		var out BreakerSample
		if err := json.Unmarshal(data, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNaNJSONEveryFloatField finds every float64 field of the types written
// with the null-NaN idiom by reflection, so a field added later is checked
// too: each is written under its json key, as null when NaN and as its value
// otherwise, and read back (null as NaN).
func TestNaNJSONEveryFloatField(t *testing.T) {
	t.Run("BreakerSample", func(t *testing.T) { checkEveryFloatField[BreakerSample](t) })
	t.Run("Evidence", func(t *testing.T) { checkEveryFloatField[Evidence](t) })
}

func checkEveryFloatField[T any](t *testing.T) {
	typ := reflect.TypeFor[T]()
	var floats []int
	for i := range typ.NumField() {
		if typ.Field(i).Type == reflect.TypeFor[float64]() {
			floats = append(floats, i)
		}
	}
	if len(floats) == 0 {
		t.Fatalf("%s has no float64 field", typ)
	}
	key := func(i int) string {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			return f.Name
		}
		return name
	}
	for _, nan := range floats {
		t.Run(typ.Field(nan).Name, func(t *testing.T) {
			var in T
			v := reflect.ValueOf(&in).Elem()
			for n, i := range floats {
				v.Field(i).SetFloat(float64(n) + 0.5)
			}
			v.Field(nan).SetFloat(math.NaN())
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(b, &keys); err != nil {
				t.Fatal(err)
			}
			for n, i := range floats {
				want := fmt.Sprint(float64(n) + 0.5)
				if i == nan {
					want = "null"
				}
				if got, ok := keys[key(i)]; !ok || string(got) != want {
					t.Errorf("key %q = %s (present %v), want %s in %s", key(i), got, ok, want, b)
				}
			}
			var out T
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			o := reflect.ValueOf(out)
			for n, i := range floats {
				got := o.Field(i).Float()
				if i == nan && !math.IsNaN(got) || i != nan && got != float64(n)+0.5 {
					t.Errorf("read back %s = %v from %s", typ.Field(i).Name, got, b)
				}
			}
		})
	}
}

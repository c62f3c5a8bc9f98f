package behavior

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecideDeterministic(t *testing.T) {
	b := DefaultBehavior()
	b.HangRate, b.ResetRate = 0.05, 0.05
	run := func(seed uint64) []Decision {
		r := rand.New(rand.NewPCG(seed, seed))
		out := make([]Decision, 500)
		for i := range out {
			out[i] = b.Decide(r)
		}
		return out
	}
	a, again, other := run(42), run(42), run(43)
	if diff := cmp.Diff(a, again); diff != "" {
		t.Fatalf("same seed gave different decisions:\n%s", diff)
	}
	if cmp.Equal(a, other) {
		t.Fatal("different seeds gave identical decisions")
	}
}

func TestDecideDefaultMix(t *testing.T) {
	const n = 20000
	b := DefaultBehavior()
	r := rand.New(rand.NewPCG(7, 7))
	errs := 0
	for range n {
		d := b.Decide(r)
		switch d.Outcome {
		case OutcomeError:
			errs++
			if d.Delay != 0 || d.Injected != 0 {
				t.Fatalf("immediate error with delay %v", d.Delay)
			}
		case OutcomeSuccess:
			if d.Delay < 100*ms || d.Delay > 500*ms || d.Injected != d.Delay {
				t.Fatalf("success delay %v outside 100ms-500ms", d.Delay)
			}
		default:
			t.Fatalf("unexpected outcome %v", d.Outcome)
		}
	}
	// Errors ~ Binomial(20000, 0.4): sd = 69.3, 4 sigma = 277.
	if ok, m, tol := binomialOK(errs, n, 0.4); !ok {
		t.Errorf("errors %d of %d, want %.0f ± %.0f", errs, n, m, tol)
	}
}

func TestDecideFaultsAndTiming(t *testing.T) {
	const n = 20000
	b := DefaultBehavior()
	b.ErrorRate, b.HangRate, b.ResetRate = 0.3, 0.1, 0.2
	b.HangMax = 2 * time.Second
	b.ErrorTiming = AfterLatency
	r := rand.New(rand.NewPCG(8, 8))
	counts := map[Outcome]int{}
	for range n {
		d := b.Decide(r)
		counts[d.Outcome]++
		switch d.Outcome {
		case OutcomeHang:
			if d.Delay != 2*time.Second {
				t.Fatalf("hang delay %v, want HangMax 2s", d.Delay)
			}
		default:
			if d.Delay < 100*ms || d.Delay > 500*ms {
				t.Fatalf("%v after latency with delay %v", d.Outcome, d.Delay)
			}
		}
	}
	m := b.Mix()
	want := map[Outcome]float64{OutcomeSuccess: m.Success, OutcomeError: 0.3, OutcomeHang: 0.1, OutcomeReset: 0.2}
	for o, p := range want {
		// Each count ~ Binomial(n, p); 4 sigma.
		if ok, mean, tol := binomialOK(counts[o], n, p); !ok {
			t.Errorf("%v: %d, want %.0f ± %.0f", o, counts[o], mean, tol)
		}
	}
}

func TestDecideSlowMode(t *testing.T) {
	b := DefaultBehavior()
	b.Slow = true
	r := rand.New(rand.NewPCG(9, 9))
	for range 5000 {
		d := b.Decide(r)
		if d.Outcome != OutcomeSuccess {
			t.Fatalf("slow mode gave %v", d.Outcome)
		}
		if d.Delay < 150*ms || d.Delay > 300*ms {
			t.Fatalf("slow mode delay %v outside 150ms-300ms", d.Delay)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Behavior)
		field string
	}{
		{name: "default ok", edit: func(*Behavior) {}},
		{name: "error rate above 1", edit: func(b *Behavior) { b.ErrorRate = 1.5 }, field: "errorRate"},
		{name: "negative hang rate", edit: func(b *Behavior) { b.HangRate = -0.1 }, field: "hangRate"},
		{name: "missing latency", edit: func(b *Behavior) { b.Latency = nil }, field: "latency"},
		{name: "bad slow latency", edit: func(b *Behavior) { b.SlowLatency = Uniform{Min: 2, Max: 1} }, field: "slowLatency"},
		{name: "bad timing", edit: func(b *Behavior) { b.ErrorTiming = 7 }, field: "errorTiming"},
		{name: "hang without max", edit: func(b *Behavior) { b.HangRate, b.HangMax = 0.1, 0 }, field: "hangMax"},
		{name: "rates over 1", edit: func(b *Behavior) { b.HangRate, b.ResetRate = 0.5, 0.3 }, field: "errorRate"},
		{name: "faults over 1", edit: func(b *Behavior) { b.HangRate, b.ResetRate = 0.6, 0.6 }, field: "resetRate"},
		{name: "slow ignores error share", edit: func(b *Behavior) { b.Slow, b.HangRate, b.ResetRate = true, 0.5, 0.3 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := DefaultBehavior()
			tc.edit(&b)
			err := b.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate = %v, want a FieldError on %q", err, tc.field)
			}
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	b := DefaultBehavior()
	b.Latency = LogNormal{Median: 200 * ms, P99: time.Second}
	b.ErrorTiming = AfterLatency
	b.HangRate, b.HangMax, b.ResetRate = 0.01, 5*time.Second, 0.02
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"errorRate":0.4,"latency":"lognormal:median=200ms,p99=1s","errorTiming":"after-latency","slow":false,"slowLatency":"150ms-300ms","hangRate":0.01,"hangMax":"5s","resetRate":0.02}`
	if string(data) != want {
		t.Fatalf("Marshal =\n%s\nwant\n%s", data, want)
	}
	got := DefaultBehavior()
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b, got); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
}

func TestUnmarshalJSON(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   func(*Behavior)
		field  string
		errHas string
	}{
		{name: "partial keeps the rest", in: `{"errorRate":0.1}`, want: func(b *Behavior) { b.ErrorRate = 0.1 }},
		{name: "slow on", in: `{"slow":true,"slowLatency":"200ms"}`, want: func(b *Behavior) { b.Slow, b.SlowLatency = true, Fixed{D: 200 * ms} }},
		{name: "empty object", in: `{}`, want: func(*Behavior) {}},
		{name: "unknown field", in: `{"errorrate":0.1}`, field: "errorrate", errHas: "unknown field"},
		{name: "rate as string", in: `{"errorRate":"0.1"}`, field: "errorRate", errHas: "want a number"},
		{name: "rate out of range", in: `{"errorRate":2}`, field: "errorRate", errHas: "probability"},
		{name: "null", in: `{"latency":null}`, field: "latency", errHas: "null"},
		{name: "latency number", in: `{"latency":200}`, field: "latency", errHas: "want a string"},
		{name: "latency bad", in: `{"latency":"fast"}`, field: "latency", errHas: "bad duration"},
		{name: "timing bad", in: `{"errorTiming":"later"}`, field: "errorTiming", errHas: "immediate or after-latency"},
		{name: "hangMax negative", in: `{"hangMax":"-1s"}`, field: "hangMax", errHas: "negative"},
		{name: "slow not bool", in: `{"slow":"yes"}`, field: "slow", errHas: "true or false"},
		{name: "array", in: `[1]`, field: "", errHas: "JSON object"},
		{name: "truncated", in: `{"errorRate":`, field: "", errHas: "malformed"},
		{name: "sum over one", in: `{"errorRate":0.9,"resetRate":0.2}`, field: "errorRate", errHas: "exceeds 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DefaultBehavior()
			err := got.UnmarshalJSON([]byte(tc.in))
			if tc.errHas != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error = %v, want FieldError on %q containing %q", err, tc.field, tc.errHas)
				}
				if diff := cmp.Diff(DefaultBehavior(), got); diff != "" {
					t.Fatalf("receiver changed on error:\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultBehavior()
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	b := DefaultBehavior()
	if got, want := b.String(), "errors 40% (immediate), latency 100ms-500ms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	b.Slow, b.HangRate, b.ResetRate = true, 0.015, 0.1
	if got, want := b.String(), "slow mode: latency 150ms-300ms, no errors, hangs 1.5% (max 30s), resets 10%"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, s := range []string{"immediate", "after-latency"} {
		v, err := ParseErrorTiming(s)
		if err != nil || v.String() != s {
			t.Errorf("ParseErrorTiming(%q) = %v, %v", s, v, err)
		}
	}
}

package conformance

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/internal/testref"
)

// minimalVector is a valid one-step vector; cases below break one thing each.
const minimalVector = `{
  "name": "tiny",
  "description": "one call",
  "config": {"sliding-window-size": 2, "wait-duration-in-open-state": "10s"},
  "steps": [
    {"at_ms": 0, "op": "call", "outcome": "failure", "duration_ms": 5, "expect": {"permitted": true, "state": "CLOSED", "events": [{"type": "ERROR"}], "metrics": {"failure_rate": -1.0, "slow_call_rate": -1.0, "buffered_calls": 1, "failed_calls": 1, "successful_calls": 0, "slow_calls": 0, "slow_successful_calls": 0, "slow_failed_calls": 0, "not_permitted_calls": 0}}}
  ]
}
`

func TestDecodeValid(t *testing.T) {
	v, err := Decode("tiny.json", []byte(minimalVector))
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "tiny" || len(v.Steps) != 1 || v.Steps[0].Line != 6 {
		t.Fatalf("decoded %+v", v)
	}
	cfg, err := v.Config.BreakerConfig()
	if err != nil || cfg.SlidingWindowSize != 2 || cfg.WaitDurationInOpenState.Seconds() != 10 || cfg.MinimumNumberOfCalls != 100 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	r, err := Run(v)
	if err != nil || !r.OK() {
		t.Fatalf("run: %v %+v", err, r)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string // substrings of the error
	}{
		{"unknown op", func(s string) string { return strings.Replace(s, `"op": "call"`, `"op": "cal"`, 1) }, []string{"tiny.json:6", "step 1", "op", `unknown op "cal"`}},
		{"unknown state", func(s string) string { return strings.Replace(s, `"state": "CLOSED"`, `"state": "SHUT"`, 1) }, []string{"tiny.json:6", "step 1", "expect.state", `"SHUT"`}},
		{"unknown event type", func(s string) string { return strings.Replace(s, `"type": "ERROR"`, `"type": "OOPS"`, 1) }, []string{"step 1", "expect.events[0].type", "OOPS"}},
		{"unknown step field", func(s string) string { return strings.Replace(s, `"op": "call"`, `"op": "call", "speed": 2`, 1) }, []string{"tiny.json:6", "step 1", `unknown field "speed"`}},
		{"unknown config key", func(s string) string {
			return strings.Replace(s, `"sliding-window-size": 2`, `"sliding-window-sise": 2`, 1)
		}, []string{"tiny.json:4", "config", `unknown field "sliding-window-sise"`}},
		{"unknown top-level key", func(s string) string { return strings.Replace(s, `"description"`, `"descr"`, 1) }, []string{"tiny.json:3", "descr", "unknown field"}},
		{"wrong type", func(s string) string { return strings.Replace(s, `"buffered_calls": 1`, `"buffered_calls": "1"`, 1) }, []string{"tiny.json:6", "step 1", "buffered_calls", "string"}},
		{"missing metric", func(s string) string { return strings.Replace(s, `"slow_calls": 0, `, ``, 1) }, []string{"step 1", "expect.metrics.slow_calls", "missing"}},
		{"missing duration", func(s string) string { return strings.Replace(s, `"duration_ms": 5, `, ``, 1) }, []string{"step 1", "duration_ms", "missing"}},
		{"bad duration", func(s string) string { return strings.Replace(s, `"10s"`, `"10 minutes"`, 1) }, []string{"tiny.json:4", "config", "10 minutes"}},
		{"invalid config value", func(s string) string {
			return strings.Replace(s, `"sliding-window-size": 2`, `"sliding-window-size": 0`, 1)
		}, []string{"config", "slidingWindowSize"}},
		{"permitted null for call", func(s string) string { return strings.Replace(s, `"permitted": true`, `"permitted": null`, 1) }, []string{"expect.permitted", "true or false"}},
		{"record of an unknown id", func(s string) string {
			return strings.Replace(s, `"op": "call", "outcome": "failure", "duration_ms": 5`, `"op": "record", "id": "x9", "outcome": "failure", "duration_ms": 5`, 1)
		}, []string{"step 1", "id", `"x9" was not acquired`}},
		{"syntax error", func(s string) string { return strings.Replace(s, `"at_ms": 0,`, `"at_ms": 0,,`, 1) }, []string{"tiny.json:6", "invalid character"}},
		{"truncated", func(s string) string { return s[:len(s)/2] }, []string{"tiny.json", "unexpected end"}},
		{"trailing data", func(s string) string { return s + "{}" }, []string{"unexpected data after"}},
		{"not an object", func(string) string { return "[]" }, []string{"tiny.json:1"}},
		{"bad transition name", func(s string) string {
			return strings.Replace(s, `[{"type": "ERROR"}]`, `[{"type": "STATE_TRANSITION", "transition": "CLOSED_TO_AJAR"}]`, 1)
		}, []string{"expect.events[0].transition", "CLOSED_TO_AJAR"}},
		{"time goes back", func(s string) string {
			step := s[strings.Index(s, `    {"at_ms"`) : strings.LastIndex(s, "}\n  ]")+1]
			second := strings.Replace(step, `"at_ms": 0`, `"at_ms": -1`, 1)
			return strings.Replace(s, step, step+",\n"+second, 1)
		}, []string{"tiny.json:7", "step 2", "at_ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode("tiny.json", []byte(tc.edit(minimalVector)))
			if err == nil {
				t.Fatal("no error")
			}
			var ve *Error
			if !errors.As(err, &ve) || ve.ExitCode() != 2 {
				t.Errorf("error %T is not a *conformance.Error with exit code 2", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestRunReportsMismatches edits the expectation of one step and checks that the
// runner names the file, line, step, field, want and got.
func TestRunReportsMismatches(t *testing.T) {
	bad := strings.Replace(minimalVector, `"state": "CLOSED"`, `"state": "OPEN"`, 1)
	bad = strings.Replace(bad, `"failed_calls": 1`, `"failed_calls": 2`, 1)
	bad = strings.Replace(bad, `"failure_rate": -1.0`, `"failure_rate": -0.99995`, 1) // within 1e-4: not a mismatch
	v, err := Decode("tiny.json", []byte(bad))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(v)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(r.Mismatches))
	for i, m := range r.Mismatches {
		got[i] = m.String()
	}
	want := []string{
		"tiny.json:6: step 1 (call failure 5ms): state: want OPEN, got CLOSED",
		"tiny.json:6: step 1 (call failure 5ms): metrics.failed_calls: want 2, got 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("mismatches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var b strings.Builder
	if err := WriteExplain(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"STEP", "call failure 5ms", "state: want OPEN, got CLOSED", "1 steps, 2 mismatches"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("explain output lacks %q:\n%s", w, b.String())
		}
	}
}

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.json", "a.json", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(minimalVector), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Expand([]string{dir, filepath.Join(dir, "notes.txt")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "notes.txt")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := Expand([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing path must be an error")
	}
	if _, err := Expand([]string{t.TempDir()}); err == nil {
		t.Error("an empty folder must be an error")
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadFile error %v", err)
	}
}

func FuzzDecodeVector(f *testing.F) {
	f.Add([]byte(minimalVector))
	f.Add([]byte(`{"name":"x","config":{},"steps":[]}`))
	f.Add([]byte(`{"name":"x","config":{"slow-call-duration-threshold":100},"steps":[{"at_ms":1,"op":"acquire","id":"a","expect":{"permitted":false,"state":"OPEN","events":[],"metrics":{}}}]}`))
	if data, err := os.ReadFile(filepath.Join(testref.ConformanceDir(f), "ignored-stale-acquire-adds-half-open-permit.json")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode("fuzz.json", data)
		if err != nil {
			var ve *Error
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *conformance.Error: %v", err, err)
			}
			return
		}
		// Keep each input fast: timers with 1 ms waits may chain OPEN -> HALF_OPEN ->
		// OPEN once per millisecond, as the library would, so bound the virtual time.
		if len(v.Steps) > 200 || v.Steps[len(v.Steps)-1].AtMS > 10_000 {
			return
		}
		if _, err := Run(v); err != nil {
			t.Fatalf("a decoded vector must run: %v", err)
		}
	})
}

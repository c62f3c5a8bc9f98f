package attack

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParsePhases(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Phase
	}{
		{"field report plan", "15/s:5s,0/s:15s,5/s:8s", []Phase{
			{Name: "phase1", Rate: 15, Duration: 5 * time.Second},
			{Name: "phase2", Rate: 0, Duration: 15 * time.Second},
			{Name: "phase3", Rate: 5, Duration: 8 * time.Second},
		}},
		{"per minute", "900/m:10s", []Phase{{Name: "phase1", Rate: 15, Duration: 10 * time.Second}}},
		{"names and spaces", " burst=15/s:5s , pause = 0/s:1m30s,tail=2.5/s:500ms", []Phase{
			{Name: "burst", Rate: 15, Duration: 5 * time.Second},
			{Name: "pause", Rate: 0, Duration: 90 * time.Second},
			{Name: "tail", Rate: 2.5, Duration: 500 * time.Millisecond},
		}},
		{"mixed named and default", "a=1/s:1s,2/s:1s", []Phase{
			{Name: "a", Rate: 1, Duration: time.Second},
			{Name: "phase2", Rate: 2, Duration: time.Second},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePhases(tc.in)
			if err != nil {
				t.Fatalf("ParsePhases(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePhases(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParsePhasesErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "phases: empty phase list (want e.g. 15/s:5s,0/s:15s,5/s:8s)"},
		{"unknown unit", "15/s:5s,0/x:15s", `phase 2 "0/x:15s": unknown rate unit x (want s or m)`},
		{"no unit", "15:5s", `phase 1 "15:5s": rate "15" has no unit (want e.g. 15/s or 900/m)`},
		{"empty unit", "15/:5s", `phase 1 "15/:5s": missing rate unit after / (want s or m)`},
		{"no duration", "15/s", `phase 1 "15/s": missing ":duration" (want rate/unit:duration, e.g. 15/s:5s)`},
		{"empty duration", "15/s:", `phase 1 "15/s:": missing duration after :`},
		{"bad duration", "15/s:5x", `phase 1 "15/s:5x": bad duration "5x" (want e.g. 5s, 1m30s)`},
		{"zero duration", "15/s:0s", `phase 1 "15/s:0s": duration 0s must be greater than zero`},
		{"negative duration", "15/s:-1s", `phase 1 "15/s:-1s": duration -1s must be greater than zero`},
		{"negative rate", "1/s:1s,-1/s:1s", `phase 2 "-1/s:1s": negative rate -1`},
		{"not a number", "abc/s:1s", `phase 1 "abc/s:1s": bad rate "abc": not a number`},
		{"NaN", "NaN/s:1s", `phase 1 "NaN/s:1s": bad rate "NaN": not a number`},
		{"infinite", "Inf/s:1s", `phase 1 "Inf/s:1s": bad rate "Inf": not a number`},
		{"too fast", "2000000/s:1s", `phase 1 "2000000/s:1s": rate 2e+06/s above the maximum 1000000/s`},
		{"empty element", "1/s:1s,,2/s:1s", `phase 2 "": empty phase (want rate/unit:duration, e.g. 15/s:5s)`},
		{"trailing comma", "1/s:1s,", `phase 2 "": empty phase (want rate/unit:duration, e.g. 15/s:5s)`},
		{"empty name", "=1/s:1s", `phase 1 "=1/s:1s": empty name before =`},
		{"bad name", "a b=1/s:1s", `phase 1 "a b=1/s:1s": name "a b": only letters, digits, '-', '_' and '.' are allowed`},
		{"duplicate name", "x=1/s:1s,x=2/s:1s", `phase 2 "x=2/s:1s": name x already used by phase 1`},
		{"default name taken", "phase2=1/s:1s,1/s:1s", `phase 2 "1/s:1s": name phase2 already used by phase 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePhases(tc.in)
			if err == nil {
				t.Fatalf("ParsePhases(%q) = nil error, want %q", tc.in, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("ParsePhases(%q) error\n got %q\nwant %q", tc.in, err.Error(), tc.want)
			}
			var pe *PhaseError
			if !errors.As(err, &pe) || pe.ExitCode() != 2 {
				t.Errorf("error %T is not a *PhaseError with exit code 2", err)
			}
		})
	}
}

func TestPhasePlanned(t *testing.T) {
	tests := []struct {
		name string
		p    Phase
		want int
	}{
		{"exact", Phase{Rate: 200, Duration: 2 * time.Second}, 400},
		{"field burst", Phase{Rate: 15, Duration: 5 * time.Second}, 75},
		{"pause", Phase{Rate: 0, Duration: 15 * time.Second}, 0},
		// slots at 0 s and 2 s are inside 3 s; 4 s is not
		{"fractional", Phase{Rate: 0.5, Duration: 3 * time.Second}, 2},
		{"per minute", Phase{Rate: 900.0 / 60, Duration: 10 * time.Second}, 150},
		{"one third", Phase{Rate: 3, Duration: time.Second / 3}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Planned(); got != tc.want {
				t.Errorf("%v.Planned() = %d, want %d", tc.p, got, tc.want)
			}
		})
	}
}

func TestFormatPhasesRoundTrip(t *testing.T) {
	in := "burst=15/s:5s,0/s:15s,tail=900/m:10s,1/m:1m0.5s"
	p, err := ParsePhases(in)
	if err != nil {
		t.Fatal(err)
	}
	s := FormatPhases(p)
	if want := "burst=15/s:5s,phase2=0/s:15s,tail=15/s:10s,phase4=0.016666666666666666/s:1m0.5s"; s != want {
		t.Errorf("FormatPhases = %q, want %q", s, want)
	}
	back, err := ParsePhases(s)
	if err != nil {
		t.Fatalf("ParsePhases(FormatPhases): %v", err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Errorf("round trip mismatch (-first +second):\n%s", diff)
	}
}

func FuzzParsePhases(f *testing.F) {
	for _, s := range []string{"15/s:5s,0/s:15s,5/s:8s", "burst=900/m:10s", "0/x:1s", "a=1/s:1s,a=2/s:1s", "1e400/s:1s", ",", "=:/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePhases(s)
		if err != nil {
			var pe *PhaseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *PhaseError", err)
			}
			return
		}
		for _, ph := range p {
			if ph.Rate < 0 || ph.Rate > MaxRate || ph.Duration <= 0 || ph.Name == "" {
				t.Fatalf("ParsePhases(%q) accepted bad phase %+v", s, ph)
			}
			if ph.Planned() < 0 {
				t.Fatalf("negative Planned for %+v", ph)
			}
		}
		back, err := ParsePhases(FormatPhases(p))
		if err != nil {
			t.Fatalf("ParsePhases(FormatPhases(%q)) = %v", s, err)
		}
		if !cmp.Equal(p, back) {
			t.Fatalf("round trip of %q changed %v into %v", s, p, back)
		}
	})
}

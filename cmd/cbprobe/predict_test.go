package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runPredictCLI runs `cbprobe predict args...` and returns stdout, stderr and the exit code.
func runPredictCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx := context.Background()
	root := newRootCommand(&out, &errb)
	root.SetArgs(append([]string{"predict", "--color", "never"}, args...))
	err := root.ExecuteContext(ctx)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), exitCode(ctx, err)
}

func TestPredictJSONReference(t *testing.T) {
	cases := []struct {
		name   string
		retry  string
		lo, hi float64
	}{
		{"retry 3", "3", 13, 15},
		{"retry 1", "1", 20, 22},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runPredictCLI(t, "--sequential", "40", "--retry", tc.retry, "--runs", "2000", "--seed", "1", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var p struct {
				FirstOpenRequest     struct{ P5, P50, P95, Mean float64 }
				FirstRejectedRequest struct{ P5, P50, P95, Mean float64 }
				OpenCauses           map[string]float64
				AttemptsPerRequest   struct{ Mean, ClosedForm float64 }
				HalfOpenPass         float64 `json:"halfOpenPassProbability"`
				HalfOpenMeaning      string
				Phases               []struct {
					Name                        string
					RejectedShare, SuccessShare float64
				}
			}
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatalf("decode: %v\n%s", err, out)
			}
			if m := p.FirstRejectedRequest.P50; m < tc.lo || m > tc.hi {
				t.Errorf("firstRejectedRequest.p50 = %v, want in [%v, %v]", m, tc.lo, tc.hi)
			}
			if s := p.OpenCauses["slow-call-rate"]; s <= 0.8 {
				t.Errorf("openCauses.slow-call-rate = %v, want > 0.8", s)
			}
			if p.HalfOpenPass != 0 || !strings.Contains(p.HalfOpenMeaning, "cannot close") {
				t.Errorf("half-open %v %q", p.HalfOpenPass, p.HalfOpenMeaning)
			}
			if len(p.Phases) != 1 || p.Phases[0].RejectedShare <= 0 {
				t.Errorf("phases %+v", p.Phases)
			}
		})
	}
}

func TestPredictTerminal(t *testing.T) {
	out, stderr, code := runPredictCLI(t, "--phases", "15/s:5s,0/s:15s,5/s:8s", "--window-type", "TIME_BASED", "--window-size", "10", "--runs", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"first rejected", "CLOSED_TO_OPEN", "phase3", "cannot close", "TIME_BASED window of 10s", "median run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("output holds ANSI codes")
	}
}

func TestPredictBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "application.yml")
	if err := os.WriteFile(bad, []byte("resilience4j:\n  circuitbreaker:\n    configs:\n      default:\n        failure-rate-threshold: 150\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"phases", []string{"--phases", "15/x:5s"}, "--phases"},
		{"latency", []string{"--latency", "fast"}, "--latency"},
		{"db latency", []string{"--db-latency", "1ms-"}, "--db-latency"},
		{"error rate", []string{"--error-rate", "1.5"}, "--error-rate"},
		{"hang rate", []string{"--hang-rate", "-0.1"}, "--hang-rate"},
		{"error timing", []string{"--error-timing", "later"}, "--error-timing"},
		{"timelimiter", []string{"--timelimiter", "soon"}, "--timelimiter"},
		{"retry", []string{"--retry", "0"}, "--retry"},
		{"window type", []string{"--window-type", "SIZE_BASED"}, "--window-type"},
		{"window size", []string{"--window-size", "0"}, "--window-size"},
		{"runs", []string{"--runs", "0"}, "--runs"},
		{"sequential", []string{"--sequential", "0"}, "--sequential"},
		{"config key", []string{"--config", bad}, "failure-rate-threshold"},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.yml")}, "--config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runPredictCLI(t, append(tc.args, "--runs", "1")...)
			if tc.name == "runs" {
				_, stderr, code = runPredictCLI(t, tc.args...)
			}
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("error %q does not name %s", stderr, tc.want)
			}
		})
	}
}

package springconf

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/breaker"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

func TestLintGolden(t *testing.T) {
	slowMode := &breaker.CallOutcomeProbabilities{SlowSuccess: 0.6, FastFailure: 0.4}
	tests := []struct {
		name, file string
		opt        LintOptions
	}{
		{"field-report-pg-simulator", "field-report-pg-simulator.yml", LintOptions{BreakerName: DefaultBreakerName}},
		{"field-report-gateway", "field-report.yml", LintOptions{BreakerName: DefaultBreakerName, AssumeRetry: true, Gateway: slowMode, Live: &breaker.Config{FailureRateThreshold: 50, SlowCallRateThreshold: 100}}},
		{"brackets", "brackets.yml", LintOptions{}},
		{"traps", "traps.yml", LintOptions{Rate: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for _, f := range Lint(mustLoad(t, tc.file), tc.opt) {
				b.WriteString(f.String() + "\n")
			}
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("findings differ from %s:\n got:\n%s\nwant:\n%s", path, b.String(), want)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/springconf"
	"github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite golden files under testdata/")

// lintFieldReport are the flags under which the field report's file has both
// error and warning findings with lines.
func lintFieldReport() []string {
	return []string{"lint", "testdata/lint/field-report-with-instance.yml", "--name", springconf.DefaultBreakerName,
		"--error-rate", "0.4", "--latency", "100ms-500ms"}
}

func TestLintFormats(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
		check  func(t *testing.T, stdout string)
	}{
		{name: "text", code: exitExpectation, stdout: []string{"testdata/lint/field-report-with-instance.yml:", " error [half-open-trial-cannot-pass] ", "  fix: "}},
		{name: "json has camelCase keys", args: []string{"--format", "json"}, code: exitExpectation, check: func(t *testing.T, stdout string) {
			var raw []map[string]any
			if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
				t.Fatalf("not a JSON array: %v\n%s", err, stdout)
			}
			if len(raw) == 0 {
				t.Fatal("no findings")
			}
			for _, f := range raw {
				for _, k := range []string{"id", "severity", "file", "key", "message"} {
					if _, ok := f[k]; !ok {
						t.Errorf("finding lacks %q: %v", k, f)
					}
				}
				for k := range f {
					if k != strings.ToLower(k[:1])+k[1:] || strings.ContainsAny(k, "_-") {
						t.Errorf("key %q is not camelCase", k)
					}
				}
				if f["file"] != "testdata/lint/field-report-with-instance.yml" {
					t.Errorf("file %v, want the path as given", f["file"])
				}
			}
		}},
		{name: "json alias is deprecated, same output", args: []string{"--json"}, code: exitExpectation,
			stderr: []string{"--json is deprecated: use --format json"}, check: func(t *testing.T, stdout string) {
				want, _, _ := runWatchCLI(t, append(lintFieldReport(), "--format", "json")...)
				if diff := cmp.Diff(want, stdout); diff != "" {
					t.Errorf("--json differs from --format json (-want +got):\n%s", diff)
				}
			}},
		{name: "sarif", args: []string{"--format", "sarif"}, code: exitExpectation, check: func(t *testing.T, stdout string) {
			checkSARIF(t, []byte(stdout))
		}},
		{name: "unknown format", args: []string{"--format", "xml"}, code: exitUsage, stderr: []string{`--format "xml": want one of text, json, sarif`}},
		{name: "json alias with another format", args: []string{"--json", "--format", "sarif"}, code: exitUsage, stderr: []string{"cannot go with --format sarif"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runWatchCLI(t, append(lintFieldReport(), tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.check != nil {
				tc.check(t, stdout)
			}
		})
	}
}

// checkSARIF checks the SARIF 2.1.0 properties lint's log must have: version,
// a run with tool.driver.name and rules (each with an id), and results whose
// ruleId and ruleIndex name a rule, with a level SARIF defines, a message text
// and a physical location with an artifact URI (and a start line >= 1 when a
// region is given).
func checkSARIF(t *testing.T, data []byte) {
	t.Helper()
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex *int   `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("version %q schema %q with %d runs, want 2.1.0 and one run", log.Version, log.Schema, len(log.Runs))
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "cbprobe" || len(run.Tool.Driver.Rules) == 0 {
		t.Fatalf("driver %q with %d rules, want cbprobe with rules", run.Tool.Driver.Name, len(run.Tool.Driver.Rules))
	}
	lines := 0
	for i, r := range run.Results {
		if r.RuleIndex == nil || *r.RuleIndex < 0 || *r.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[*r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %d: ruleId %q and ruleIndex %v do not name the same rule", i, r.RuleID, r.RuleIndex)
		}
		switch r.Level {
		case "error", "warning", "note", "none":
		default:
			t.Errorf("result %d: level %q is not a SARIF level", i, r.Level)
		}
		if r.Message.Text == "" || len(r.Locations) == 0 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
			t.Errorf("result %d: no message text or no location with an artifact URI", i)
		}
		for _, l := range r.Locations {
			if reg := l.PhysicalLocation.Region; reg != nil {
				if reg.StartLine < 1 {
					t.Errorf("result %d: startLine %d", i, reg.StartLine)
				}
				lines++
			}
		}
	}
	if len(run.Results) == 0 || lines == 0 {
		t.Errorf("%d results, %d with a line: want findings located in the file", len(run.Results), lines)
	}
}

// TestLintSARIFGolden pins the SARIF log of the field report's file, with the
// tool's version (which differs per build) left out
// (go test ./cmd/cbprobe -run TestLintSARIFGolden -update rewrites it).
func TestLintSARIFGolden(t *testing.T) {
	stdout, stderr, code := runWatchCLI(t, append(lintFieldReport(), "--format", "sarif")...)
	if code != exitExpectation {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	var log sarifLog
	if err := json.Unmarshal([]byte(stdout), &log); err != nil {
		t.Fatal(err)
	}
	if log.Runs[0].Tool.Driver.Version == "" {
		t.Error("the driver has no version")
	}
	log.Runs[0].Tool.Driver.Version = ""
	got, err := json.MarshalIndent(log, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "lint", "field-report-with-instance.sarif.golden")
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestLintSARIFGolden -update creates it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", path, diff)
	}
	checkSARIF(t, want)
}

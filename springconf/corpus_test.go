package springconf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// corpusCase is the expectation header of a file in testdata/lint-corpus: each file
// is a configuration written for this test from a pattern seen in real application.yml
// files, with its expectations in leading comment lines:
//
//	# flags: --name N --profile P --rate R --assume retry|timelimiter|feign --retry N --timelimiter N
//	# want: SEVERITY ID [LINE]      a finding with this severity and id (and line)
//	# not: SEVERITY|* ID            no such finding
//	# message: ID contains|lacks TEXT
//	# count: ID N                   exactly N findings with this id
//	# no-errors                     no finding of severity error
//	# resolves: NAME SETTING VALUE  the breaker NAME resolves SETTING (window size only)
type corpusCase struct {
	profiles []string
	opt      LintOptions
	lines    []string
}

func readCorpusCase(t *testing.T, path string) corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c corpusCase
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		l = strings.TrimSpace(strings.TrimPrefix(l, "#"))
		if rest, ok := strings.CutPrefix(l, "flags:"); ok {
			f := strings.Fields(rest)
			for i := 0; i+1 < len(f); i += 2 {
				switch f[i] {
				case "--name":
					c.opt.BreakerName = f[i+1]
				case "--profile":
					c.profiles = append(c.profiles, f[i+1])
				case "--rate":
					c.opt.Rate, err = strconv.ParseFloat(f[i+1], 64)
					if err != nil {
						t.Fatal(err)
					}
				case "--retry":
					c.opt.RetryName = f[i+1]
				case "--timelimiter":
					c.opt.TimeLimiterName = f[i+1]
				case "--assume":
					c.opt.AssumeRetry = c.opt.AssumeRetry || f[i+1] == "retry"
					c.opt.AssumeTimeLimiter = c.opt.AssumeTimeLimiter || f[i+1] == "timelimiter"
					c.opt.AssumeFeign = c.opt.AssumeFeign || f[i+1] == "feign"
				default:
					t.Fatalf("%s: unknown flag %s", path, f[i])
				}
			}
			continue
		}
		c.lines = append(c.lines, l)
	}
	return c
}

// TestLintCorpus runs lint on every file of testdata/lint-corpus and checks its header.
// One file per false positive and per missed trap of issue 20.
func TestLintCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "lint-corpus", "*"))
	if err != nil || len(files) < 15 {
		t.Fatalf("corpus: %d files (%v); want the lint corpus under testdata/lint-corpus", len(files), err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c := readCorpusCase(t, path)
			f, err := LoadWith(path, Options{Profiles: c.profiles})
			if err != nil {
				t.Fatal(err)
			}
			fs := Lint(f, c.opt)
			dump := strings.Join(findingSet(fs), "\n")
			checked := 0
			for _, l := range c.lines {
				w := strings.Fields(l)
				if len(w) == 0 {
					continue
				}
				switch w[0] {
				case "want:":
					checked++
					ok := false
					for _, x := range fs {
						ok = ok || x.Severity == w[1] && x.ID == w[2] && (len(w) < 4 || strconv.Itoa(x.Line) == w[3])
					}
					if !ok {
						t.Errorf("want %s; findings:\n%s", strings.Join(w[1:], " "), dump)
					}
				case "not:":
					checked++
					for _, x := range fs {
						if (w[1] == "*" || x.Severity == w[1]) && x.ID == w[2] {
							t.Errorf("unwanted %s", x)
						}
					}
				case "message:":
					checked++
					text := strings.Trim(strings.Join(w[3:], " "), `"`)
					found := false
					for _, x := range fs {
						if x.ID != w[1] {
							continue
						}
						found = true
						if has := strings.Contains(x.Message, text); has != (w[2] == "contains") {
							t.Errorf("%s: message %s %q: %s", x.ID, w[2], text, x.Message)
						}
					}
					if !found {
						t.Errorf("no %s finding; findings:\n%s", w[1], dump)
					}
				case "count:":
					checked++
					n := 0
					for _, x := range fs {
						if x.ID == w[1] {
							n++
						}
					}
					if strconv.Itoa(n) != w[2] {
						t.Errorf("%d %s findings, want %s:\n%s", n, w[1], w[2], dump)
					}
				case "no-errors":
					checked++
					for _, x := range fs {
						if x.Severity == SeverityError {
							t.Errorf("error finding %s", x)
						}
					}
				case "resolves:":
					checked++
					r, err := f.Resolve(w[1])
					if err != nil {
						t.Fatal(err)
					}
					if got := fmt.Sprint(r.Config.SlidingWindowSize); w[2] != "sliding-window-size" || got != w[3] {
						t.Errorf("%s resolves %s %s, want %s", w[1], w[2], got, w[3])
					}
				}
			}
			if checked == 0 {
				t.Fatalf("%s has no expectation", path)
			}
		})
	}
}

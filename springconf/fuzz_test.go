package springconf

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"100ms", "10s", "1m", "PT0.5S", "250", "-PT1M30S", "P1DT2H", "1.5s", "PT", "99999999999999999999d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if d != 0 {
				t.Fatalf("ParseDuration(%q) = %v with error %v", s, d, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		// A whole number of milliseconds round-trips through the bare-number form.
		if d%time.Millisecond == 0 {
			back, err := ParseDuration(strconv.FormatInt(int64(d/time.Millisecond), 10))
			if err != nil || back != d {
				t.Fatalf("ParseDuration(%q) = %v, but its millisecond form gives %v, %v", s, d, back, err)
			}
		}
	})
}

func fuzzParse(t *testing.T, data []byte, format Format) {
	file, err := Parse("fuzz", data, format)
	if err != nil {
		if file != nil {
			t.Fatalf("Parse returned a file with error %v", err)
		}
		var e *Error
		if !errors.As(err, &e) || err.Error() == "" {
			t.Fatalf("error %T %q is not an *Error", err, err)
		}
		return
	}
	if file == nil {
		t.Fatal("nil file without error")
	}
	for _, sec := range []string{"circuitbreaker", "timelimiter", "retry"} {
		for _, k := range file.InstanceNames(sec) {
			if r, err := file.Resolve(k.Bound); err == nil {
				if verr := r.Config.Validate(); verr != nil {
					t.Fatalf("resolved %q does not validate: %v", k.Bound, verr)
				}
			}
			_, _, _ = file.ResolveTimeLimiter(k.Bound)
			_, _, _ = file.ResolveRetry(k.Bound)
		}
	}
	_ = Lint(file, LintOptions{Rate: 3})
	_ = file.Management()
}

func seedFiles(f *testing.F, ext string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*"+ext))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
}

func FuzzParseYAML(f *testing.F) {
	seedFiles(f, ".yml")
	f.Add(ReferenceYAML())
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("resilience4j.circuitbreaker.instances[a.b]: {failureRateThreshold: 5}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, YAML) })
}

func FuzzParseProperties(f *testing.F) {
	seedFiles(f, ".properties")
	f.Add([]byte("a=b\\\nc\nresilience4j.retry.instances.[x].max-attempts=2\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzParse(t, data, Properties) })
}

package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// The vector kinds. A file without "kind" is a circuit-breaker vector (the public format).
const (
	// KindCircuitBreaker is the public format of shared/conformance/README.md.
	KindCircuitBreaker = "circuitbreaker"
	// KindRetry vectors drive a Retry (docs/conformance.md).
	KindRetry = "retry"
	// KindTimeLimiter vectors drive a TimeLimiter (docs/conformance.md).
	KindTimeLimiter = "timelimiter"
)

// Any is a vector of any kind: exactly one of its fields is set.
type Any struct {
	// Breaker is a circuit-breaker vector.
	Breaker *Vector
	// Retry is a retry vector.
	Retry *RetryVector
	// TimeLimiter is a time-limiter vector.
	TimeLimiter *TimeLimiterVector
}

// File returns the path the vector was read from.
func (a *Any) File() string {
	switch {
	case a.Retry != nil:
		return a.Retry.File
	case a.TimeLimiter != nil:
		return a.TimeLimiter.File
	}
	return a.Breaker.File
}

// Kind returns the vector's kind.
func (a *Any) Kind() string {
	switch {
	case a.Retry != nil:
		return KindRetry
	case a.TimeLimiter != nil:
		return KindTimeLimiter
	}
	return KindCircuitBreaker
}

// AnyResult is the replay of a vector of any kind.
type AnyResult struct {
	// Steps is the number of steps replayed.
	Steps int
	// Mismatches lists every field that differs, in step order.
	Mismatches []Mismatch
	// Breaker is the full result of a circuit-breaker vector (for WriteExplain), nil otherwise.
	Breaker *Result
}

// OK reports whether every step matched.
func (r *AnyResult) OK() bool { return len(r.Mismatches) == 0 }

// LoadAny reads a vector of any kind.
func LoadAny(path string) (*Any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read: " + err.Error(), Err: err}
	}
	return DecodeAny(path, data)
}

// DecodeAny parses a vector of any kind, chosen by its top-level "kind" field.
func DecodeAny(file string, data []byte) (*Any, error) {
	var head struct {
		Kind *string `json:"kind"`
	}
	// Errors of the full decoders below are more precise; this only picks the kind.
	_ = json.Unmarshal(data, &head)
	kind := KindCircuitBreaker
	if head.Kind != nil {
		kind = *head.Kind
	}
	switch kind {
	case KindCircuitBreaker:
		v, err := Decode(file, data)
		if err != nil {
			return nil, err
		}
		return &Any{Breaker: v}, nil
	case KindRetry:
		v, err := DecodeRetry(file, data)
		if err != nil {
			return nil, err
		}
		return &Any{Retry: v}, nil
	case KindTimeLimiter:
		v, err := DecodeTimeLimiter(file, data)
		if err != nil {
			return nil, err
		}
		return &Any{TimeLimiter: v}, nil
	}
	return nil, &Error{File: file, Line: lineAt(data, int64(bytes.Index(data, []byte(`"kind"`)))), Field: "kind",
		Msg: fmt.Sprintf("unknown vector kind %q (want %s, %s or %s)", kind, KindCircuitBreaker, KindRetry, KindTimeLimiter)}
}

// RunAny replays a vector of any kind.
func RunAny(a *Any) (*AnyResult, error) {
	switch {
	case a.Retry != nil:
		return RunRetry(a.Retry)
	case a.TimeLimiter != nil:
		return RunTimeLimiter(a.TimeLimiter)
	}
	r, err := Run(a.Breaker)
	if err != nil {
		return nil, err
	}
	return &AnyResult{Steps: len(r.Steps), Mismatches: r.Mismatches, Breaker: r}, nil
}

// decodeStrict decodes data into v with unknown fields refused, naming the line of a fault.
func decodeStrict(file string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return &Error{File: file, Line: lineAt(data, dec.InputOffset()), Msg: "unexpected data after the vector object"}
		}
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return &Error{File: file, Line: lineAt(data, se.Offset), Msg: strings.TrimPrefix(se.Error(), "json: "), Err: err}
	case errors.As(err, &te):
		return &Error{File: file, Line: lineAt(data, te.Offset), Field: te.Field, Msg: fmt.Sprintf("JSON %s is not a %s", te.Value, te.Type), Err: err}
	}
	return &Error{File: file, Line: lineAt(data, dec.InputOffset()), Msg: strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// stepLines returns the 1-based line of each step when the file is written one
// step a line after a `"steps": [` line, and zeros otherwise.
func stepLines(data []byte, n int) []int {
	out := make([]int, n)
	lines := bytes.Split(data, []byte{'\n'})
	for i := 0; i+1 < len(lines); i++ {
		l := bytes.TrimSpace(lines[i])
		if bytes.HasPrefix(l, []byte(`"steps"`)) && bytes.HasSuffix(l, []byte("[")) {
			for j := 0; j < n && i+1+j < len(lines); j++ {
				if bytes.HasPrefix(bytes.TrimSpace(lines[i+1+j]), []byte("{")) {
					out[j] = i + 2 + j
				}
			}
			break
		}
	}
	return out
}

// JavaError is an error standing for an exception of a named Java class in retry
// and time-limiter vectors. It carries the class for springconf's matching
// (retry-exceptions, ignore-exceptions) and, for java.util.concurrent.TimeoutException
// and its subclasses, wraps a *breaker.TimeoutError, as a TimeLimiter's timeout is one.
type JavaError struct {
	// Class is the fully qualified class name, e.g. "java.io.IOException".
	Class string
}

// Error returns the class name.
func (e *JavaError) Error() string { return e.Class }

// JavaClass returns the class name (springconf.JavaClassOf reads it).
func (e *JavaError) JavaClass() string { return e.Class }

// Unwrap returns a *breaker.TimeoutError for a TimeoutException, nil otherwise.
func (e *JavaError) Unwrap() error {
	if springconf.IsInstance(e, springconf.ClassTimeoutException) {
		return &breaker.TimeoutError{}
	}
	return nil
}

// knownExceptionClass checks that a class name is one the Go side knows the
// superclasses of, so that matching by class means the same as in Java.
func knownExceptionClass(class string) error {
	if !strings.Contains(class, ".") || (springconf.KnownSuperclasses(class) == nil && class != "java.lang.Throwable") {
		return fmt.Errorf("%q is not a fully qualified exception class in springconf's class table", class)
	}
	return nil
}

// javaClassName names the Java class an error returned by the model stands for.
func javaClassName(err error) string {
	var me *breaker.MaxRetriesExceededError
	var re *breaker.RetryResultExhaustedError
	var je *JavaError
	switch {
	case errors.As(err, &je):
		return je.Class
	case errors.As(err, &me):
		return "io.github.resilience4j.retry.MaxRetriesExceededException"
	case errors.As(err, &re):
		return "io.github.resilience4j.retry.MaxRetriesExceeded"
	}
	c, _ := springconf.JavaClassOf(err)
	return c
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func showJSON(a any) string {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprint(a)
	}
	return strings.ReplaceAll(strings.ReplaceAll(string(b), `":`, `": `), `,"`, `, "`)
}

// millisOf converts a vector's whole milliseconds to a Duration.
func millisOf(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// Kind is the fault injected into one request ("" when none).
type Kind string

// Fault kinds.
const (
	KindNone      Kind = ""          // forwarded (or stubbed) untouched, after the injected latency
	KindError     Kind = "error"     // answered with Behavior.ErrorStatus and ErrorBody; the upstream never sees it
	KindHang      Kind = "hang"      // no answer until the client gives up, held at most HangMax, then closed
	KindReset     Kind = "reset"     // the connection is reset (SO_LINGER 0), no answer
	KindTruncate  Kind = "truncate"  // the real answer with a Content-Length larger than the bytes written, then closed
	KindMalformed Kind = "malformed" // bytes that are not HTTP, then closed; the upstream never sees it
)

// Defaults of an injected error.
const (
	DefaultErrorStatus = http.StatusInternalServerError
	DefaultErrorBody   = `{"error":"injected by cbprobe fault"}`
	maxErrorBody       = 64 << 10
)

// Behavior is pgsim's behaviour model (error share, latency distribution,
// error timing, slow mode, hangs, resets) plus what a generic dependency needs:
// the status and body of an injected error, truncated and malformed answers.
// With TruncateRate and MalformedRate at 0 it draws exactly the decisions
// behavior.Behavior.Decide draws for the same random stream.
type Behavior struct {
	behavior.Behavior
	// ErrorStatus is the HTTP status of an injected error, 200..599 (default 500).
	ErrorStatus int
	// ErrorBody is the body of an injected error (default a small JSON object);
	// its Content-Type is application/json when it starts with '{' or '[',
	// text/plain otherwise. At most 64 KiB.
	ErrorBody string
	// TruncateRate is the probability, in [0, 1], that the real answer is sent
	// with a Content-Length larger than the bytes written and the connection closed.
	TruncateRate float64
	// MalformedRate is the probability, in [0, 1], that the client gets bytes
	// that are not an HTTP response and the connection is closed.
	MalformedRate float64
}

// NoFaults returns the behaviour of a transparent proxy: no errors, no
// latency, slow mode off (150–300 ms when switched on), HangMax 30 s.
func NoFaults() Behavior {
	b := behavior.DefaultBehavior()
	b.ErrorRate = 0
	b.Latency = behavior.Fixed{}
	return Behavior{Behavior: b, ErrorStatus: DefaultErrorStatus, ErrorBody: DefaultErrorBody}
}

// Validate checks every field and returns a *behavior.FieldError naming the first bad one.
func (b Behavior) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"truncateRate", b.TruncateRate}, {"malformedRate", b.MalformedRate}} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return &behavior.FieldError{Field: r.name, Msg: fmt.Sprintf("%v is not a probability in [0, 1]", r.v)}
		}
	}
	if err := b.Behavior.Validate(); err != nil {
		return err
	}
	if b.ErrorStatus < 200 || b.ErrorStatus > 599 {
		return &behavior.FieldError{Field: "errorStatus", Msg: fmt.Sprintf("%d is not an HTTP status in 200..599", b.ErrorStatus)}
	}
	if len(b.ErrorBody) > maxErrorBody {
		return &behavior.FieldError{Field: "errorBody", Msg: fmt.Sprintf("%d bytes is over the 64 KiB limit", len(b.ErrorBody))}
	}
	m := b.Behavior.Mix()
	if sum := m.Hang + m.Reset + m.Error + b.TruncateRate + b.MalformedRate; sum > 1+1e-12 {
		return &behavior.FieldError{Field: "malformedRate", Msg: fmt.Sprintf(
			"hangRate + resetRate + errorRate + truncateRate + malformedRate = %v exceeds 1", sum)}
	}
	return nil
}

// Decision is the fault and delay of one request.
type Decision struct {
	// Kind is the injected fault, KindNone for none.
	Kind Kind
	// Delay is the latency injected before the request is forwarded or the
	// fault applied; for KindHang the longest the request is held.
	Delay time.Duration
}

// Decide draws one decision. Like behavior.Behavior.Decide it draws exactly
// one Float64 and then one latency sample whatever the outcome; u in [0, 1) is
// hang, reset, error (none in slow mode), truncate, malformed, in that order,
// and none otherwise. Truncated answers come after the latency (they are
// answers); resets, errors and malformed answers at once unless ErrorTiming is
// after-latency.
func (b Behavior) Decide(r *rand.Rand) Decision {
	u := r.Float64()
	lat := b.ActiveLatency().Sample(r)
	m := b.Behavior.Mix()
	timed := func(k Kind) Decision {
		if b.ErrorTiming == behavior.AfterLatency {
			return Decision{Kind: k, Delay: lat}
		}
		return Decision{Kind: k}
	}
	edge := m.Hang
	if u < edge {
		return Decision{Kind: KindHang, Delay: b.HangMax}
	}
	if edge += m.Reset; u < edge {
		return timed(KindReset)
	}
	if edge += m.Error; u < edge {
		return timed(KindError)
	}
	if edge += b.TruncateRate; u < edge {
		return Decision{Kind: KindTruncate, Delay: lat}
	}
	if edge += b.MalformedRate; u < edge {
		return timed(KindMalformed)
	}
	return Decision{Kind: KindNone, Delay: lat}
}

// Quiet reports whether the behaviour injects nothing at all (no fault, no latency).
func (b Behavior) Quiet() bool {
	m := b.Behavior.Mix()
	if m.Hang+m.Reset+m.Error+b.TruncateRate+b.MalformedRate > 0 {
		return false
	}
	f, ok := b.ActiveLatency().(behavior.Fixed)
	return ok && f.D == 0
}

// String summarises the behaviour on one line.
func (b Behavior) String() string {
	s := b.Behavior.String()
	if !b.Slow && b.ErrorRate > 0 {
		s += fmt.Sprintf(" (status %d)", b.ErrorStatus)
	}
	if b.TruncateRate > 0 {
		s += fmt.Sprintf(", truncated %s", pct(b.TruncateRate))
	}
	if b.MalformedRate > 0 {
		s += fmt.Sprintf(", malformed %s", pct(b.MalformedRate))
	}
	return s
}

func pct(p float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4f", p*100), "0"), ".") + "%"
}

// Fields lists the JSON field names of Behavior: pgsim's, then fault's own.
func Fields() []string {
	return append(behavior.Fields(), "errorStatus", "errorBody", "truncateRate", "malformedRate")
}

// MarshalJSON writes pgsim's behaviour document with fault's four fields added:
//
//	{"errorRate":0,"latency":"0s",...,"resetRate":0,
//	 "errorStatus":500,"errorBody":"...","truncateRate":0,"malformedRate":0}
func (b Behavior) MarshalJSON() ([]byte, error) {
	base, err := b.Behavior.MarshalJSON()
	if err != nil {
		return nil, err
	}
	extra, err := json.Marshal(struct {
		ErrorStatus   int     `json:"errorStatus"`
		ErrorBody     string  `json:"errorBody"`
		TruncateRate  float64 `json:"truncateRate"`
		MalformedRate float64 `json:"malformedRate"`
	}{b.ErrorStatus, b.ErrorBody, b.TruncateRate, b.MalformedRate})
	if err != nil {
		return nil, err
	}
	out := append(bytes.TrimSuffix(base, []byte("}")), ',')
	return append(out, extra[1:]...), nil
}

// UnmarshalJSON reads the form MarshalJSON writes on top of the receiver:
// absent fields keep their values; unknown fields, nulls, wrong types and bad
// values are refused with a *behavior.FieldError naming the field; on error
// the receiver is unchanged.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return &behavior.FieldError{Msg: "want a JSON object"}
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return &behavior.FieldError{Msg: fmt.Sprintf("malformed JSON: %v", err)}
	}
	next := *b
	base := map[string]json.RawMessage{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return &behavior.FieldError{Field: k, Msg: "must not be null"}
		}
		switch k {
		case "errorStatus":
			var n int
			if err := json.Unmarshal(v, &n); err != nil {
				return &behavior.FieldError{Field: k, Msg: fmt.Sprintf("want an HTTP status such as 503, got %s", clip(v))}
			}
			next.ErrorStatus = n
		case "errorBody":
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return &behavior.FieldError{Field: k, Msg: fmt.Sprintf("want a string, got %s", clip(v))}
			}
			next.ErrorBody = s
		case "truncateRate", "malformedRate":
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				return &behavior.FieldError{Field: k, Msg: fmt.Sprintf("want a number in [0, 1], got %s", clip(v))}
			}
			if k == "truncateRate" {
				next.TruncateRate = f
			} else {
				next.MalformedRate = f
			}
		default:
			if !contains(behavior.Fields(), k) {
				return &behavior.FieldError{Field: k, Msg: "unknown field (known: " + strings.Join(Fields(), ", ") + ")"}
			}
			base[k] = v
		}
	}
	if len(base) > 0 {
		doc, err := json.Marshal(base)
		if err != nil {
			return &behavior.FieldError{Msg: fmt.Sprintf("re-encode: %v", err)}
		}
		// pgsim's decoder validates pgsim's fields as a whole; fault's rates are
		// checked below together with them.
		inner := next.Behavior
		if err := inner.UnmarshalJSON(doc); err != nil {
			return err
		}
		next.Behavior = inner
	}
	if err := next.Validate(); err != nil {
		return err
	}
	*b = next
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func clip(v json.RawMessage) string {
	const max = 40
	r := []rune(string(bytes.TrimSpace(v)))
	if len(r) > max {
		return string(r[:max]) + "..."
	}
	return string(r)
}

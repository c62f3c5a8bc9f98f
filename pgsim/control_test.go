package pgsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/google/go-cmp/cmp"
)

func TestControlAPI(t *testing.T) {
	s, base := newTestServer(t, Config{Behavior: quiet(), Seed: 1})
	do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", validBody)
	tests := []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   string // substring of the answer
		check  func(t *testing.T)
	}{
		{name: "read behaviour", method: "GET", path: "/__pgsim/behavior", status: 200,
			want: `{"errorRate":0,"latency":"0s","errorTiming":"immediate","slow":false,"slowLatency":"150ms-300ms","hangRate":0,"hangMax":"30s","resetRate":0}`},
		{name: "stats", method: "GET", path: "/__pgsim/stats", status: 200, want: `"attempts":{"orders":1,"attempts":1,"mean":1,"histogram":{"1":1}`},
		{name: "attempts as JSON lines", method: "GET", path: "/__pgsim/attempts", status: 200, want: `"orderId":"1351039135","outcome":"success","injected":0,"n":1}`},
		{name: "replace fills defaults", method: "PUT", path: "/__pgsim/behavior", body: `{"slow":true}`, status: 200,
			want: `"errorRate":0.4,"latency":"100ms-500ms"`, check: func(t *testing.T) {
				if b := s.Behavior(); !b.Slow || b.ErrorRate != 0.4 {
					t.Errorf("behaviour after PUT %+v", b)
				}
			}},
		{name: "merge keeps the rest", method: "PATCH", path: "/__pgsim/behavior", body: `{"errorRate":0.25,"latency":"lognormal:median=200ms,p99=1s"}`, status: 200,
			want: `"errorRate":0.25,"latency":"lognormal:median=200ms,p99=1s"`, check: func(t *testing.T) {
				if b := s.Behavior(); !b.Slow || b.ErrorRate != 0.25 {
					t.Errorf("behaviour after PATCH %+v", b)
				}
			}},
		{name: "bad value names the field", method: "PUT", path: "/__pgsim/behavior", body: `{"errorRate":1.5}`, status: 400,
			want: `{"error":"behavior: errorRate: 1.5 is not a probability in [0, 1]","field":"errorRate"}`},
		{name: "bad distribution names the field", method: "PUT", path: "/__pgsim/behavior", body: `{"latency":"fast"}`, status: 400, want: `"field":"latency"`},
		{name: "unknown field", method: "PUT", path: "/__pgsim/behavior", body: `{"errors":0.1}`, status: 400, want: `"field":"errors"`},
		{name: "malformed", method: "PUT", path: "/__pgsim/behavior", body: `{`, status: 400, want: `malformed JSON`},
		{name: "wrong method", method: "DELETE", path: "/__pgsim/behavior", status: 405, want: `use GET, PUT, PATCH`},
		{name: "odd method", method: "T", path: "/__pgsim/behavior", status: 405, want: `not allowed`},
		{name: "unknown endpoint", method: "GET", path: "/__pgsim/nothing", status: 404, want: `no control endpoint`},
		{name: "reset", method: "POST", path: "/__pgsim/reset", status: 204, check: func(t *testing.T) {
			if st := s.Stats(); st.Attempts.Total != 0 || len(s.Attempts()) != 0 || st.Transactions != 1 {
				t.Errorf("after reset: attempts %+v, transactions %d", st.Attempts, st.Transactions)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := do(t, nil, tc.method, base+tc.path, "", tc.body)
			if got.status != tc.status || !strings.Contains(got.body, tc.want) {
				t.Fatalf("got %d %s\nwant %d containing %s", got.status, got.body, tc.status, tc.want)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
	if b := s.Behavior(); b.ErrorRate != 0.25 {
		t.Errorf("a rejected PUT changed the behaviour: %+v", b)
	}
}

func TestMetricsOwnRegistry(t *testing.T) {
	b := quiet()
	b.Latency = behavior.Fixed{D: 2 * time.Millisecond}
	_, base := newTestServer(t, Config{Behavior: b, Seed: 1})
	do(t, nil, http.MethodPost, base+"/api/v1/payments", "u1", validBody)
	do(t, nil, http.MethodPost, base+"/api/v1/payments", "", validBody)
	got := do(t, nil, http.MethodGet, base+"/metrics", "", "")
	for _, want := range []string{
		`pgsim_requests_total{endpoint="create",outcome="success"} 1`,
		`pgsim_requests_total{endpoint="create",outcome="rejected-4xx"} 1`,
		`pgsim_injected_latency_seconds_bucket{le="0.005"} 1`,
		`pgsim_injected_latency_seconds_count 1`,
		`pgsim_in_flight_requests 0`,
		`pgsim_callbacks_sent_total 0`,
		`pgsim_callbacks_failed_total 0`,
		`pgsim_callbacks_queued 0`,
		`pgsim_behavior{setting="error_rate"} 0`,
	} {
		if !strings.Contains(got.body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The process collector lives only in the global registry: its absence shows
	// that pgsim serves its own.
	if strings.Contains(got.body, "process_cpu_seconds_total") {
		t.Error("/metrics serves the global registry")
	}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want func(*Config)
		err  string
	}{
		{name: "empty", yaml: "", want: func(*Config) {}},
		{name: "full", yaml: `
seed: 7
callbackPrefix: http://127.0.0.1:9000
callbackWorkers: 4
callbackTimeout: 2s
maxOrders: 10
log: x.jsonl
speed: 10
behavior:
  errorRate: 0.1
  latency: normal:mean=200ms,sd=50ms
  errorTiming: after-latency
  hangRate: 0.01
  hangMax: 2s
`, want: func(c *Config) {
			c.Seed, c.CallbackPrefix, c.CallbackWorkers, c.CallbackTimeout, c.MaxOrders, c.LogPath, c.Speed = 7, "http://127.0.0.1:9000", 4, 2*time.Second, 10, "x.jsonl", 10
			c.Behavior.ErrorRate, c.Behavior.Latency, c.Behavior.ErrorTiming = 0.1, behavior.Normal{Mean: 200 * time.Millisecond, SD: 50 * time.Millisecond}, behavior.AfterLatency
			c.Behavior.HangRate, c.Behavior.HangMax = 0.01, 2*time.Second
		}},
		{name: "unknown key", yaml: "seed: 1\nport: 80\n", err: "cfg.yaml:2: port: unknown setting"},
		{name: "bad behaviour field has its line", yaml: "behavior:\n  slow: true\n  errorRate: 3\n", err: "cfg.yaml:3: behavior.errorRate: 3 is not a probability"},
		{name: "bad type", yaml: "callbackWorkers: many\n", err: "cfg.yaml:1: callbackWorkers:"},
		{name: "zero workers", yaml: "callbackWorkers: 0\n", err: "want >= 1"},
		{name: "bad speed", yaml: "speed: -2\n", err: "speed: -2: want a number > 0"},
		{name: "not a mapping", yaml: "- a\n", err: "want a mapping"},
		{name: "broken YAML", yaml: "a: [\n", err: "not valid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig("cfg.yaml", []byte(tc.yaml), DefaultConfig())
			if tc.err != "" {
				var fe *FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want a FileError containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultConfig()
			tc.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "pgsim.yaml")
	if err := os.WriteFile(path, []byte("behavior:\n  slow: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfigFile(path, DefaultConfig()); err != nil || !c.Behavior.Slow {
		t.Fatalf("LoadConfigFile: %+v %v", c.Behavior, err)
	}
	if _, err := LoadConfigFile(path+".missing", DefaultConfig()); err == nil || !strings.Contains(err.Error(), "read") {
		t.Fatalf("missing file: %v", err)
	}
}

// FuzzControlAPI feeds arbitrary bodies to the behaviour decoder behind
// PUT/PATCH /__pgsim/behavior: it must never panic, must return a field-naming
// error or a valid behaviour, and a valid behaviour must survive a round trip.
func FuzzControlAPI(f *testing.F) {
	for _, seed := range []string{`{"errorRate":0.2}`, `{"latency":"list:1ms,2ms"}`, `{"slow":true,"slowLatency":"normal:mean=1s,sd=2s"}`,
		`{"hangRate":0.5,"hangMax":"1s","resetRate":0.5,"errorRate":0}`, `[]`, `null`, `{"latency":null}`, `{"errorTiming":"after-latency"}`} {
		f.Add([]byte(seed))
	}
	s, err := New(Config{Seed: 1}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close(context.Background()) })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBehavior(behavior.DefaultBehavior(), data)
		if err != nil {
			var fe *behavior.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("decoded an invalid behaviour: %v", err)
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeBehavior(behavior.DefaultBehavior(), out)
		if err != nil || again.String() != b.String() {
			t.Fatalf("round trip of %s: %v, %v", out, again, err)
		}
		// The same body through the handler answers 200 or 400, never 5xx.
		req := httptest.NewRequest(http.MethodPatch, "/__pgsim/behavior", strings.NewReader(string(data)))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Fatalf("PATCH answered %d", rec.Code)
		}
	})
}

// FuzzPaymentBody feeds arbitrary bodies to the payment decoder and validator:
// never a panic; either a 400 RequestError with a message or a request that
// satisfies every rule of the original validate().
func FuzzPaymentBody(f *testing.F) {
	for _, seed := range []string{validBody, `{}`, `{"orderId":123456,"cardType":"KB","cardNo":"1111-2222-3333-4444","amount":"1","callbackUrl":"http://localhost:8080"}`,
		`{"amount":1e400}`, `{"amount":-1.5}`, `{"cardType":""}`, `{"orderId":"1351039135","cardType":"KB","cardNo":"1111-2222-3333-4444","amount":-0,"callbackUrl":"x","ORDERID":"a"}`,
		` {"orderId":"ab\u0063def","cardType":"KB","cardNo":"1111-2222-3333-4444","amount":01,"callbackUrl":"http://localhost:8080"} `, `{"orderId":"\u0000\u0000\u0000\u0000\u0000\u0000"}`, `nul`, "\xff"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast scanner, when it accepts, binds exactly what the careful path binds.
		if fast, ok := scanPayment(data); ok {
			careful, cerr := decodePaymentCarefully(data, DefaultCallbackPrefix)
			var re *RequestError
			if cerr != nil && (!errors.As(cerr, &re) || re.Message == msgBodyUnreadable || strings.HasPrefix(re.Message, "필")) {
				t.Fatalf("fast path accepted %q, careful path: %v", data, cerr)
			}
			if careful != fast {
				t.Fatalf("fast %+v != careful %+v for %q", fast, careful, data)
			}
		}
		p, err := DecodePayment(data, DefaultCallbackPrefix)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) || re.Status != 400 || re.Message == "" {
				t.Fatalf("error %v: want a 400 RequestError with a message", err)
			}
			return
		}
		if utf16Len(p.OrderID) < 6 || isBlank(p.OrderID) || !validCardNo(p.CardNo) || p.Amount <= 0 ||
			!strings.HasPrefix(p.CallbackURL, DefaultCallbackPrefix) {
			t.Fatalf("accepted an invalid request %+v", p)
		}
		switch p.CardType {
		case "SAMSUNG", "KB", "HYUNDAI":
		default:
			t.Fatalf("accepted card type %q", p.CardType)
		}
	})
}

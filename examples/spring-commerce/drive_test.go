package springcommerce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// target is a service under test: the demo or a jar, with the gateway it calls.
type target struct {
	name string
	url  string
	gw   *pgsim.Server
}

// actuatorEndpoints are the JSON endpoints compared; {name} is the payment breaker's name.
var actuatorEndpoints = []string{
	"/actuator/health",
	"/actuator/health/circuitBreakers",
	"/actuator/circuitbreakers",
	"/actuator/circuitbreakerevents",
	"/actuator/circuitbreakerevents/{name}",
	"/actuator/timelimiters",
	"/actuator/timelimiterevents",
	"/actuator/timelimiterevents/{name}",
	"/actuator/retries",
	"/actuator/retryevents",
	"/actuator/retryevents/{name}",
}

// observed is what one target showed: the merged schema of every snapshot, the breaker's name
// and how its traffic went.
type observed struct {
	schema  schema
	breaker string
	notes   []string
}

// driver sends the scripted traffic to one target and snapshots its outputs after each phase.
type driver struct {
	t      *testing.T
	tg     target
	client *http.Client
	user   string
	obs    observed
}

func newDriver(t *testing.T, tg target) *driver {
	return &driver{t: t, tg: tg, client: &http.Client{Timeout: 30 * time.Second}, user: "parity-user",
		obs: observed{schema: schema{}}}
}

// do sends one request and returns status and body; transport errors fail the test.
func (d *driver) do(method, path string, user string, body string) (int, []byte) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.tg.url+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatalf("%s: build %s %s: %v", d.tg.name, method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.Header.Set("X-USER-ID", user)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		d.t.Fatalf("%s: %s %s: %v", d.tg.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		d.t.Fatalf("%s: read %s %s: %v", d.tg.name, method, path, err)
	}
	return resp.StatusCode, b
}

// api sends an API request and records its status and body shape under label.
func (d *driver) api(label, method, path, user, body string) (int, map[string]any) {
	d.t.Helper()
	st, b := d.do(method, path, user, body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		d.t.Fatalf("%s: %s %s answered HTTP %d with a body that is not a JSON object: %v (%.300q)", d.tg.name, method, path, st, err, b)
	}
	if label != "" {
		s, err := jsonSchema("api "+label+fmt.Sprintf(" HTTP %d", st), b, nil)
		if err != nil {
			d.t.Fatal(err)
		}
		d.obs.schema.merge(s)
	}
	return st, m
}

func (d *driver) order() string {
	d.t.Helper()
	st, m := d.api("", "POST", "/api/v1/orders", d.user, `{"amount":5000}`)
	id, _ := m["orderId"].(string)
	if st != http.StatusOK || id == "" {
		d.t.Fatalf("%s: POST /api/v1/orders: HTTP %d %v", d.tg.name, st, m)
	}
	return id
}

// pay creates an order and pays it; it returns the HTTP status and the error code ("" on 200).
func (d *driver) pay(label string) (int, string) {
	d.t.Helper()
	id := d.order()
	st, m := d.api(label, "POST", "/api/v1/payments", d.user,
		fmt.Sprintf(`{"orderId":%q,"cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451"}`, id))
	code, _ := m["code"].(string)
	if st != http.StatusOK && st != http.StatusServiceUnavailable {
		d.t.Fatalf("%s: POST /api/v1/payments: HTTP %d %v", d.tg.name, st, m)
	}
	return st, code
}

func (d *driver) setGateway(b behavior.Behavior) {
	d.t.Helper()
	if err := d.tg.gw.SetBehavior(b); err != nil {
		d.t.Fatalf("%s: set gateway behaviour: %v", d.tg.name, err)
	}
}

// state returns the payment breaker's state from /actuator/circuitbreakers, learning its name
// on first use (the only breaker of the service).
func (d *driver) state() string {
	d.t.Helper()
	st, b := d.do("GET", "/actuator/circuitbreakers", "", "")
	var v struct {
		CircuitBreakers map[string]struct {
			State string `json:"state"`
		} `json:"circuitBreakers"`
	}
	if err := json.Unmarshal(b, &v); st != http.StatusOK || err != nil {
		d.t.Fatalf("%s: GET /actuator/circuitbreakers: HTTP %d %v %.300q", d.tg.name, st, err, b)
	}
	if len(v.CircuitBreakers) != 1 {
		d.t.Fatalf("%s: want exactly the payment breaker in /actuator/circuitbreakers, got %s", d.tg.name, b)
	}
	for n, cb := range v.CircuitBreakers {
		d.obs.breaker = n
		return cb.State
	}
	return ""
}

// closeBreaker forces the breaker CLOSED through the actuator (and records the answer's shape).
func (d *driver) closeBreaker() {
	d.t.Helper()
	st, b := d.do("POST", "/actuator/circuitbreakers/"+pathEscape(d.obs.breaker), "", `{"updateState":"CLOSE"}`)
	if st != http.StatusOK {
		d.t.Fatalf("%s: POST /actuator/circuitbreakers/%s CLOSE: HTTP %d %.300q", d.tg.name, d.obs.breaker, st, b)
	}
	s, err := jsonSchema("POST /actuator/circuitbreakers/{name}", b, []string{d.obs.breaker})
	if err != nil {
		d.t.Fatal(err)
	}
	d.obs.schema.merge(s)
}

func pathEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// snapshot reads every compared endpoint and merges its schema.
func (d *driver) snapshot() {
	d.t.Helper()
	names := []string{d.obs.breaker}
	for _, ep := range actuatorEndpoints {
		path := strings.ReplaceAll(ep, "{name}", pathEscape(d.obs.breaker))
		st, b := d.do("GET", path, "", "")
		if st != http.StatusOK {
			d.t.Fatalf("%s: GET %s: HTTP %d %.300q", d.tg.name, path, st, b)
		}
		s, err := jsonSchema(ep, b, names)
		if err != nil {
			d.t.Fatal(err)
		}
		d.obs.schema.merge(s)
	}
	st, b := d.do("GET", "/actuator/prometheus", "", "")
	if st != http.StatusOK {
		d.t.Fatalf("%s: GET /actuator/prometheus: HTTP %d", d.tg.name, st)
	}
	s, err := promSchema(b, names)
	if err != nil {
		d.t.Fatalf("%s: %v", d.tg.name, err)
	}
	d.obs.schema.merge(s)
}

func fixed(min, max time.Duration) behavior.Distribution {
	return behavior.Uniform{Min: min, Max: max}
}

// run drives the scripted traffic. Every phase ends in a state that both services must reach
// whatever the gateway's random draws; a phase that cannot reach it fails the test.
func (d *driver) run() observed {
	t := d.t
	base := behavior.DefaultBehavior()

	// API errors: the same statuses and envelopes.
	d.api("order without X-USER-ID", "POST", "/api/v1/orders", "", `{"amount":5000}`)
	d.api("order without amount", "POST", "/api/v1/orders", d.user, `{}`)
	d.api("order with amount 0", "POST", "/api/v1/orders", d.user, `{"amount":0}`)
	id := d.order()
	d.api("order read back", "GET", "/api/v1/orders/"+id, d.user, "")
	d.api("unknown order", "GET", "/api/v1/orders/ORD-99999999", d.user, "")
	d.api("payment with bad card type", "POST", "/api/v1/payments", d.user, fmt.Sprintf(`{"orderId":%q,"cardType":"VISA","cardNo":"1234-5678-9814-1451"}`, id))
	d.api("payment with bad card number", "POST", "/api/v1/payments", d.user, fmt.Sprintf(`{"orderId":%q,"cardType":"KB","cardNo":"1234"}`, id))
	d.api("payment of unknown order", "POST", "/api/v1/payments", d.user, `{"orderId":"ORD-99999999","cardType":"KB","cardNo":"1234-5678-9814-1451"}`)
	d.api("callback of unknown order", "POST", "/api/v1/payments/callback", "", `{"transactionKey":"20250101:TR:abcdef","orderId":"ORD-99999999","status":"SUCCESS","reason":"ok"}`)

	// 1. Every gateway call fails at once: retries, then the breaker opens by failure rate;
	//    later attempts are refused (NOT_PERMITTED) and not retried (IGNORED_ERROR).
	d.setGateway(behavior.Behavior{ErrorRate: 1, Latency: fixed(time.Millisecond, 2*time.Millisecond),
		ErrorTiming: behavior.Immediate, SlowLatency: base.SlowLatency, HangMax: base.HangMax})
	d.pay("payment, gateway failing")
	for i := 0; d.state() != "OPEN"; i++ {
		if i == 30 {
			t.Fatalf("%s: breaker not OPEN after 30 failing payments", d.tg.name)
		}
		d.pay("")
	}
	if st, code := d.pay("payment, breaker open"); st != http.StatusServiceUnavailable || code != "CIRCUIT_OPEN" {
		t.Errorf("%s: payment with the breaker OPEN: HTTP %d %s, want 503 CIRCUIT_OPEN", d.tg.name, st, code)
	}
	d.snapshot()
	d.closeBreaker()

	// 2. Slow successes (150-300 ms, above the 100 ms slow threshold, below the 600 ms
	//    timeout): the breaker opens by slow-call rate.
	d.setGateway(behavior.Behavior{ErrorRate: 0, Latency: fixed(150*time.Millisecond, 300*time.Millisecond),
		ErrorTiming: behavior.Immediate, SlowLatency: base.SlowLatency, HangMax: base.HangMax})
	d.pay("payment, gateway slow")
	for i := 0; d.state() != "OPEN"; i++ {
		if i == 30 {
			t.Fatalf("%s: breaker not OPEN after 30 slow payments", d.tg.name)
		}
		d.pay("")
	}
	d.snapshot()
	d.closeBreaker()

	// 3. Answers after the TimeLimiter's 600 ms: timeouts, recorded as failures.
	d.setGateway(behavior.Behavior{ErrorRate: 0, Latency: fixed(750*time.Millisecond, 800*time.Millisecond),
		ErrorTiming: behavior.Immediate, SlowLatency: base.SlowLatency, HangMax: base.HangMax})
	if st, code := d.pay("payment, gateway past the timeout"); st != http.StatusServiceUnavailable || code != "PG_TIMEOUT" {
		t.Errorf("%s: payment past the timeout: HTTP %d %s, want 503 PG_TIMEOUT", d.tg.name, st, code)
	}
	d.snapshot()
	d.closeBreaker()

	// 4. Half the calls fail, fast: until a retry succeeds after a failed attempt (retry
	//    SUCCESS). P(no such request in 40) = (1-0.25)^40 < 1e-4 per run.
	d.setGateway(behavior.Behavior{ErrorRate: 0.5, Latency: fixed(2*time.Millisecond, 5*time.Millisecond),
		ErrorTiming: behavior.Immediate, SlowLatency: base.SlowLatency, HangMax: base.HangMax})
	for i := 0; ; i++ {
		if i == 40 {
			t.Fatalf("%s: no payment succeeded after a retry in 40 payments", d.tg.name)
		}
		d.pay("")
		if d.state() != "CLOSED" {
			d.closeBreaker()
		}
		_, b := d.do("GET", "/actuator/retryevents/"+pathEscape(d.obs.breaker)+"/SUCCESS", "", "")
		if bytes.Contains(b, []byte(`"type":"SUCCESS"`)) {
			break
		}
	}
	d.snapshot()
	return d.obs
}

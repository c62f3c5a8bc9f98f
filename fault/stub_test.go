package fault

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const stubFile = `routes:
  - name: create-payment
    method: POST
    path: /api/v1/payments
    status: 201
    headers:
      Content-Type: application/json
      X-Stub: "yes"
    body: |
      {"orderId":"{{.JSON.orderId}}","user":"{{.Header.Get "X-USER-ID"}}","seq":{{.Seq}},"q":"{{.Query.Get "a"}}"}
    latency: 30ms
  - method: GET
    path: /api/v1/payments/*
    body: '{"path":"{{.Path}}","echo":{{json .JSON}}}'
`

func TestStubAnswersRoutes(t *testing.T) {
	st, err := ParseStub("routes.yaml", []byte(stubFile))
	if err != nil {
		t.Fatal(err)
	}
	s, url := newProxy(t, Config{Stub: st, Seed: 1})
	t0 := time.Now()
	req, _ := http.NewRequest("POST", url+"/api/v1/payments?a=b", strings.NewReader(`{"orderId":"ord-123456"}`))
	req.Header.Set("X-USER-ID", "u1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Stub") != "yes" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("status %d headers %v", resp.StatusCode, resp.Header)
	}
	if want := `{"orderId":"ord-123456","user":"u1","seq":1,"q":"b"}` + "\n"; string(body) != want {
		t.Errorf("body %q, want %q", body, want)
	}
	if el := time.Since(t0); el < 30*time.Millisecond {
		t.Errorf("route latency: answered after %v, want >= 30ms", el)
	}
	code, b, _ := do(t, http.DefaultClient, "GET", url+"/api/v1/payments/k1", "", nil)
	if code != 200 || b != `{"path":"/api/v1/payments/k1","echo":null}` {
		t.Errorf("second route: %d %q", code, b)
	}
	code, b, _ = do(t, http.DefaultClient, "DELETE", url+"/nothing", "", nil)
	if code != 404 || !strings.Contains(b, "no route in routes.yaml matches DELETE /nothing") {
		t.Errorf("no route: %d %q", code, b)
	}
	at := s.Attempts()
	if at[0].Route != "default > create-payment" || at[2].Outcome != OutcomeRejected {
		t.Errorf("attempts %+v", at)
	}
	// Faults apply to stub answers too.
	if err := s.SetBehavior(behaviorWith(func(b *Behavior) { b.TruncateRate = 1 })); err != nil {
		t.Fatal(err)
	}
	_, b, err = do(t, http.DefaultClient, "GET", url+"/api/v1/payments/k1", "", nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) == 0 || !strings.HasPrefix(`{"path":"/api/v1/payments/k1","echo":null}`, b) {
		t.Errorf("truncated stub answer: %q %v", b, err)
	}
}

// Every stub file error names the file and the line of the fault.
func TestStubFileErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want string
	}{
		{"empty", "", "s.yaml:1: empty file"},
		{"not yaml", "routes: [\n", "s.yaml: not valid YAML"},
		{"unknown top key", "routs: []\n", "s.yaml:1: routs: unknown key"},
		{"no routes", "routes: []\n", "s.yaml:1: routes: no routes"},
		{"bad status", "routes:\n  - path: /a\n    status: 700\n", "s.yaml:3: routes[0].status"},
		{"bad method", "routes:\n  - path: /a\n  - method: post\n", "s.yaml:3: routes[1].method"},
		{"bad pattern", "routes:\n  - path: /a/[\n", "s.yaml:2: routes[0].path"},
		{"unknown key", "routes:\n  - path: /a\n    bdy: x\n", "s.yaml:3: routes[0].bdy: unknown key"},
		{"bad latency", "routes:\n  - path: /a\n    latency: soon\n", "s.yaml:3: routes[0].latency"},
		{"hop header", "routes:\n  - path: /a\n    headers:\n      Connection: close\n", "s.yaml:4: routes[0].headers.Connection"},
		{"template error on its line", "routes:\n  - path: /a\n    body: |\n      line one\n      {{.Path\n", "s.yaml:5: routes[0].body: template:"},
		{"unknown function", "routes:\n  - path: /a\n    body: '{{nope .Path}}'\n", `s.yaml:3: routes[0].body: template: function "nope" not defined`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseStub("s.yaml", []byte(tc.doc))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.ExitCode() != 2 || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want an error starting %q", err, tc.want)
			}
		})
	}
}

// Rule files name the line of a bad value, down into behaviour documents.
func TestRulesFileErrorsNameTheLine(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"bad rate", "rules:\n  - path: /a\n    behavior:\n      errorRate: 2\n", "r.yaml:4: rules[0].behavior.errorRate"},
		{"bad latency", "- behavior:\n    latency: 1s-2\n", "r.yaml:2: [0].behavior.latency"},
		{"phase for", "- phases:\n    - for: 10\n      behavior: {}\n", "r.yaml:2: [0].phases[0].for"},
		{"bad method", "- method: Get\n  behavior: {}\n", "r.yaml:1: [0].method"},
		{"both", "- behavior: {}\n  phases: []\n", "r.yaml:1: [0].phases: give behavior or phases"},
		{"unknown key", "- pth: /a\n", "r.yaml:1: [0].pth: unknown key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRules("r.yaml", []byte(tc.doc))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	rules, err := DecodeRules("r.yaml", []byte("rules:\n  - method: POST\n    path: /api/**\n    phases:\n      - for: 5s\n        behavior: {latency: 0}\n      - behavior: {errorRate: 0.4, latency: 100ms-500ms, errorStatus: 503}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != 1 || len(rules[0].Phases) != 2 || rules[0].Phases[0].For != 5*time.Second || rules[0].Phases[1].Behavior.ErrorStatus != 503 {
		t.Errorf("rules %+v", rules)
	}
}

func TestBehaviorJSONRoundTrip(t *testing.T) {
	b := behaviorWith(func(b *Behavior) {
		b.ErrorRate, b.ErrorStatus, b.ErrorBody, b.TruncateRate, b.MalformedRate = 0.2, 429, "slow down", 0.1, 0.05
	})
	data, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBehavior(NoFaults(), data)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != b.String() || got.ErrorBody != "slow down" {
		t.Errorf("round trip: %v / %v", got, b)
	}
	for _, f := range Fields() {
		if !strings.Contains(string(data), `"`+f+`":`) {
			t.Errorf("field %s missing from %s", f, data)
		}
	}
}

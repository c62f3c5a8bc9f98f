package demo

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to the JSON endpoints that take one.
// The payer owns no order, so no payment reaches the (unreachable) gateway: every
// answer must be a JSON 200, 400 or 404, never a panic.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{`{"amount":5000}`, `{"amount":"5000"}`, `{"orderId":"ORD-00000001","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451"}`,
		`{"updateState":"FORCE_OPEN"}`, `{"orderId":"x","status":"SUCCESS"}`, ``, `[`, `null`, `{"amount":1e400}`} {
		f.Add(seed)
	}
	s, err := New(Config{PGBaseURL: "http://127.0.0.1:1", DBLatency: NoDBLatency,
		Spring: mustParse(f, "management:\n  endpoints:\n    web:\n      exposure:\n        include: '*'\n")}, nil)
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/api/v1/orders", "/api/v1/payments", "/api/v1/payments/callback", "/actuator/circuitbreakers/fuzz"} {
			req := httptest.NewRequest("POST", path, strings.NewReader(body))
			user := "buyer"
			if path == "/api/v1/payments" {
				user = "payer" // owns no order: payments stop before the gateway
			}
			req.Header.Set("X-USER-ID", user)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 400, 404:
			default:
				t.Fatalf("POST %s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("POST %s %q: answer is not JSON: %s", path, body, rec.Body)
			}
		}
	})
}

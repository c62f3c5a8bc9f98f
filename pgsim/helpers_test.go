package pgsim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// quiet is a behaviour with no errors and no latency.
func quiet() behavior.Behavior {
	b := behavior.DefaultBehavior()
	b.ErrorRate = 0
	b.Latency = behavior.Fixed{}
	return b
}

// newTestServer builds a server on an httptest server and closes both at the end.
func newTestServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, ts.URL
}

type reply struct {
	status int
	body   string
	header http.Header
}

// do sends one request; user "" means no X-USER-ID header.
func do(t *testing.T, c *http.Client, method, url, user, body string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-USER-ID", user)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s %s: %v", method, url, err)
	}
	return reply{status: resp.StatusCode, body: string(data), header: resp.Header}
}

const validBody = `{"orderId":"1351039135","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000,"callbackUrl":"http://localhost:8080/api/v1/payments/callback"}`

func failBody(code, msg string) string {
	return `{"meta":{"result":"FAIL","errorCode":"` + code + `","message":"` + msg + `"}}`
}

// httptestServer serves h and returns its URL; closed at the end of the test.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

package fault

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamLog is an httptest upstream that records what it received.
type upstreamLog struct {
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func (u *upstreamLog) add(r *http.Request, body string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reqs = append(u.reqs, r)
	u.body = append(u.body, body)
}

func (u *upstreamLog) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.reqs)
}

func (u *upstreamLog) last() (*http.Request, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.reqs) == 0 {
		return nil, ""
	}
	return u.reqs[len(u.reqs)-1], u.body[len(u.body)-1]
}

// echoUpstream answers 200 "echo METHOD PATH?QUERY" and records requests.
func echoUpstream(t *testing.T) (*httptest.Server, *upstreamLog) {
	t.Helper()
	log := &upstreamLog{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		log.add(r, string(b))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Upstream", "yes")
		_, _ = io.WriteString(w, "echo "+r.Method+" "+r.URL.RequestURI())
	}))
	t.Cleanup(up.Close)
	return up, log
}

// newProxy builds a fault server in front of upstream on an httptest server.
func newProxy(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, ts.URL
}

// do sends one request and returns status, body and the transport error.
func do(t *testing.T, c *http.Client, method, url, body string, hdr map[string]string) (int, string, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func behaviorWith(f func(*Behavior)) Behavior {
	b := NoFaults()
	f(&b)
	return b
}

// fakeClock is a settable clock for phases.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

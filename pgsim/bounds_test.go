package pgsim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConfigBounds: settings that would make pgsim allocate without bound are
// configuration errors naming the limit.
func TestConfigBounds(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"callback workers", Config{CallbackWorkers: 100_000_000}, fmt.Sprint(MaxCallbackWorkers)},
		{"callback queue", Config{CallbackQueue: 1 << 40}, fmt.Sprint(MaxCallbackQueue)},
		{"max orders", Config{MaxOrders: 1 << 40}, fmt.Sprint(MaxTrackedEntries)},
		{"max attempts", Config{MaxAttempts: 1 << 40}, fmt.Sprint(MaxTrackedEntries)},
		{"negative max conns", Config{Limits: ServerLimits{MaxConns: -1}}, "max connections"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, nil)
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want a *ConfigError naming %s", err, tc.want)
			}
		})
	}
}

// startServer starts a real listener (Start), closed at the end of the test.
func startServer(t *testing.T, cfg Config, addr string) *Server {
	t.Helper()
	s, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// closedWithin reports whether the server closes conn (a read sees EOF or an
// error other than our own deadline) before d passes.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerCutsSlowAndIdleClients: a body trickled at a few bytes a second
// is cut at ReadTimeout, an idle keep-alive connection at IdleTimeout. The
// timeouts are 300 ms; the test waits up to 20 s (60 times more, room for any
// load) for the close, and the old server (no read or idle timeout) never
// closes within it.
func TestServerCutsSlowAndIdleClients(t *testing.T) {
	limits := ServerLimits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
	s := startServer(t, Config{Behavior: quiet(), Limits: limits}, "127.0.0.1:0")
	addr := strings.TrimPrefix(s.URL(), "http://")

	t.Run("trickled body", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /api/v1/payments HTTP/1.1\r\nHost: x\r\nX-USER-ID: u\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() { // one byte every 100 ms, until the server hangs up
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		if !closedWithin(conn, 20*time.Second) {
			t.Fatal("a body trickled at 10 bytes/s kept its connection open for 20 s; want it cut at ReadTimeout (300 ms)")
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /__pgsim/behavior HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !closedWithin(conn, 20*time.Second) {
			t.Fatal("an idle keep-alive connection stayed open for 20 s; want it closed at IdleTimeout (300 ms)")
		}
	})
}

// TestServerCapsConnections: with MaxConns 4 and four connections held open,
// a fifth client is not served until one of them closes.
func TestServerCapsConnections(t *testing.T) {
	limits := ServerLimits{MaxConns: 4, ReadHeaderTimeout: time.Minute, ReadTimeout: time.Minute, IdleTimeout: time.Minute}
	s := startServer(t, Config{Behavior: quiet(), Limits: limits}, "127.0.0.1:0")
	addr := strings.TrimPrefix(s.URL(), "http://")
	var held []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/__pgsim/behavior", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// Not served while 4 connections are held: any answer would fail the test,
	// at any load (a slow machine only makes an answer less likely).
	if err := get(500 * time.Millisecond); err == nil {
		t.Fatal("a fifth connection was served while MaxConns = 4 were open")
	}
	held[0].Close()
	if err := get(20 * time.Second); err != nil {
		t.Fatalf("after one held connection closed, the request still failed: %v", err)
	}
}

// TestLogAndStoreBoundedInBytes: 40 payments with 200 KB orderIds (the issue's
// reproduction, 200 with 900 KB, added 207 MB) keep the attempt log's ids at MaxStoredIDBytes and
// the transaction store within MaxStoreBytes; answers still carry the full id.
func TestLogAndStoreBoundedInBytes(t *testing.T) {
	const storeBudget = 2 << 20
	s, url := newTestServer(t, Config{Behavior: quiet(), Seed: 1, MaxStoreBytes: storeBudget})
	big := strings.Repeat("o", 200_000)
	client := &http.Client{Timeout: 20 * time.Second}
	for i := range 40 {
		id := fmt.Sprintf("%s%06d", big, i)
		body := `{"orderId":"` + id + `","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000,"callbackUrl":"http://localhost:8080/cb"}`
		r := do(t, client, http.MethodPost, url+"/api/v1/payments", "u1", body)
		if r.status != http.StatusOK {
			t.Fatalf("payment %d: status %d %s", i, r.status, r.body[:min(len(r.body), 200)])
		}
	}
	for _, a := range s.Attempts() {
		if len(a.OrderID) > MaxStoredIDBytes {
			t.Fatalf("attempt log stored a %d-byte orderId; want at most %d", len(a.OrderID), MaxStoredIDBytes)
		}
	}
	st := s.Stats()
	if st.Attempts.Orders != 40 {
		t.Errorf("%d distinct orders tracked, want 40 (stored ids must stay distinct)", st.Attempts.Orders)
	}
	used, evicted := s.store.usage()
	if used > storeBudget || evicted == 0 {
		t.Errorf("store holds %d bytes (budget %d), evicted %d; want within budget with evictions", used, storeBudget, evicted)
	}
	// The newest transaction is still there with its full orderId.
	last := fmt.Sprintf("%s%06d", big, 39)
	r := do(t, client, http.MethodGet, url+"/api/v1/payments?orderId="+last, "u1", "")
	if r.status != http.StatusOK || !strings.Contains(r.body, last) {
		t.Errorf("newest order: status %d, full id in answer %v", r.status, strings.Contains(r.body, last))
	}
	orders, attempts := Config{}.LogCaps()
	if orders*orderEntryBytes > DefaultMaxLogBytes/2 || attempts*attemptRecBytes > DefaultMaxLogBytes/2 {
		t.Errorf("LogCaps() = %d orders, %d attempts: over the %d-byte budget", orders, attempts, DefaultMaxLogBytes)
	}
}

// TestControlAPINeedsTokenOffLoopback: a server on a non-loopback address
// refuses the control API without a token and warns; with --control-token it
// needs the header. Needs a non-loopback address on this machine (any
// container has one); its absence fails the test with what is missing.
func TestControlAPINeedsTokenOffLoopback(t *testing.T) {
	ip := nonLoopbackIP(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := New(Config{Behavior: quiet()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), net.JoinHostPort(ip, "0")); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if !strings.Contains(logs.String(), "non-loopback") {
		t.Errorf("no warning about the non-loopback address in the log: %s", logs.String())
	}
	r := do(t, nil, http.MethodGet, s.URL()+"/__pgsim/stats", "", "")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "--control-token") {
		t.Errorf("control API without token off loopback: %d %s; want 403 naming --control-token", r.status, r.body)
	}
	// The payment API still works.
	if r := do(t, nil, http.MethodPost, s.URL()+"/api/v1/payments", "u1", validBody); r.status != http.StatusOK {
		t.Errorf("payment off loopback: %d %s", r.status, r.body)
	}

	tok := startServer(t, Config{Behavior: quiet(), ControlToken: "s3cret"}, net.JoinHostPort(ip, "0"))
	if r := do(t, nil, http.MethodGet, tok.URL()+"/__pgsim/stats", "", ""); r.status != http.StatusForbidden {
		t.Errorf("token server without header: %d, want 403", r.status)
	}
	req, _ := http.NewRequest(http.MethodGet, tok.URL()+"/__pgsim/stats", nil)
	req.Header.Set(ControlTokenHeader, "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("token server with header: %d, want 200", resp.StatusCode)
	}
	// On loopback without a token the control API stays open (the default).
	lo := startServer(t, Config{Behavior: quiet()}, "127.0.0.1:0")
	if r := do(t, nil, http.MethodGet, lo.URL()+"/__pgsim/stats", "", ""); r.status != http.StatusOK {
		t.Errorf("loopback control API: %d, want 200", r.status)
	}
}

func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("list interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatal("this test needs a non-loopback IPv4 address on the machine (none found); it binds it to check the control API's refusal")
	return ""
}

// TestFirstRefusalLoggedWithFix: the first payment refused for a callbackUrl
// outside the prefix is logged with the fix; later ones of the same kind are not.
func TestFirstRefusalLoggedWithFix(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := New(Config{Behavior: quiet()}, logger)
	if err != nil {
		t.Fatal(err)
	}
	url := httptestServer(t, s.Handler())
	defer s.Close(context.Background())
	body := `{"orderId":"1351039135","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000,"callbackUrl":"http://localhost:18080/api/v1/payments/callback"}`
	for range 3 {
		if r := do(t, nil, http.MethodPost, url+"/api/v1/payments", "u1", body); r.status != http.StatusBadRequest {
			t.Fatalf("status %d, want 400", r.status)
		}
	}
	do(t, nil, http.MethodPost, url+"/api/v1/payments", "", validBody) // another kind: no X-USER-ID
	out := logs.String()
	if n := strings.Count(out, "kind=callback-prefix"); n != 1 {
		t.Errorf("callback-prefix refusal logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "--callback-prefix http://localhost:18080") {
		t.Errorf("the log does not give the fix --callback-prefix http://localhost:18080:\n%s", out)
	}
	if !strings.Contains(out, "kind=missing-user-header") {
		t.Errorf("the missing header refusal is not logged:\n%s", out)
	}
}

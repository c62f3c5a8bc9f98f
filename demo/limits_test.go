package demo

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
)

// TestOversizedBodyIs413: a body over MaxBodyBytes gets 413 with Spring's
// error body, whether announced by Content-Length or streamed chunked.
func TestOversizedBodyIs413(t *testing.T) {
	s := startService(t, Config{})
	big := `{"userId":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(strings.NewReader(big)) // unknown length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/orders", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-USER-ID", "u1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), `"status":413`) {
				t.Fatalf("status %d body %s, want 413 with Spring's error body", resp.StatusCode, data)
			}
		})
	}
}

// TestTrickledBodyIsCut: a body sent a byte at a time is cut at the read
// timeout (300 ms here); the test waits up to 20 s, 60 times more, for any load.
func TestTrickledBodyIsCut(t *testing.T) {
	s := startService(t, Config{Limits: pgsim.ServerLimits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/orders HTTP/1.1\r\nHost: x\r\nX-USER-ID: u\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
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
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a trickled body kept its connection open for 20 s; want it cut at the read timeout")
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// pgsimOutput is a goroutine-safe stdout for a running command.
type pgsimOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *pgsimOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *pgsimOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// startPgsimCLI runs `cbprobe pgsim args...` until the test ends and returns its URL.
func startPgsimCLI(t *testing.T, args ...string) (string, *pgsimOutput) {
	t.Helper()
	out, errOut := &pgsimOutput{}, &pgsimOutput{}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand(out, errOut)
	root.SetArgs(append([]string{"pgsim", "--listen", "127.0.0.1:0"}, args...))
	done := make(chan int, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		done <- exitCode(ctx, err)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitInterrupted {
				t.Errorf("exit code after Ctrl-C %d, want %d", code, exitInterrupted)
			}
			if !strings.Contains(out.String(), "pgsim stopped:") {
				t.Errorf("no stop summary in %q", out.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("pgsim did not stop within 10 s of cancellation")
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m := regexp.MustCompile(`pgsim listening on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String()); m != nil {
			return m[1], out
		}
		select {
		case code := <-done:
			t.Fatalf("pgsim exited with %d: %s %s", code, out.String(), errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("pgsim did not print its address: %q", out.String())
	return "", nil
}

func pgsimPost(t *testing.T, url, user, body string) (int, string, time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/api/v1/payments", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-USER-ID", user)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), time.Since(start)
}

const pgsimValid = `{"orderId":"1351039135","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451","amount":5000,"callbackUrl":"http://localhost:8080/api/v1/examples/callback"}`

func TestPgsimCommandSeed(t *testing.T) {
	url, out := startPgsimCLI(t, "--seed", "1")
	if !strings.Contains(out.String(), "behaviour: errors 40% (immediate), latency 100ms-500ms") {
		t.Errorf("banner lacks the behaviour: %q", out.String())
	}
	for range 5 {
		code, body, _ := pgsimPost(t, url, "135135", pgsimValid)
		okBody := regexp.MustCompile(`^\{"meta":\{"result":"SUCCESS"\},"data":\{"transactionKey":"\d{8}:TR:[0-9a-f]{6}","status":"PENDING"\}\}$`)
		failBody := `{"meta":{"result":"FAIL","errorCode":"Internal Server Error","message":"현재 서버가 불안정합니다. 잠시 후 다시 시도해주세요."}}`
		if !(code == 200 && okBody.MatchString(body)) && !(code == 500 && body == failBody) {
			t.Fatalf("valid payment: %d %s", code, body)
		}
	}
	code, body, _ := pgsimPost(t, url, "", pgsimValid)
	if want := `{"meta":{"result":"FAIL","errorCode":"Bad Request","message":"유저 ID 헤더는 필수입니다."}}`; code != 400 || body != want {
		t.Fatalf("no header: %d %s", code, body)
	}
}

func TestPgsimCommandSlow(t *testing.T) {
	url, _ := startPgsimCLI(t, "--slow", "--seed", "2")
	for i := range 8 {
		code, body, elapsed := pgsimPost(t, url, "u1", strings.Replace(pgsimValid, "1351039135", "slow-order-"+string(rune('a'+i)), 1))
		// 150 ms is a hard lower bound. No wall-clock upper bound (it fails on a
		// loaded CI machine): the attempt log below shows each delay pgsim chose.
		if code != 200 || elapsed < 150*time.Millisecond {
			t.Fatalf("slow call %d: %d %s after %v", i, code, body, elapsed)
		}
	}
	resp, err := http.Get(url + "/__pgsim/attempts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	n := 0
	for dec.More() {
		var a struct {
			Outcome  string        `json:"outcome"`
			Injected time.Duration `json:"injected"`
		}
		if err := dec.Decode(&a); err != nil {
			t.Fatalf("attempt log line %d: %v", n+1, err)
		}
		n++
		if a.Outcome != "success" || a.Injected < 150*time.Millisecond || a.Injected > 300*time.Millisecond {
			t.Errorf("attempt %d: %s after %v injected, want success with 150–300 ms", n, a.Outcome, a.Injected)
		}
	}
	if n != 8 {
		t.Errorf("attempt log has %d attempts, want 8", n)
	}
}

func TestPgsimCommandErrorRateZero(t *testing.T) {
	url, _ := startPgsimCLI(t, "--error-rate", "0", "--latency", "0", "--seed", "3")
	for i := range 50 {
		if code, body, _ := pgsimPost(t, url, "u1", pgsimValid); code != 200 {
			t.Fatalf("call %d with --error-rate 0: %d %s", i, code, body)
		}
	}
}

func TestPgsimCommandBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "error rate", args: []string{"--error-rate", "1.5"}, want: "--error-rate: 1.5 is not a probability"},
		{name: "latency", args: []string{"--latency", "fast"}, want: "--latency: distribution"},
		{name: "timing", args: []string{"--error-timing", "later"}, want: "--error-timing"},
		{name: "speed", args: []string{"--speed", "0"}, want: "--speed"},
		{name: "config file", args: []string{"--config", "/nonexistent/pgsim.yaml"}, want: "/nonexistent/pgsim.yaml: read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCommand(&out, &errOut)
			root.SetArgs(append([]string{"pgsim", "--listen", "127.0.0.1:0"}, tc.args...))
			ctx := context.Background()
			err := root.ExecuteContext(ctx)
			if code := exitCode(ctx, err); code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("exit %d, err %v; want %d and %q", code, err, exitUsage, tc.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func runWatchCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx := context.Background()
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !isSilent(err) {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(ctx, err)
}

func TestWatchUnreachableExits3(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, errOut, code := runWatchCLI(t, "watch", "--actuator", url, "--header", "Authorization: Bearer t0psecret")
	if code != 3 || !strings.Contains(errOut, "connection refused") || strings.Contains(errOut, "t0psecret") {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
}

func TestWatchJSON(t *testing.T) {
	polls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/actuator/circuitbreakers":
			polls++
			state := "CLOSED"
			if polls > 2 { // the start-up probe and the first sample see it closed
				state = "OPEN"
			}
			fmt.Fprintf(w, `{"circuitBreakers":{"pg":{"failureRate":"65.0%%","slowCallRate":"10.0%%","failureRateThreshold":"60.0%%","slowCallRateThreshold":"50.0%%","bufferedCalls":20,"failedCalls":13,"slowCalls":2,"slowFailedCalls":0,"notPermittedCalls":0,"state":%q}}}`, state)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errOut, code := runWatchCLI(t, "watch", "--actuator", srv.URL, "--json", "--duration", "400ms", "--interval", "50ms")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	var sawTransition, sawSummary bool
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch rec.Type {
		case "transition":
			sawTransition = strings.Contains(string(rec.Data), `"cause":"failure-rate"`)
		case "summary":
			sawSummary = true
		}
	}
	if !sawTransition || !sawSummary || strings.Contains(out, "\x1b[") {
		t.Fatalf("transition %v summary %v; output:\n%s", sawTransition, sawSummary, out)
	}
}

func TestLintExitCodes(t *testing.T) {
	if _, _, code := runWatchCLI(t, "lint", "testdata/does-not-exist.yml"); code != 2 {
		t.Errorf("missing file: exit %d, want 2", code)
	}
	out, errOut, code := runWatchCLI(t, "lint", "../../springconf/testdata/traps.yml", "--format", "json")
	var findings []struct{ ID, Severity string }
	if err := json.Unmarshal([]byte(out), &findings); err != nil {
		t.Fatalf("lint --json: %v (%s)", err, errOut)
	}
	wantCode := 0
	for _, f := range findings {
		if f.Severity == "error" {
			wantCode = 1
		}
	}
	if len(findings) == 0 || code != wantCode {
		t.Fatalf("%d findings, exit %d, want %d", len(findings), code, wantCode)
	}
	if _, _, code := runWatchCLI(t, "lint", "../../springconf/testdata/traps.yml", "--error-rate", "0.4"); code != 2 {
		t.Errorf("--error-rate without --latency: exit %d, want 2", code)
	}
}

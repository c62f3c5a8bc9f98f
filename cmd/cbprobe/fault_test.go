package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Bad values on the command line exit 2 with the flag or file line named.
func TestFaultCommandRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	badStub := filepath.Join(dir, "stub.yaml")
	if err := os.WriteFile(badStub, []byte("routes:\n  - path: /a\n    status: 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badRules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(badRules, []byte("- path: /a\n  behavior:\n    errorRate: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"neither upstream nor stub", nil, "give --upstream URL or --stub FILE"},
		{"both", []string{"--upstream", "http://127.0.0.1:1", "--stub", badStub}, "not both"},
		{"bad upstream", []string{"--upstream", "ftp://x"}, "--upstream"},
		{"error rate", []string{"--upstream", "http://127.0.0.1:1", "--error-rate", "1.5"}, "--error-rate"},
		{"error status", []string{"--upstream", "http://127.0.0.1:1", "--error-rate", "0.5", "--error-status", "42"}, "--error-status"},
		{"latency", []string{"--upstream", "http://127.0.0.1:1", "--latency", "5ms-1ms"}, "--latency"},
		{"rates over 1", []string{"--upstream", "http://127.0.0.1:1", "--reset-rate", "0.6", "--malformed-rate", "0.6"}, "--malformed-rate"},
		{"max body", []string{"--upstream", "http://127.0.0.1:1", "--max-body", "0"}, "--max-body"},
		{"stub line", []string{"--stub", badStub}, "stub.yaml:3: routes[0].status"},
		{"rules line", []string{"--upstream", "http://127.0.0.1:1", "--rules", badRules}, "rules.yaml:3: [0].behavior.errorRate"},
		{"missing stub", []string{"--stub", filepath.Join(dir, "none.yaml")}, "none.yaml: read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCommand(&out, &errOut)
			root.SetArgs(append([]string{"fault", "--listen", "127.0.0.1:0"}, tc.args...))
			ctx := context.Background()
			err := root.ExecuteContext(ctx)
			if code := exitCode(ctx, err); code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("exit %d, err %v; want exit 2 naming %q", code, err, tc.want)
			}
		})
	}
}

// The command proxies with the flags' behaviour and stops on Ctrl-C with a summary.
func TestFaultCommandRuns(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream "+r.URL.Path)
	}))
	defer up.Close()
	out := &pgsimOutput{}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand(out, &pgsimOutput{})
	root.SetArgs([]string{"fault", "--listen", "127.0.0.1:0", "--upstream", up.URL, "--error-rate", "1", "--error-status", "503", "--seed", "1"})
	done := make(chan int, 1)
	go func() { done <- exitCode(ctx, root.ExecuteContext(ctx)) }()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`fault listening on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no address printed: %q", out.String())
	}
	resp, err := http.Get(url + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("status %d, want the injected 503", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted || !strings.Contains(out.String(), "fault stopped: 1 attempts") {
			t.Errorf("exit %d, output %q", code, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fault did not stop within 10 s of Ctrl-C")
	}
}

// A named experiment takes --flow FILE; a missing or bad flow file exits 2 naming it.
func TestExperimentFlowFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "flow.yaml")
	if err := os.WriteFile(bad, []byte("steps:\n  - nope: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "missing.yaml"), bad} {
		var out, errOut bytes.Buffer
		root := newRootCommand(&out, &errOut)
		root.SetArgs([]string{"experiment", "retry", "--flow", f, "--out", filepath.Join(dir, "run"), "-q"})
		ctx := context.Background()
		err := root.ExecuteContext(ctx)
		if code := exitCode(ctx, err); code != exitUsage || err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("--flow %s: exit %d, err %v; want exit 2 naming the file", f, code, err)
		}
	}
}

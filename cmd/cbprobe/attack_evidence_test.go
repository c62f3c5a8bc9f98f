package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cbprobe/cbprobe/results"
)

// forwarder is a TCP forwarder in front of a server that can be paused: a
// paused forwarder drops its open connections and holds new ones without
// answering, as a stopped process or a dead proxy would.
type forwarder struct {
	ln     net.Listener
	to     string
	paused atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newForwarder(t *testing.T, to string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, to: to}
	go f.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		f.closeAll()
	})
	return f
}

func (f *forwarder) URL() string { return "http://" + f.ln.Addr().String() }

func (f *forwarder) serve() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		if f.paused.Load() {
			continue // held open, never answered
		}
		go func() {
			up, err := net.Dial("tcp", f.to)
			if err != nil {
				_ = c.Close()
				return
			}
			f.mu.Lock()
			f.conns = append(f.conns, up)
			f.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			_, _ = io.Copy(c, up)
			_ = c.Close()
		}()
	}
}

// Pause drops every open connection and holds every new one unanswered.
func (f *forwarder) Pause() {
	f.paused.Store(true)
	f.closeAll()
}

func (f *forwarder) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
}

// afterPayments calls fn once, when the n-th payment arrives.
func afterPayments(h http.Handler, n int32, fn func()) http.Handler {
	var count atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/payments" && count.Add(1) == n {
			fn()
		}
		h.ServeHTTP(w, r)
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkInconclusive asserts that every file of the run carries the same
// inconclusive verdict and that stderr named want.
func checkInconclusive(t *testing.T, dir, stderr string, code int, want string) *results.Record {
	t.Helper()
	if code != exitInfrastructure {
		t.Errorf("exit %d, want %d (inconclusive)\nstderr:\n%s", code, exitInfrastructure, stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr does not name %q:\n%s", want, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Verdict != results.VerdictInconclusive {
		t.Errorf("run.json verdict %q, want inconclusive", rec.Run.Verdict)
	}
	if md := readFile(t, filepath.Join(dir, results.SummaryFile)); !strings.Contains(md, "verdict **inconclusive**") || !strings.Contains(md, want) {
		t.Errorf("summary.md lacks the inconclusive verdict or %q:\n%s", want, md)
	}
	if x := readFile(t, filepath.Join(dir, results.JUnitFile)); !strings.Contains(x, `type="inconclusive"`) || !strings.Contains(x, `value="inconclusive"`) {
		t.Errorf("junit.xml is green for an inconclusive run:\n%s", x)
	}
	if h := readFile(t, filepath.Join(dir, results.HTMLFile)); !strings.Contains(h, `data-verdict="inconclusive"`) {
		t.Error("report.html does not carry the inconclusive verdict")
	}
	return rec
}

// TestAttackPausedMetricsIsInconclusive is the TCP-forwarder case:
// the actuator stops answering after the third payment, the breaker opens
// after the tenth and the service refuses the rest. cbprobe saw no OPEN: it
// must say it could not see, exit 3, and name the gap; never "complete".
// Both ways an endpoint goes away are covered: a paused forwarder (open
// connections dropped, new ones held) and an actuator whose every poll hangs
// without an error (the poll that hangs is waited for until it times out).
func TestAttackPausedMetricsIsInconclusive(t *testing.T) {
	tests := []struct {
		name string
		hang bool // the actuator holds every poll instead of the forwarder pausing
	}{
		{"forwarder paused", false},
		{"polls hang", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &trippingService{after: 10}
			var fwd *forwarder
			var hung atomic.Bool
			release := make(chan struct{})
			inner := afterPayments(svc.handler(), 3, func() {
				if tc.hang {
					hung.Store(true)
				} else {
					fwd.Pause()
				}
			})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hung.Load() && strings.HasPrefix(r.URL.Path, "/actuator") {
					select { // held until the poller gives up
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				inner.ServeHTTP(w, r)
			}))
			defer srv.Close()
			defer close(release) // before srv.Close waits for the held polls
			fwd = newForwarder(t, srv.Listener.Addr().String())
			dir := filepath.Join(t.TempDir(), "run")
			_, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--users", "1", "--requests", "30",
				"--actuator", fwd.URL(), "--poll-interval", "20ms", "--out", dir, "--color", "never")
			rec := checkInconclusive(t, dir, stderr, code, "refusals, no OPEN seen: metrics unreachable from")
			obs := rec.Run.Arms[0].Observation
			if obs == nil || obs.Refusals != 20 || len(obs.Gaps) == 0 || !obs.Gaps[0].Decisive {
				t.Errorf("observation %+v, want 20 refusals and a decisive gap", obs)
			}
		})
	}
}

// TestAttackMetricsFaultsNamedAsCause: health without details, an HTML page
// and truncated JSON. Each is named as the cause (at once on stderr and in
// the verdict), not only in a WARN log line, and the run is inconclusive.
func TestAttackMetricsFaultsNamedAsCause(t *testing.T) {
	tests := []struct {
		name, path, body, want string
	}{
		{"health without details", "/actuator/health", `{"status":"UP","components":{"circuitBreakers":{"status":"UP"}}}`, "show-details=always"},
		{"HTML page", "/actuator/circuitbreakers", `<!DOCTYPE html><html><body>Login</body></html>`, "HTML"},
		{"truncated JSON", "/actuator/circuitbreakers", `{"circuitBreakers":{"pg":{"failureRate":"-1.0%","slowCall`, "fix:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &trippingService{after: 5}
			inner := svc.handler()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == tc.path:
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, tc.body)
				case tc.path == "/actuator/health" && r.URL.Path == "/actuator/circuitbreakers":
					http.NotFound(w, r)
				default:
					inner.ServeHTTP(w, r)
				}
			}))
			defer srv.Close()
			dir := filepath.Join(t.TempDir(), "run")
			_, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--users", "1", "--requests", "10",
				"--actuator", srv.URL, "--poll-interval", "20ms", "--out", dir, "--color", "never")
			checkInconclusive(t, dir, stderr, code, tc.want)
			if !strings.Contains(stderr, "cbprobe: metrics:") {
				t.Errorf("the metrics fault was not reported when seen:\n%s", stderr)
			}
		})
	}
}

// TestAttackTargetDiesIsNotComplete: the target is killed mid-run. The run
// says so (at once and in the verdict) and exits 3, not "complete" and 0.
func TestAttackTargetDiesIsNotComplete(t *testing.T) {
	svc := &trippingService{after: 1000}
	var dead atomic.Bool
	var srv *httptest.Server
	inner := afterPayments(svc.handler(), 10, func() {
		dead.Store(true)
		_ = srv.Listener.Close() // no new connection is accepted
	})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dead.Load() { // a kept-alive connection dies without an answer
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--users", "1", "--requests", "30",
		"--out", dir, "--color", "never")
	checkInconclusive(t, dir, stderr, code, "the target is not answering")
	if strings.Contains(stdout, "  complete") {
		t.Errorf("the summary calls the run complete:\n%s", stdout)
	}
}

// TestAttackOutExistsIsUsage: an existing --out is the user's to fix (exit
// 2), and two runs in the same second get distinct default directories.
func TestAttackOutExistsIsUsage(t *testing.T) {
	srv := httptest.NewServer((&trippingService{after: 1000}).handler())
	defer srv.Close()
	dir := t.TempDir()
	_, stderr, code := runCLI(context.Background(), "attack", "--target", srv.URL, "--users", "1", "--requests", "1", "--out", dir)
	if code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Errorf("existing --out: exit %d, want %d with 'already exists'\n%s", code, exitUsage, stderr)
	}
	t.Chdir(t.TempDir())
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i := range codes {
		wg.Go(func() {
			_, _, codes[i] = runCLI(context.Background(), "attack", "--target", srv.URL, "--users", "1", "--requests", "1", "-q")
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir("cbprobe-results")
	if len(entries) != 3 || codes[0]+codes[1]+codes[2] != 0 {
		t.Errorf("three runs at once: exit codes %v, %d run directories, want 0s and 3", codes, len(entries))
	}
	for _, e := range entries {
		files, _ := os.ReadDir(filepath.Join("cbprobe-results", e.Name()))
		for _, f := range files {
			info, err := f.Info()
			if err == nil && info.Mode().Perm()&0o044 != 0o044 {
				t.Errorf("%s/%s has mode %v, want every artefact readable by all (0644)", e.Name(), f.Name(), info.Mode().Perm())
			}
		}
	}
}

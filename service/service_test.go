package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
)

// fakeBin is the fake service (testdata/fakesvc) built once by TestMain.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cbprobe-service-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakesvc")
	out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakesvc").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/fakesvc (needs the go tool on PATH): %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testConfig runs the fake service with args. The timeouts are bounds, not
// expectations: the fake starts in milliseconds, but the test machine may be
// loaded (load averages of 40 on 2 cores were seen), so a healthy start gets 60 s.
func testConfig(t *testing.T, args string) Config {
	t.Helper()
	dir := t.TempDir()
	return Config{
		Command:      fakeBin + " " + args,
		LogPath:      filepath.Join(dir, "service-test.log"),
		RunDir:       dir,
		Name:         "test",
		StartTimeout: 60 * time.Second,
		StopGrace:    5 * time.Second,
		DownGrace:    time.Second,
		PollInterval: 50 * time.Millisecond,
	}
}

// assertNoneLeft fails unless the process group pgid and every pid are gone
// (dead or zombies waiting to be reaped), checked by scanning /proc.
func assertNoneLeft(t *testing.T, pgid int, pids ...int) {
	t.Helper()
	if pgid > 0 {
		if n, ok := liveMembers(pgid); !ok {
			t.Fatal("cannot read /proc to check for leftover processes")
		} else if n > 0 {
			t.Errorf("process group %d still has %d live processes: %v", pgid, n, groupMembers(pgid))
		}
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		p, err := fs.Proc(pid)
		if err != nil {
			continue // gone
		}
		if st, err := p.Stat(); err == nil && st.State != "Z" && st.State != "X" {
			t.Errorf("process %d (%s) is still running (state %s)", pid, st.Comm, st.State)
		}
	}
}

// readPIDs reads the pids the fake service wrote to path.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	defer f.Close()
	var pids []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// waitPIDs waits (bounded) until path holds n pids.
func waitPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.Count(string(b), "\n") >= n {
			return readPIDs(t, path)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %d pids", path, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartStopHealthy(t *testing.T) {
	cfg := testConfig(t, "-mode up")
	bracket := "resilience4j.circuitbreaker.instances[PgPaymentClient#requestPayment(String,PaymentRequest)].sliding-window-size"
	cfg.Properties = map[string]string{
		bracket: "20",
		"resilience4j.timelimiter.configs.default.timeout-duration": "600ms",
		"pg.retry-max-attempts": "3",
	}
	cfg.GatewayURL = "http://127.0.0.1:9"
	var stages []Stage
	cfg.Progress = func(p Progress) {
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
	}
	p, err := Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_, _ = p.Stop(context.Background())
		}
	}()
	if !strings.HasPrefix(p.URL(), "http://127.0.0.1:") || p.Port() == 0 {
		t.Errorf("URL %q port %d", p.URL(), p.Port())
	}
	resp, err := http.Get(p.URL() + "/props")
	if err != nil {
		t.Fatal(err)
	}
	var props map[string]string
	err = json.NewDecoder(resp.Body).Decode(&props)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		bracket: "20",
		"resilience4j.timelimiter.configs.default.timeout-duration": "600ms",
		"pg.retry-max-attempts": "3",
		"pg.base-url":           "http://127.0.0.1:9",
		"server.port":           strconv.Itoa(p.Port()),
		"server.address":        "127.0.0.1",
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("the service read %s=%q, want %q (all: %v)", k, props[k], v, props)
		}
	}
	rec, err := p.Stop(context.Background())
	stopped = true
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	assertNoneLeft(t, p.PID(), p.PID())
	if rec.StartSeconds <= 0 || rec.HealthWaitSeconds < 0 || rec.HealthWaitSeconds > rec.StartSeconds || rec.StopSeconds <= 0 {
		t.Errorf("timings: start %g health %g stop %g", rec.StartSeconds, rec.HealthWaitSeconds, rec.StopSeconds)
	}
	if rec.Killed || rec.Exit == "" || rec.Error != "" {
		t.Errorf("record: killed %v exit %q error %q", rec.Killed, rec.Exit, rec.Error)
	}
	if rec.Log != "service-test.log" || rec.Command != cfg.Command || rec.PID != p.PID() {
		t.Errorf("record: %+v", rec)
	}
	log, _ := os.ReadFile(cfg.LogPath)
	if !strings.Contains(string(log), "Tomcat started on port "+strconv.Itoa(p.Port())) {
		t.Errorf("log lacks the service's output:\n%s", log)
	}
	if len(stages) == 0 || stages[0] != StageStarting || !contains(stages, StageHealthy) || stages[len(stages)-1] != StageStopped {
		t.Errorf("progress stages %v", stages)
	}
	// A second Stop returns the same record.
	if again, err := p.Stop(context.Background()); err != nil || again.StopSeconds != rec.StopSeconds {
		t.Errorf("second stop: %v %+v", err, again)
	}
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// slowStart is the start timeout of the cases that must reach it. It must exceed
// the fake service's own start (launch to listening), which took up to 2.6 s
// with a load average of 44 on 2 cores; the cases run in parallel, so the
// margin costs little.
const slowStart = 15 * time.Second

func TestStartFaults(t *testing.T) {
	cases := []struct {
		name    string
		args    string // fake service arguments; a leading "!" replaces the whole command
		tweak   func(*Config)
		fault   Fault
		message []string // substrings of the error message
	}{
		{name: "command not found", args: "!no-such-command-cbprobe-test --flag", fault: FaultNotFound,
			message: []string{"no-such-command-cbprobe-test", "exit status 127", "not found"}},
		{name: "exits at once", args: "-mode exit", fault: FaultExited,
			message: []string{"exit status 1", "APPLICATION FAILED TO START"}},
		{name: "listens on another port (log says so)", args: "-mode other-port", fault: FaultOtherPort,
			message: []string{"its log says it started on port"}},
		{name: "listens on another port (found in /proc)", args: "-mode quiet-other-port",
			tweak: func(c *Config) { c.StartTimeout = slowStart }, fault: FaultOtherPort,
			message: []string{"but its processes listen on"}},
		{name: "never healthy", args: "-mode never",
			tweak: func(c *Config) { c.StartTimeout = slowStart }, fault: FaultNeverHealthy,
			message: []string{"last answer: 503 STARTING", "fakesvc: log line 29"}},
		{name: "health never answers", args: "-mode hang",
			tweak: func(c *Config) { c.StartTimeout = slowStart }, fault: FaultNeverHealthy,
			message: []string{"no answer within"}},
		{name: "health DOWN", args: "-mode down", fault: FaultDown,
			message: []string{"503 DOWN", `"db":{"status":"DOWN"}`}},
		{name: "health endpoint missing", args: "-mode up", tweak: func(c *Config) { c.HealthPath = "/nope" },
			fault: FaultNeverHealthy, message: []string{"answered 404", "spring-boot-starter-actuator"}},
		{name: "working directory missing", args: "-mode up", tweak: func(c *Config) { c.Dir = "/no/such/dir/cbprobe" },
			fault: FaultLaunch, message: []string{"/no/such/dir/cbprobe"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // most of them wait for a timeout
			cfg := testConfig(t, tc.args)
			if strings.HasPrefix(tc.args, "!") {
				cfg.Command = tc.args[1:]
			}
			if tc.tweak != nil {
				tc.tweak(&cfg)
			}
			start := time.Now()
			p, err := Start(context.Background(), cfg, nil)
			if err == nil {
				_, _ = p.Stop(context.Background())
				t.Fatal("Start succeeded")
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v, want *Error", err, err)
			}
			if se.ExitCode() != 3 || se.Fault != tc.fault {
				t.Errorf("exit code %d fault %q, want 3 %q", se.ExitCode(), se.Fault, tc.fault)
			}
			msg := err.Error()
			for _, want := range append([]string{cfg.Command, string(tc.fault), "arm test"}, tc.message...) {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if len(se.Tail) > LogTailLines {
				t.Errorf("tail has %d lines, want at most %d", len(se.Tail), LogTailLines)
			}
			if se.Record.PID != 0 {
				assertNoneLeft(t, se.Record.PID, se.Record.PID)
			}
			if se.Record.Error == "" || se.Record.Command != cfg.Command {
				t.Errorf("record: %+v", se.Record)
			}
			// Bounded: every fault is found before the start timeout plus the stop grace.
			if d := time.Since(start); d > cfg.StartTimeout+cfg.StopGrace+killWait {
				t.Errorf("took %s", d)
			}
		})
	}
}

func TestStopKillsWhatIgnoresSIGTERM(t *testing.T) {
	cases := []struct {
		name  string
		args  string
		procs int // pids the fake writes to its pid file
	}{
		{name: "child ignores SIGTERM", args: "-mode ignore-term", procs: 1},
		{name: "grandchild ignores SIGTERM", args: "-mode spawn", procs: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.args)
			pidfile := filepath.Join(t.TempDir(), "pids")
			cfg.Command += " -pidfile " + pidfile
			cfg.StopGrace = 500 * time.Millisecond
			p, err := Start(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			pids := waitPIDs(t, pidfile, tc.procs)
			start := time.Now()
			rec, err := p.Stop(context.Background())
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
			if !rec.Killed {
				t.Error("record says no SIGKILL was needed")
			}
			if d := time.Since(start); d < cfg.StopGrace {
				t.Errorf("stopped after %s, before the %s grace", d, cfg.StopGrace)
			}
			if rec.StopSeconds < cfg.StopGrace.Seconds() {
				t.Errorf("stopSeconds %g < grace", rec.StopSeconds)
			}
			assertNoneLeft(t, p.PID(), append(pids, p.PID())...)
		})
	}
}

func TestContextCancelStopsService(t *testing.T) {
	t.Run("while running", func(t *testing.T) {
		cfg := testConfig(t, "-mode up")
		ctx, cancel := context.WithCancel(context.Background())
		p, err := Start(ctx, cfg, nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
		select {
		case <-p.stopDone:
		case <-time.After(cfg.StopGrace + killWait + 10*time.Second):
			t.Fatal("the service was not stopped after the context ended")
		}
		assertNoneLeft(t, p.PID(), p.PID())
		if _, err := p.Stop(ctx); err != nil {
			t.Errorf("stop after cancel: %v", err)
		}
	})
	t.Run("while starting", func(t *testing.T) {
		cfg := testConfig(t, "-mode up -delay 1h")
		pidfile := filepath.Join(t.TempDir(), "pids")
		cfg.Command += " -pidfile " + pidfile
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := Start(ctx, cfg, nil)
			done <- err
		}()
		pids := waitPIDs(t, pidfile, 1)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
		case <-time.After(cfg.StopGrace + killWait + 10*time.Second):
			t.Fatal("Start did not return after the context ended")
		}
		assertNoneLeft(t, 0, pids...)
	})
}

func TestServiceThatDiesDuringTheRun(t *testing.T) {
	cfg := testConfig(t, "-mode up")
	p, err := Start(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the killed service was not reaped")
	}
	rec, err := p.Stop(context.Background())
	var se *Error
	if !errors.As(err, &se) || se.Fault != FaultDied || se.ExitCode() != 3 {
		t.Fatalf("error %v, want %s", err, FaultDied)
	}
	if !strings.Contains(err.Error(), "killed by SIGKILL") || rec.Error == "" {
		t.Errorf("message %q record %+v", err, rec)
	}
	assertNoneLeft(t, p.PID(), p.PID())
}

// A start script that daemonises (a child in a session of its own keeps
// serving, the script exits 0) escapes the process group; it is found by the
// port it listens on and killed.
func TestDaemonLeavingTheGroupIsKilled(t *testing.T) {
	cfg := testConfig(t, "-mode daemon")
	pidfile := filepath.Join(t.TempDir(), "pids")
	cfg.Command += " -pidfile " + pidfile
	p, err := Start(context.Background(), cfg, nil)
	var notes []string
	if err == nil {
		rec, _ := p.Stop(context.Background())
		notes = rec.Notes
	} else {
		var se *Error
		if !errors.As(err, &se) {
			t.Fatalf("error %T %v", err, err)
		}
		notes = se.Record.Notes
	}
	pids := waitPIDs(t, pidfile, 2)
	assertNoneLeft(t, 0, pids...)
	if len(notes) == 0 || !strings.Contains(strings.Join(notes, " "), "had left the process group") {
		t.Errorf("notes %q do not report the escaped process", notes)
	}
}

func TestBuildEnv(t *testing.T) {
	env, err := buildEnv(
		[]string{"PATH=/bin", `SPRING_APPLICATION_JSON={"a":{"b":"1","c":"2"}}`, "SERVER_PORT=8080"},
		map[string]string{"EXTRA": "x"},
		map[string]string{"a.c": "3", "server.port": "1234"}, 1234)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s set twice", k)
		}
		got[k] = v
	}
	want := map[string]string{
		"PATH": "/bin", "EXTRA": "x", "SERVER_PORT": "1234",
		"SPRING_APPLICATION_JSON": `{"a":{"b":"1","c":"3"},"server":{"port":"1234"}}`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{name: "empty command", cfg: Config{Command: " "}, field: "--service"},
		{name: "relative health path", cfg: Config{Command: "x", HealthPath: "health"}, field: "--service-health"},
		{name: "negative timeout", cfg: Config{Command: "x", StartTimeout: -time.Second}, field: "--service-start-timeout"},
		{name: "bad env name", cfg: Config{Command: "x", Env: map[string]string{"A=B": "c"}}, field: "--service-env"},
		{name: "bad property key", cfg: Config{Command: "x", Properties: map[string]string{"a..b": "c"}}, field: "--service"},
		{name: "bad JSON in env", cfg: Config{Command: "x", Env: map[string]string{"SPRING_APPLICATION_JSON": "{"}}, field: "--service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate("--service")
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || ce.ExitCode() != 2 {
				t.Fatalf("error %v, want a ConfigError on %s", err, tc.field)
			}
		})
	}
	if err := (Config{Command: "java -jar app.jar"}).Validate("--service"); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestForArm(t *testing.T) {
	base := Config{Command: "x", Properties: map[string]string{"a": "1", "b": "1"}, Env: map[string]string{"E": "1"}}
	c := base.ForArm("retry-3", "/runs/r1", map[string]string{"b": "2"}, "http://127.0.0.1:5")
	if c.LogPath != "/runs/r1/service-retry-3.log" || c.Name != "retry-3" || c.GatewayURL != "http://127.0.0.1:5" {
		t.Errorf("%+v", c)
	}
	if c.Properties["a"] != "1" || c.Properties["b"] != "2" || base.Properties["b"] != "1" {
		t.Errorf("properties %v (base %v)", c.Properties, base.Properties)
	}
	if LogFileName("a/b c") != "service-a_b_c.log" {
		t.Errorf("LogFileName: %s", LogFileName("a/b c"))
	}
}

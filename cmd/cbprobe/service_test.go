package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/service"
	"github.com/cbprobe/cbprobe/springconf"
)

// helperEnv makes TestHelperDemoService act as a service: "demo" runs the
// reference service configured from SPRING_APPLICATION_JSON the way Spring
// reads it, "exit" fails at start like a Spring application that cannot start.
const helperEnv = "CBPROBE_TEST_SERVICE"

// helperCommand is the --service command that runs this test binary as the
// service (the os/exec helper-process pattern).
func helperCommand() string {
	return fmt.Sprintf("%s -test.run='^TestHelperDemoService$' -test.count=1", os.Args[0])
}

// TestHelperDemoService is not a test: run by --service with helperEnv set, it
// is the service under test. Without helperEnv it returns at once.
func TestHelperDemoService(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	fmt.Println("helper service: starting, mode", mode)
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "APPLICATION FAILED TO START: Failed to bind properties under 'pg'")
		os.Exit(1)
	}
	props, err := service.PropertiesFromJSON(os.Getenv("SPRING_APPLICATION_JSON"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	base, err := springconf.Parse("reference application.yml", springconf.ReferenceYAML(), springconf.YAML)
	if err == nil {
		base, err = base.Overlay("SPRING_APPLICATION_JSON", props)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	svc, err := demo.New(demo.Config{Spring: base}, nil)
	if err == nil {
		err = svc.Start(ctx, props["server.address"]+":"+props["server.port"])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		os.Exit(2)
	}
	fmt.Printf("helper service: Tomcat started on port %s (http), gateway %s\n", props["server.port"], svc.GatewayURL())
	<-ctx.Done()
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = svc.Close(c)
	fmt.Println("helper service: stopped")
	os.Exit(0)
}

// assertProcessGone fails when pid still runs (a zombie counts as gone).
func assertProcessGone(t *testing.T, pid int) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return
	}
	if f := strings.Fields(string(data)); len(f) > 2 && f[2] != "Z" && f[2] != "X" {
		t.Errorf("process %d is still running: %s", pid, data)
	}
}

// TestExperimentWithService runs both arms of the retry experiment against a
// service that cbprobe starts per arm: the reference service in a child
// process, configured only through SPRING_APPLICATION_JSON. That the arms'
// settings reached it shows in the gateway attempts per request: retry-1
// makes exactly one call per request, retry-3 more.
func TestExperimentWithService(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "experiment", "retry", "--service", helperCommand(),
		"--service-env", helperEnv+"=demo", "--service-stop-grace", "5s",
		"--predict-runs", "20", "--out", dir, "--color", "never")
	if code != exitOK && code != exitExpectation {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Run.Arms) != 2 {
		t.Fatalf("%d arms, want 2", len(rec.Run.Arms))
	}
	attempts := map[string]string{"retry-3": "3", "retry-1": "1"}
	for _, a := range rec.Run.Arms {
		s := a.Service
		if s == nil {
			t.Fatalf("arm %s has no service record", a.Name)
		}
		if s.Command != helperCommand() || s.Log != "service-"+a.Name+".log" || s.StartSeconds <= 0 || s.StopSeconds <= 0 || s.Error != "" {
			t.Errorf("arm %s service record %+v", a.Name, s)
		}
		if s.Properties["pg.retry-max-attempts"] != attempts[a.Name] || !strings.HasPrefix(s.Properties["pg.base-url"], "http://127.0.0.1:") {
			t.Errorf("arm %s properties %v", a.Name, s.Properties)
		}
		log, err := os.ReadFile(filepath.Join(dir, s.Log))
		if err != nil || !strings.Contains(string(log), "helper service: stopped") {
			t.Errorf("arm %s log (err %v) does not show a clean stop:\n%s", a.Name, err, log)
		}
		assertProcessGone(t, s.PID)
		if a.Breaker != feignBreaker {
			t.Errorf("arm %s followed breaker %q", a.Name, a.Breaker)
		}
	}
	r1, r3 := rec.Run.Arm("retry-1"), rec.Run.Arm("retry-3")
	if r1.AttemptsPerRequest != 1 || r3.AttemptsPerRequest <= 1 {
		t.Errorf("attempts per request: retry-1 %g (want 1), retry-3 %g (want > 1)", r1.AttemptsPerRequest, r3.AttemptsPerRequest)
	}
}

func TestExperimentServiceFails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	_, stderr, code := runCLI(context.Background(), "experiment", "retry", "--service", helperCommand(),
		"--service-env", helperEnv+"=exit", "--predict-runs", "20", "--out", dir, "--color", "never")
	if code != exitInfrastructure {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInfrastructure, stderr)
	}
	for _, want := range []string{"arm retry-3", "exited before it was healthy", "exit status 1", "APPLICATION FAILED TO START"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Complete || !strings.Contains(rec.Run.Reason, "APPLICATION FAILED TO START") {
		t.Errorf("run.json complete=%v reason %q", rec.Run.Complete, rec.Run.Reason)
	}
	if log, err := os.ReadFile(filepath.Join(dir, "service-retry-3.log")); err != nil || !strings.Contains(string(log), "APPLICATION FAILED TO START") {
		t.Errorf("service log (err %v):\n%s", err, log)
	}
}

func TestServiceFlagsBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"with --target", []string{"experiment", "retry", "--service", "true", "--target", "http://127.0.0.1:1"}, "service"},
		{"with --speed", []string{"experiment", "retry", "--service", "true", "--speed", "10"}, "--speed"},
		{"empty command", []string{"experiment", "retry", "--service", " "}, "empty"},
		{"zero start timeout", []string{"experiment", "retry", "--service", "true", "--service-start-timeout", "0s"}, "--service-start-timeout"},
		{"bad env", []string{"experiment", "retry", "--service", "true", "--service-env", "NOVALUE"}, "--service-env"},
		{"bad property", []string{"attack", "--service", "true", "--users", "1", "--requests", "1", "--service-property", "a..b=1"}, "a..b"},
		{"settings without a command", []string{"experiment", "retry", "--service-dir", "/tmp"}, "need --service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			_, stderr, code := runCLI(context.Background(), append(tc.args, "--out", out, "--color", "never")...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want %d, stderr lacking %q:\n%s", code, exitUsage, tc.want, stderr)
			}
		})
	}
}

func TestAttackWithService(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	stdout, stderr, code := runCLI(context.Background(), "attack", "--service", helperCommand(),
		"--service-env", helperEnv+"=demo", "--service-property", "pg.retry-max-attempts=1",
		"--users", "1", "--requests", "5", "--out", dir, "--color", "never")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arms[0]
	if a.Service == nil || a.Service.Properties["pg.retry-max-attempts"] != "1" || a.Service.StopSeconds <= 0 || len(rec.Requests) != 5 {
		t.Fatalf("arm service %+v, %d requests", a.Service, len(rec.Requests))
	}
	if a.Breaker != feignBreaker {
		t.Errorf("breaker %q: the service's actuator was not polled", a.Breaker)
	}
	assertProcessGone(t, a.Service.PID)
}

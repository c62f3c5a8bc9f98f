package collect

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/demo"
)

// demoChildEnv, set in the environment of this package's test binary, makes
// the binary serve the demo service instead of running tests: its value is
// the load mode ("idle" or "busy"). The sampler benchmarks run the demo in
// such a child process so that getrusage(RUSAGE_SELF) in the benchmark
// process counts the sampler alone, not the service it polls.
const demoChildEnv = "CBPROBE_COLLECT_DEMO_CHILD"

// busyRate is the busy child's open-model load in order-and-pay flows per
// second: enough for new breaker events between any two 50 ms polls.
const busyRate = 40

// TestMain runs the tests, or serves the demo when started as a child by
// startDemoChild.
func TestMain(m *testing.M) {
	if mode := os.Getenv(demoChildEnv); mode != "" {
		if err := serveDemoChild(context.Background(), mode, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "demo child:", err)
		}
		return
	}
	m.Run()
}

// serveDemoChild starts the demo service (reference configuration, embedded
// gateway), sends one warm-up burst of 40 flows through it so the event rings
// hold events, writes the service's base URL as one line to out, and then, in
// "busy" mode, keeps an open-model load of busyRate flows a second running.
// It serves until in reaches EOF (the parent closed the pipe).
func serveDemoChild(ctx context.Context, mode string, in io.Reader, out io.Writer) error {
	if mode != "idle" && mode != "busy" {
		return fmt.Errorf("%s=%q: want idle or busy", demoChildEnv, mode)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	svc, err := demo.New(demo.Config{Seed: 1}, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	if err := svc.Start(ctx, "127.0.0.1:0"); err != nil {
		return fmt.Errorf("start demo: %w", err)
	}
	defer svc.Close(context.Background())
	warm := attack.Config{Target: svc.URL(), Phases: []attack.Phase{{Name: "warm-up", Rate: 40, Duration: time.Second}}}
	if _, err := attack.Run(ctx, warm, nil); err != nil {
		return fmt.Errorf("warm-up load: %w", err)
	}
	loadDone := make(chan error, 1)
	if mode == "busy" {
		go func() {
			load := attack.Config{Target: svc.URL(), Phases: []attack.Phase{{Name: "busy", Rate: busyRate, Duration: time.Hour}}}
			_, err := attack.Run(ctx, load, nil)
			loadDone <- err
		}()
	} else {
		loadDone <- nil
	}
	if _, err := fmt.Fprintln(out, svc.URL()); err != nil {
		return fmt.Errorf("write URL: %w", err)
	}
	_, _ = io.Copy(io.Discard, in) // until the parent closes stdin
	cancel()
	if err := <-loadDone; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("load: %w", err)
	}
	return nil
}

// startDemoChild re-executes the test binary as a demo child in mode and
// returns the service's base URL and a function that stops the child.
func startDemoChild(tb testing.TB, mode string) (url string, stop func()) {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), demoChildEnv+"="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatalf("demo child stdin: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("demo child stdout: %v", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start demo child: %v", err)
	}
	done := make(chan error, 1)
	stop = func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { done <- cmd.Wait() }()
	if err != nil {
		stop()
		tb.Fatalf("demo child printed no URL (%v): %s", err, stderr.String())
	}
	return strings.TrimSpace(line), stop
}

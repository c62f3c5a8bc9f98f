package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestPgsimRefusesHugeCallbackWorkers: --callback-workers above
// pgsim.MaxCallbackWorkers (1024) is a usage error, before anything is started.
// The old command started 100,000,000 goroutines and never listened; the
// context's 60 s deadline only keeps such a failure from hanging the suite.
func TestPgsimRefusesHugeCallbackWorkers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, stderr, code := runCLI(ctx, "pgsim", "--listen", "127.0.0.1:0", "--callback-workers", "100000000")
	if code != 2 || !strings.Contains(stderr, "--callback-workers") || !strings.Contains(stderr, "1024") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --callback-workers and the maximum 1024", code, stderr)
	}
}

// TestWatchRefusesNegativeDuration: --duration -1s is a usage error; the old
// command watched forever (the 60 s deadline only keeps that from hanging).
func TestWatchRefusesNegativeDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, stderr, code := runCLI(ctx, "watch", "--actuator", "http://127.0.0.1:1", "--duration", "-1s")
	if code != 2 || !strings.Contains(stderr, "--duration") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --duration", code, stderr)
	}
}

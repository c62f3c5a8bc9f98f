package main

import (
	"syscall"
	"testing"
	"time"
)

// TestSecondInterruptExitsAtOnce: the first signal cancels the command's
// context; the second runs the hard-stop hooks (the run directory is marked)
// and exits with 130 at once, without waiting for the command.
func TestSecondInterruptExitsAtOnce(t *testing.T) {
	exited := make(chan int, 1)
	ctx, stop := notifyInterrupt(t.Context(), func(code int) { exited <- code }, syscall.SIGUSR1)
	defer stop()
	marked := make(chan struct{})
	defer onHardStop(ctx, func() { close(marked) })()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second): // signal delivery only; generous for a loaded machine
		t.Fatal("the first signal did not cancel the context")
	}
	select {
	case <-exited:
		t.Fatal("exited on the first signal")
	default:
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != exitInterrupted {
			t.Errorf("exit code %d, want %d", code, exitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	select {
	case <-marked:
	default:
		t.Error("exited without running the hook that marks the run")
	}
}

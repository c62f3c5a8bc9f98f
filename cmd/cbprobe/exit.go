package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"time"
)

// Exit codes of DESIGN.md, mapped in this one place.
const (
	exitOK             = 0   // all expectations met
	exitExpectation    = 1   // an expectation failed: the breaker misbehaved
	exitUsage          = 2   // usage or configuration error
	exitInfrastructure = 3   // target or metrics unreachable, output not writable
	exitInterrupted    = 130 // Ctrl-C; partial results are written and marked
)

// exitCoder is implemented by errors that know their exit code. Library packages
// define their own error types with an ExitCode method, so they need not import
// this package.
type exitCoder interface{ ExitCode() int }

// codedError attaches an exit code to an error.
type codedError struct {
	code   int
	err    error
	silent bool // already reported to the user; print nothing more
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }
func (e *codedError) ExitCode() int { return e.code }

// usageErr marks err as a usage or configuration error (exit 2).
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: exitUsage, err: err}
}

// infraErr marks err as an infrastructure error (exit 3).
func infraErr(err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: exitInfrastructure, err: err}
}

// silentErr carries an exit code for an outcome already reported on the terminal.
func silentErr(code int, err error) error {
	return &codedError{code: code, err: err, silent: true}
}

func isSilent(err error) bool {
	var ce *codedError
	return errors.As(err, &ce) && ce.silent
}

// exitCode maps the result of a command to the process exit code.
func exitCode(ctx context.Context, err error) int {
	if err == nil {
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitOK
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return exitInterrupted
	}
	// cobra reports unknown flags and commands as plain errors: usage.
	return exitUsage
}

// hardStops holds what must be done before the process exits on a second
// interrupt (mark the run directory as interrupted). It travels in the
// command's context, so commands register without a global.
type hardStops struct {
	mu    sync.Mutex
	next  int
	hooks map[int]func()
}

type hardStopsKey struct{}

// onHardStop registers f to run if a second Ctrl-C arrives while the command
// runs; call the returned function to unregister it.
func onHardStop(ctx context.Context, f func()) func() {
	h, _ := ctx.Value(hardStopsKey{}).(*hardStops)
	if h == nil {
		return func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hooks == nil {
		h.hooks = map[int]func(){}
	}
	id := h.next
	h.next++
	h.hooks[id] = f
	return func() {
		h.mu.Lock()
		delete(h.hooks, id)
		h.mu.Unlock()
	}
}

// run calls every hook, giving them at most limit together.
func (h *hardStops) run(limit time.Duration) {
	h.mu.Lock()
	hooks := make([]func(), 0, len(h.hooks))
	for _, f := range h.hooks {
		hooks = append(hooks, f)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, f := range hooks {
			f()
		}
	}()
	select {
	case <-done:
	case <-time.After(limit):
	}
}

// notifyInterrupt returns a context cancelled by the first SIGINT or SIGTERM
// (the command then stops and writes its partial results). A second signal
// runs the registered hard-stop hooks (at most one second, so the run is still
// marked) and calls exit(exitInterrupted) at once. stop releases the signals.
func notifyInterrupt(parent context.Context, exit func(int), signals ...os.Signal) (context.Context, func()) {
	h := &hardStops{}
	ctx, cancel := context.WithCancel(context.WithValue(parent, hardStopsKey{}, h))
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, signals...)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			h.run(time.Second)
			exit(exitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

package main

import (
	"context"
	"errors"
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

package springconf

import (
	"fmt"
	"strconv"
)

// Error is a configuration error at a place in a file: a bad value, a bad key, a YAML
// syntax error or a base-config that cannot be resolved. Error() reads
// "file:line: key: msg"; parts that are unknown are left out.
type Error struct {
	// File is the file name as given to Load or Parse; "" when unknown.
	File string
	// Line is 1-based; 0 when unknown.
	Line int
	// Key is the full property path, e.g. "resilience4j.circuitbreaker.configs.default.failure-rate-threshold".
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error formats the error as "file:line: key: msg".
func (e *Error) Error() string {
	s := ""
	if e.File != "" {
		s = e.File
		if e.Line > 0 {
			s += ":" + strconv.Itoa(e.Line)
		}
		s += ": "
	} else if e.Line > 0 {
		s = "line " + strconv.Itoa(e.Line) + ": "
	}
	if e.Key != "" {
		s += e.Key + ": "
	}
	return s + e.Msg
}

// ExitCode is 2: a configuration error.
func (e *Error) ExitCode() int { return 2 }

func errorf(file string, line int, key, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

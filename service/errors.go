package service

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cbprobe/cbprobe/results"
)

// Fault names what went wrong with a service.
type Fault string

// Faults of a service run.
const (
	// FaultLaunch: the command could not be launched (log file, working directory, /bin/sh).
	FaultLaunch Fault = "could not be launched"
	// FaultNotFound: the shell did not find the command (exit status 127) or could not run it (126).
	FaultNotFound Fault = "command not found"
	// FaultExited: the service exited before its health said UP.
	FaultExited Fault = "exited before it was healthy"
	// FaultOtherPort: the service runs but listens on another port than the one it was given.
	FaultOtherPort Fault = "listens on another port"
	// FaultNeverHealthy: health did not say UP within the start timeout.
	FaultNeverHealthy Fault = "never became healthy"
	// FaultDown: health kept saying DOWN or OUT_OF_SERVICE.
	FaultDown Fault = "health is DOWN"
	// FaultDied: the service exited while the arm ran.
	FaultDied Fault = "exited during the run"
	// FaultLeftover: processes of the group survived SIGKILL.
	FaultLeftover Fault = "processes left running"
)

// Error is a fault of the user's service. Its message names the command, the
// fault, the details and the last LogTailLines lines of the service's log.
type Error struct {
	// Name is Config.Name (the arm), "" for none.
	Name string
	// Command is the command as given.
	Command string
	// Fault is what went wrong.
	Fault Fault
	// Detail says more: the exit status, the last health answer, the other port.
	Detail string
	// Hint says what to check or change ("" when nothing useful is known).
	Hint string
	// LogPath is the service's log file.
	LogPath string
	// Tail holds the last lines of the log (at most LogTailLines).
	Tail []string
	// Record is what was measured of the run until the fault.
	Record results.Service
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Name != "" {
		fmt.Fprintf(&b, "arm %s: ", e.Name)
	}
	fmt.Fprintf(&b, "service `%s` %s", e.Command, e.Fault)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Hint != "" {
		b.WriteString("\n  " + e.Hint)
	}
	if e.LogPath != "" {
		if len(e.Tail) == 0 {
			fmt.Fprintf(&b, "\n  (the service wrote nothing to %s)", e.LogPath)
		} else {
			fmt.Fprintf(&b, "\n  last %d lines of %s:", len(e.Tail), e.LogPath)
			for _, l := range e.Tail {
				b.WriteString("\n  | " + l)
			}
		}
	}
	return b.String()
}

// ExitCode is 3: the service, not the breaker, failed (an infrastructure error).
func (e *Error) ExitCode() int { return 3 }

// maxTailBytes is how much of the end of a log is read for its last lines.
const maxTailBytes = 64 << 10

// maxLineBytes cuts very long log lines in messages.
const maxLineBytes = 400

// tailLines returns the last n lines of the file at path (nil when unreadable).
func tailLines(path string, n int) []string {
	data := readTail(path, maxTailBytes)
	if len(data) == 0 {
		return nil
	}
	data = bytes.TrimRight(data, "\r\n")
	lines := strings.Split(string(data), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if len(l) > maxLineBytes {
			l = l[:maxLineBytes] + "…"
		}
		lines[i] = l
	}
	return lines
}

// readTail reads at most max bytes from the end of the file at path.
func readTail(path string, max int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max64(0, st.Size()-max)
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil
	}
	if off > 0 { // drop the partial first line
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

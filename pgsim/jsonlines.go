package pgsim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// JSONLines appends values to a writer as JSON lines through a 64 KiB buffer and
// keeps the first error; the attempt logs of pgsim and fault write their files
// with it. A nil *JSONLines (no file) does nothing. It is not safe for
// concurrent use: callers hold their own lock.
type JSONLines struct {
	w   *bufio.Writer
	err error
}

// NewJSONLines returns a JSONLines writing to w, or nil when w is nil.
func NewJSONLines(w io.Writer) *JSONLines {
	if w == nil {
		return nil
	}
	return &JSONLines{w: bufio.NewWriterSize(w, 64<<10)}
}

// Append writes v as one line; after the first error it writes nothing more.
func (j *JSONLines) Append(v any) {
	if j == nil || j.err != nil {
		return
	}
	line, err := json.Marshal(v)
	if err == nil {
		line = append(line, '\n')
		_, err = j.w.Write(line)
	}
	j.err = err
}

// Flush writes the buffered lines out and reports the first error.
func (j *JSONLines) Flush() error {
	if j == nil {
		return nil
	}
	if j.err != nil {
		return fmt.Errorf("write attempt log: %w", j.err)
	}
	if err := j.w.Flush(); err != nil {
		return fmt.Errorf("flush attempt log: %w", err)
	}
	return nil
}

// WriteNDJSON answers items as application/x-ndjson, one JSON value a line,
// HTML not escaped (the /attempts endpoints of pgsim and fault). It stops at
// the first write error: the client went away.
func WriteNDJSON[T any](w http.ResponseWriter, items []T) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, it := range items {
		if enc.Encode(it) != nil {
			return
		}
	}
	_ = bw.Flush()
}

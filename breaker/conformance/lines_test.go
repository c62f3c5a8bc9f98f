package conformance

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// bigVector is a valid vector with n steps, one per line, after a header of
// header lines.
func bigVector(n int) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"name\": \"big\",\n  \"config\": {\"sliding-window-type\": \"COUNT_BASED\", \"sliding-window-size\": 20},\n  \"steps\": [\n")
	for i := range n {
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    {\"at_ms\": %d, \"op\": \"call\", \"outcome\": \"success\", \"duration_ms\": 1, \"expect\": {\"permitted\": true, \"state\": \"CLOSED\", \"events\": [{\"type\": \"SUCCESS\"}], \"metrics\": {\"failure_rate\": -1.0, \"slow_call_rate\": -1.0, \"buffered_calls\": 0, \"failed_calls\": 0, \"successful_calls\": 0, \"slow_calls\": 0, \"slow_successful_calls\": 0, \"slow_failed_calls\": 0, \"not_permitted_calls\": 0}}}%s\n", i, sep)
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}

// TestStepLinesLinear: every step gets its line, and finding the lines of all
// steps scans the file once: the counter's scanned bytes stay within the file's
// size (the old lineAt rescanned from the start for every step: about n²/2
// lines for n steps).
func TestStepLinesLinear(t *testing.T) {
	const n = 2000
	data := bigVector(n)
	v, err := Decode("big.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Steps) != n {
		t.Fatalf("%d steps, want %d", len(v.Steps), n)
	}
	for i, s := range v.Steps {
		if s.Line != 5+i {
			t.Fatalf("step %d on line %d, want %d", i+1, s.Line, 5+i)
		}
	}
	c := lineCounter{data: data}
	off := int64(0)
	for range n {
		off = int64(bytes.IndexByte(data[off:], '{')) + off + 1
		c.at(off)
	}
	if c.scanned > int64(len(data)) {
		t.Fatalf("scanned %d bytes for %d-byte data: not one pass", c.scanned, len(data))
	}
	// Going back restarts from the top and stays right.
	if got, want := c.at(0), 1; got != want {
		t.Fatalf("line of offset 0 = %d, want %d", got, want)
	}
	if got, want := c.at(int64(strings.Index(string(data), "\"steps\""))), 4; got != want {
		t.Fatalf("line of \"steps\" = %d, want %d", got, want)
	}
}

// BenchmarkDecodeBigVector decodes a 20,000-step vector (about 6 MB);
// ns/step should not grow with the number of steps.
func BenchmarkDecodeBigVector(b *testing.B) {
	data := bigVector(20_000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode("big.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

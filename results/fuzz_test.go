package results

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParseRequests feeds arbitrary requests.csv content to the reader: it
// must return rows or an error, never panic, and rows it accepts must survive
// a write and a second read unchanged (up to the writer's millisecond
// rounding of latency to 3 decimals and one-line errors).
func FuzzParseRequests(f *testing.F) {
	header := strings.Join(RequestColumns(), ",") + "\n"
	f.Add([]byte(header + "attack,1,phase1,0,2026-11-29T12:00:00Z,2026-11-29T12:00:00.001Z,12.500,200,succeeded,\n"))
	f.Add([]byte(header + "a,2,p,3,,,0.001,503,rejected,\"pay: 503, \"\"x\"\"\"\n"))
	f.Add([]byte(header + "a,x,p,3,,,1,503,rejected,\n"))
	f.Add([]byte("seq,arm\n1,a\n"))
	f.Add([]byte(header + "\"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rec Record
		rows, err := parseCSV(&rec, RequestsFile, data, RequestColumns(), parseRequest)
		if err != nil {
			return
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		_ = w.Write(RequestColumns())
		var fields []string
		for _, r := range rows {
			fields = requestRecord(fields, r)
			_ = w.Write(fields)
		}
		w.Flush()
		again, err := parseCSV(&rec, RequestsFile, b.Bytes(), RequestColumns(), parseRequest)
		if err != nil {
			t.Fatalf("rows read from %q do not read back after writing: %v\n%s", data, err, b.Bytes())
		}
		first := make([]Request, len(rows))
		for i, r := range rows {
			// The writer keeps 3 decimals of a millisecond and one line per error.
			fields = requestRecord(fields, r)
			first[i], _ = parseRequest(fields)
		}
		if diff := cmp.Diff(first, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip changed rows (-want +got):\n%s", diff)
		}
	})
}

package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// t0 is the fixed start of the sample run.
func t0() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

func ptr(f float64) *float64 { return &f }

// sampleRun is a two-arm run with every kind of field filled.
func sampleRun() *Run {
	return &Run{
		Experiment:  "window-type",
		Description: "COUNT_BASED against TIME_BASED through a pause",
		Tool:        "cbprobe test",
		Target:      "http://127.0.0.1:8080",
		Started:     t0(),
		Ended:       t0().Add(28 * time.Second),
		Parameters:  map[string]any{"phases": "15/s:5s,0/s:15s,5/s:8s", "seed": 1.0},
		Arms: []Arm{
			{
				Name: "COUNT_BASED", Breaker: "pgCircuit",
				Thresholds: Thresholds{FailureRate: 60, SlowCallRate: 50},
				Phases: []PhaseStats{
					{Name: "phase1", Rate: 15, Duration: 5 * time.Second, Planned: 75, Sent: 75, Succeeded: 30, Rejected: 40, Failed: 5},
					{Name: "phase2", Duration: 15 * time.Second},
					{Name: "phase3", Rate: 5, Duration: 8 * time.Second, Planned: 40, Sent: 40, Succeeded: 3, Rejected: 37, Late: 1},
				},
				Transitions: []Transition{{
					At: t0().Add(2 * time.Second), Breaker: "pgCircuit", From: "CLOSED", To: "OPEN", Cause: "slow-call-rate",
					Evidence: Evidence{Source: "events", FailureRate: 40, SlowCallRate: 60, FailureRateThreshold: 60, SlowCallRateThreshold: 50,
						Buffered: 20, Failed: 8, Slow: 12, Events: []string{"SLOW_CALL_RATE_EXCEEDED 60.0%"}},
					Request: 31,
				}, {
					At: t0().Add(12 * time.Second), Breaker: "pgCircuit", From: "OPEN", To: "HALF_OPEN", Evidence: UnknownEvidence(),
				}},
				FirstOpenRequest: 31, FirstRejectedRequest: 31, AttemptsPerRequest: 1,
				Latency: LatencyStats{P50: 210, P95: 480, P99: 495, Max: 500, Mean: 230},
				Comparisons: []Comparison{{Metric: "rejected share", Unit: "%", Measured: 66.9, PredictedP5: 60, PredictedP50: 70,
					PredictedP95: 80, PredictedMean: 70.2, Reported: ptr(94.9), Note: "field report differs"}},
			},
			{
				Name: "TIME_BASED", Breaker: "pgCircuit",
				Thresholds: Thresholds{FailureRate: 60, SlowCallRate: 50},
				Phases: []PhaseStats{
					{Name: "phase1", Rate: 15, Duration: 5 * time.Second, Planned: 75, Sent: 75, Succeeded: 70, Failed: 5},
				},
			},
		},
		Findings: []Finding{{ID: "window-memory-after-pause", Severity: "warning", Arm: "COUNT_BASED",
			Title: "COUNT_BASED window remembers the burst through the pause", Detail: "The last 20 outcomes survive 15 s of silence.",
			Evidence: []string{"phase3 rejected 92.5%"}, Fix: "use TIME_BASED", Setting: "sliding-window-type"}},
		Expectations: []Expectation{
			{Expr: "arm[COUNT_BASED].firstOpen.cause == slow-call-rate", OK: true, Arm: "COUNT_BASED", Got: "slow-call-rate", Want: "slow-call-rate"},
			{Expr: "arm[TIME_BASED].phase3.rejected < 10%", OK: false, Arm: "TIME_BASED", Got: "25.0%", Want: "< 10%", Message: "breaker opened"},
		},
	}
}

func sampleRequests() []Request {
	var out []Request
	outcomes := []Outcome{OutcomeSucceeded, OutcomeRejected, OutcomeFailed}
	for i := 1; i <= 30; i++ {
		at := t0().Add(time.Duration(i) * 200 * time.Millisecond)
		r := Request{Arm: "COUNT_BASED", Seq: i, Phase: "phase1", User: i % 3, Intended: at, Sent: at.Add(1234 * time.Microsecond),
			Latency: time.Duration(100+i) * time.Millisecond, Status: 200, Outcome: outcomes[i%3]}
		if r.Outcome == OutcomeRejected {
			r.Status = 503
		}
		if r.Outcome == OutcomeFailed {
			r.Status, r.Error = 0, "dial tcp: connection refused, \"quoted\"\nsecond line"
		}
		out = append(out, r)
	}
	return out
}

func sampleSamples() []Sample {
	var out []Sample
	for i := range 10 {
		st := "CLOSED"
		if i >= 3 {
			st = "OPEN"
		}
		fr := float64(i * 5)
		if i == 0 {
			fr = Unknown
		}
		out = append(out, Sample{Arm: "COUNT_BASED", Time: t0().Add(time.Duration(i) * 500 * time.Millisecond), Source: "actuator",
			Breaker: "pgCircuit", State: st, FailureRate: fr, SlowCallRate: 55.5, FailureRateThreshold: 60, SlowCallRateThreshold: 50,
			Buffered: 20, Failed: 8, Slow: 12, SlowFailed: 1, NotPermitted: float64(i)})
	}
	return out
}

func sampleEvents() []Event {
	return []Event{
		{Time: t0().Add(time.Second), Arm: "COUNT_BASED", Kind: "breaker", Breaker: "pgCircuit", Type: "SLOW_CALL_RATE_EXCEEDED", SlowCallRate: 60},
		{Time: t0().Add(time.Second), Arm: "COUNT_BASED", Kind: "breaker", Breaker: "pgCircuit", Type: "STATE_TRANSITION", From: "CLOSED", To: "OPEN"},
		{Time: t0().Add(5 * time.Second), Arm: "COUNT_BASED", Kind: "phase", Message: "phase2 </script> starts"},
	}
}

// writeSampleRun writes the sample run through a Writer and finishes it.
func writeSampleRun(t *testing.T) (string, *Run) {
	t.Helper()
	run := sampleRun()
	return writeRunWithSamples(t, run), run
}

// writeRunWithSamples writes the sample requests, samples and events and
// finishes the directory with run.
func writeRunWithSamples(t *testing.T, run *Run) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sampleRequests() {
		w.Request(r)
	}
	for _, s := range sampleSamples() {
		w.Sample(s)
	}
	for _, e := range sampleEvents() {
		w.Event(e)
	}
	if err := w.Finish(run); err != nil {
		t.Fatal(err)
	}
	return dir
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from golden (-want +got; go test -update rewrites it):\n%s", name, diff)
	}
}

func TestRunJSONGolden(t *testing.T) {
	dir, _ := writeSampleRun(t)
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "run.golden.json", data)

	// The fields other tools read must be there under these names.
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "experiment", "complete", "arms", "findings", "expectations"} {
		if _, ok := m[k]; !ok {
			t.Errorf("run.json has no %q", k)
		}
	}
	if m["schema"] != "cbprobe.run/v1" || m["complete"] != true {
		t.Errorf("schema %v complete %v, want cbprobe.run/v1 true", m["schema"], m["complete"])
	}
	arm := m["arms"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "phases", "transitions", "firstOpenRequest", "firstRejectedRequest", "attemptsPerRequest"} {
		if _, ok := arm[k]; !ok {
			t.Errorf("arm has no %q", k)
		}
	}
	ph := arm["phases"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "sent", "succeeded", "rejected", "failed"} {
		if _, ok := ph[k]; !ok {
			t.Errorf("phase has no %q", k)
		}
	}
	tr := arm["transitions"].([]any)[0].(map[string]any)
	for _, k := range []string{"at", "from", "to", "cause"} {
		if _, ok := tr[k]; !ok {
			t.Errorf("transition has no %q", k)
		}
	}
	if _, ok := m["findings"].([]any)[0].(map[string]any)["id"]; !ok {
		t.Error("finding has no id")
	}
	ex := m["expectations"].([]any)[0].(map[string]any)
	if _, ok := ex["expr"]; !ok {
		t.Error("expectation has no expr")
	}
	if _, ok := ex["ok"]; !ok {
		t.Error("expectation has no ok")
	}
}

func TestLoadRoundTrip(t *testing.T) {
	dir, run := writeSampleRun(t)
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Warnings) != 0 {
		t.Errorf("warnings %v, want none", rec.Warnings)
	}
	wantReq := sampleRequests()
	for i := range wantReq {
		// A CSV record is one line: line breaks in errors become spaces.
		wantReq[i].Error = strings.ReplaceAll(wantReq[i].Error, "\n", " ")
	}
	if diff := cmp.Diff(wantReq, rec.Requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sampleSamples(), rec.Samples); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sampleEvents(), rec.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(*run, rec.Run, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
}

func TestLoadTruncatedLastLine(t *testing.T) {
	dir, _ := writeSampleRun(t)
	for _, name := range []string{RequestsFile, SamplesFile, EventsFile} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Cut the file in the middle of its last line, as a killed run leaves it.
		if err := os.WriteFile(path, data[:len(data)-7], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rec.Requests), len(sampleRequests())-1; got != want {
		t.Errorf("requests %d, want %d", got, want)
	}
	if got, want := len(rec.Samples), len(sampleSamples())-1; got != want {
		t.Errorf("samples %d, want %d", got, want)
	}
	if got, want := len(rec.Events), len(sampleEvents())-1; got != want {
		t.Errorf("events %d, want %d", got, want)
	}
	if len(rec.Warnings) != 3 {
		t.Errorf("warnings %q, want one per truncated file", rec.Warnings)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"bad status", RequestsFile, strings.Join(RequestColumns(), ",") + "\na,1,p,0,,,1.0,xx,failed,\n", "line 2: status"},
		{"bad outcome", RequestsFile, strings.Join(RequestColumns(), ",") + "\na,1,p,0,,,1.0,200,maybe,\n", "outcome"},
		{"missing column", SamplesFile, "arm,time\n", `no column "source"`},
		{"bad json", EventsFile, "{\"time\":\n", "line 1"},
		{"bad schema", RunFile, `{"schema":"other/v9"}`, "schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := writeSampleRun(t)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Load: %v, want an error naming %s and %q", err, tc.file, tc.want)
			}
		})
	}
}

func TestJUnit(t *testing.T) {
	dir, run := writeSampleRun(t)
	data, err := os.ReadFile(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("junit.xml is not valid XML: %v\n%s", err, data)
	}
	if len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != len(run.Expectations) {
		t.Fatalf("got %d suites / cases %+v, want one case per expectation (%d)", len(doc.Suites), doc.Suites, len(run.Expectations))
	}
	if doc.Tests != 2 || doc.Failures != 1 {
		t.Errorf("tests=%d failures=%d, want 2 and 1", doc.Tests, doc.Failures)
	}
	for i, c := range doc.Suites[0].Cases {
		e := run.Expectations[i]
		if c.Name != e.Expr {
			t.Errorf("case %d name %q, want %q", i, c.Name, e.Expr)
		}
		if (c.Failure == nil) != e.OK {
			t.Errorf("case %d failure %v, expectation ok %v", i, c.Failure, e.OK)
		}
	}
	if f := doc.Suites[0].Cases[1].Failure; f == nil || f.Message != "got 25.0%, want < 10%: breaker opened" {
		t.Errorf("failure message %+v, want got/want/message", f)
	}
}

func TestSummaryMarkdown(t *testing.T) {
	dir, _ := writeSampleRun(t)
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.golden.md", data)
	md := string(data)
	for _, want := range []string{
		"# ❌ cbprobe window-type", // one expectation failed
		"## Expectations: 1 of 2 held",
		"| ✅ | `arm[COUNT_BASED].firstOpen.cause == slow-call-rate` |",
		"| ❌ | `arm[TIME_BASED].phase3.rejected < 10%` | TIME_BASED | 25.0% | < 10% | breaker opened |",
		"## Arm `COUNT_BASED`",
		"| phase1 | 15/s | 75 | 75 | 30 (40.0%) | 40 (53.3%) | 5 (6.7%) | 0 | 0 |",
		"| +2.0s | CLOSED → OPEN | slow-call-rate | failure 40.0% (threshold 60.0%), slow 60.0% (threshold 50.0%) from events | #31 |",
		"first OPEN at request #31",
		"COUNT_BASED window remembers the burst",
		"Fix: use TIME_BASED",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}
	if strings.Contains(md, "\x1b[") {
		t.Error("summary.md holds ANSI codes")
	}
}

func TestAbortAfterCancelIsReadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	run := &Run{Experiment: "attack", Started: t0(), Arms: []Arm{{Name: "attack"}}}
	if err := w.Checkpoint(run); err != nil {
		t.Fatal(err)
	}
	// A run that has started is readable and marked incomplete at any time.
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Complete || rec.Run.Experiment != "attack" {
		t.Fatalf("checkpoint: complete=%v experiment=%q, want false attack", rec.Run.Complete, rec.Run.Experiment)
	}
	for _, r := range sampleRequests()[:10] {
		r.Arm = "attack"
		w.Request(r)
		run.Arms[0].Add(r)
	}
	if err := w.Abort(run, "interrupted by signal"); err != nil {
		t.Fatal(err)
	}
	rec, err = Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Complete || !rec.Run.Interrupted || rec.Run.Reason != "interrupted by signal" {
		t.Errorf("complete=%v interrupted=%v reason=%q, want false true 'interrupted by signal'", rec.Run.Complete, rec.Run.Interrupted, rec.Run.Reason)
	}
	if len(rec.Requests) != 10 || rec.Run.Arms[0].Totals().Sent != 10 {
		t.Errorf("requests %d, sent %d, want 10 and 10", len(rec.Requests), rec.Run.Arms[0].Totals().Sent)
	}
	for _, f := range []string{SummaryFile, JUnitFile, HTMLFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("partial run lacks %s: %v", f, err)
			continue
		}
		if f == SummaryFile && !strings.Contains(string(data), "interrupted (interrupted by signal)") {
			t.Errorf("summary.md does not say the run was interrupted:\n%s", data)
		}
	}
	if err := w.Finish(run); err == nil {
		t.Error("Finish after Abort succeeded, want an error")
	}
}

func TestCreateErrors(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(base, "existing")
	if err := os.Mkdir(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
		code            int
	}{
		{"parent is a file", filepath.Join(file, "run"), "not a directory", 3},
		// An --out that is taken is the user's choice to fix: a usage error.
		{"exists", existing, "already exists", 2},
		{"empty", "", "empty path", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Create(tc.dir)
			if err == nil {
				w.Close()
				t.Fatal("Create succeeded, want an error")
			}
			var re *Error
			if !errors.As(err, &re) || re.ExitCode() != tc.code {
				t.Errorf("error %T %v, want *Error with exit code %d", err, err, tc.code)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
	// An existing directory is left as it was.
	if entries, _ := os.ReadDir(existing); len(entries) != 0 {
		t.Errorf("Create wrote into an existing directory: %v", entries)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	boom := errors.New("disk full")
	_, err := create(dir, func(name string) (io.WriteCloser, error) {
		if name == SamplesFile {
			return nil, boom
		}
		return os.Create(filepath.Join(dir, name))
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want disk full", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("half-made run directory left behind: %v", err)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("no space left on device")
	}
	f.n -= len(p)
	return len(p), nil
}
func (f *failingWriter) Close() error { return nil }

func TestStreamErrorKeepsRunIncomplete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := create(dir, func(name string) (io.WriteCloser, error) {
		if name == RequestsFile {
			return &failingWriter{n: 200}, nil // header fits, rows do not
		}
		return os.Create(filepath.Join(dir, name))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sampleRequests() {
		w.Request(r)
	}
	run := sampleRun()
	err = w.Finish(run)
	var re *Error
	if !errors.As(err, &re) || re.ExitCode() != 3 || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Finish: %v, want *Error (exit 3) naming the write failure", err)
	}
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Run.Complete || !strings.Contains(rec.Run.Reason, "no space left") {
		t.Errorf("complete=%v reason=%q, want incomplete with the reason", rec.Run.Complete, rec.Run.Reason)
	}
}

// blockingWriter blocks every Write until release is closed: a disk that has stalled.
type blockingWriter struct {
	release chan struct{}
	buf     bytes.Buffer
	writes  int
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	b.writes++
	return b.buf.Write(p)
}
func (b *blockingWriter) Close() error { return nil }

// TestSlowDiskShowsAsBacklog proves that appending never waits for the disk:
// with the requests file stalled, every Request call returns (the test would
// hang otherwise) and the records wait in memory as Backlog.
func TestSlowDiskShowsAsBacklog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	stalled := &blockingWriter{release: make(chan struct{})}
	close(stalled.release) // let the header through
	header := true
	w, err := create(dir, func(name string) (io.WriteCloser, error) {
		if name == RequestsFile {
			return stalled, nil
		}
		return os.Create(filepath.Join(dir, name))
	})
	if err != nil {
		t.Fatal(err)
	}
	if header && stalled.buf.Len() == 0 {
		t.Fatal("header not written")
	}
	stalled.release = make(chan struct{}) // from now on the disk stalls
	const n = 20000
	for i := range n {
		w.Request(Request{Arm: "a", Seq: i + 1, Phase: "p", Outcome: OutcomeSucceeded, Status: 200})
	}
	// Every call returned while nothing more could be written: the records are queued.
	if got := w.Backlog(); got != n {
		t.Errorf("backlog %d, want %d (all queued while the disk is stalled)", got, n)
	}
	if got, _, _ := w.Written(); got != 0 {
		t.Errorf("written %d while the disk is stalled, want 0", got)
	}
	close(stalled.release)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Backlog() != 0 || w.MaxBacklog() < n {
		t.Errorf("backlog %d max %d after close, want 0 and >= %d", w.Backlog(), w.MaxBacklog(), n)
	}
	if got, _, _ := w.Written(); got != n {
		t.Errorf("written %d, want %d", got, n)
	}
	if lines := bytes.Count(stalled.buf.Bytes(), []byte{'\n'}); lines != n+1 {
		t.Errorf("%d lines written, want %d rows + header", lines, n)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   Outcome
	}{
		{"200", 200, `{"ok":true}`, OutcomeSucceeded},
		{"201", 201, ``, OutcomeSucceeded},
		{"circuit open", 503, `{"code":"CIRCUIT_OPEN","message":"CircuitBreaker 'pg' is OPEN"}`, OutcomeRejected},
		{"500", 500, `{"code":"PG_ERROR"}`, OutcomeFailed},
		{"503 other", 503, `Service Unavailable`, OutcomeFailed},
		{"no answer", 0, `CIRCUIT_OPEN`, OutcomeFailed},
		{"2xx mentioning the code", 200, `{"code":"CIRCUIT_OPEN"}`, OutcomeSucceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.status, []byte(tc.body)); got != tc.want {
				t.Errorf("Classify(%d, %q) = %s, want %s", tc.status, tc.body, got, tc.want)
			}
		})
	}
}

func TestDefaultDir(t *testing.T) {
	got := DefaultDir("my exp/1", time.Date(2026, 11, 29, 21, 5, 9, 0, time.FixedZone("x", 3600)))
	if want := filepath.Join("cbprobe-results", "my_exp_1-20261129T200509Z"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
}

func TestWriteTextColor(t *testing.T) {
	run := sampleRun()
	var plain, colored bytes.Buffer
	if err := WriteText(&plain, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&colored, run, TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("plain text holds ANSI codes:\n%s", plain.String())
	}
	if !strings.Contains(colored.String(), "\x1b[31mOPEN\x1b[0m") {
		t.Errorf("coloured text lacks a red OPEN:\n%q", colored.String())
	}
	golden(t, "summary.golden.txt", plain.Bytes())
	// Stripping the codes from the coloured text gives the plain text: colour never moves columns.
	stripped := stripANSI(colored.String())
	if diff := cmp.Diff(plain.String(), stripped); diff != "" {
		t.Errorf("coloured text without codes differs from plain (-plain +stripped):\n%s", diff)
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestWriteComparison(t *testing.T) {
	a, b := sampleRun(), sampleRun()
	b.Arms[0].Phases[0].Rejected, b.Arms[0].Phases[0].Succeeded = 0, 70
	var out bytes.Buffer
	if err := WriteComparison(&out, a, b, "run-a", "run-b", TextOptions{}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"run-a", "run-b", "phase1 rejected", "53.3%", "0.0%", "first OPEN cause", "slow-call-rate"} {
		if !strings.Contains(s, want) {
			t.Errorf("comparison lacks %q:\n%s", want, s)
		}
	}
}

func TestProgressLine(t *testing.T) {
	got := ProgressLine(Progress{Elapsed: 12 * time.Second, Total: 28 * time.Second, Rate: 15, Sent: 180, Succeeded: 170, Rejected: 5, Failed: 5, State: "OPEN"}, TextOptions{})
	want := "12.0s/28.0s  15.0 req/s  sent 180  ok 170  rejected 5  failed 5  OPEN"
	if got != want {
		t.Errorf("ProgressLine = %q, want %q", got, want)
	}
}

func TestArmAdd(t *testing.T) {
	var a Arm
	for _, r := range sampleRequests() {
		a.Add(r)
	}
	tot := a.Totals()
	if tot.Sent != 30 || tot.Succeeded != 10 || tot.Rejected != 10 || tot.Failed != 10 {
		t.Errorf("totals %+v, want 30 sent, 10 of each outcome", tot)
	}
	if a.FirstRejectedRequest != 1 {
		t.Errorf("first rejected %d, want 1", a.FirstRejectedRequest)
	}
}

func TestMarkRequestsAndLatency(t *testing.T) {
	reqs := sampleRequests() // request i sent at +i*200ms (+1.234 ms), latency 100+i ms
	for i := range reqs {
		reqs[i].Outcome = OutcomeSucceeded
	}
	reqs[6].Outcome = OutcomeRejected // request 7, sent at +1.401 s
	tests := []struct {
		name       string
		openAt     time.Duration
		want       []int // Request of each transition
		first, rej int
	}{
		// The breaker opened at +1.1 s, while request 5 (sent at +1.001 s) was
		// in flight: that is the first OPEN request, in the headline and in the
		// transitions table alike (it was "the next request", 6, in the table).
		{"open before the first refusal", 1100 * time.Millisecond, []int{5, 14, 30}, 5, 7},
		// Polling placed the OPEN at +2 s, after request 7 was refused at
		// +1.401 s: the refusal proves the breaker was open, so the OPEN is
		// attributed to request 6 and never to one after the first rejected.
		{"open estimated after the first refusal", 2 * time.Second, []int{6, 14, 30}, 6, 7},
		// The OPEN (an event's time) fell while request 7 was in flight (sent at
		// +1.401 s, answered at +1.508 s): its retry met the open breaker, so the
		// OPEN keeps its time and request 7 is both (the window-type arm on the
		// real Spring service; moving the OPEN before request 7's send put it at
		// request 10 instead of 21 there).
		{"open while the first refused request was in flight", 1450 * time.Millisecond, []int{7, 14, 30}, 7, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Arm{Name: "COUNT_BASED", Transitions: []Transition{
				{At: t0().Add(tc.openAt), From: "CLOSED", To: "OPEN"},
				{At: t0().Add(3 * time.Second), From: "OPEN", To: "HALF_OPEN"},
				{At: t0().Add(time.Hour), From: "HALF_OPEN", To: "OPEN"},
			}}
			a.MarkRequests(reqs)
			got := []int{a.Transitions[0].Request, a.Transitions[1].Request, a.Transitions[2].Request}
			if !slices.Equal(got, tc.want) {
				t.Errorf("transition requests %v, want %v", got, tc.want)
			}
			if a.FirstOpenRequest != tc.first || a.FirstRejectedRequest != tc.rej || a.Transitions[0].Request != a.FirstOpenRequest {
				t.Errorf("first OPEN request %d (transition says %d), first rejected %d; want %d, %d: one number everywhere, OPEN before the first refusal",
					a.FirstOpenRequest, a.Transitions[0].Request, a.FirstRejectedRequest, tc.first, tc.rej)
			}
		})
	}
	if got := LastSentAtOrBefore(reqs, "COUNT_BASED", t0().Add(1001234*time.Microsecond)); got != 5 {
		t.Errorf("last sent at or before request 5's send time = %d, want 5", got)
	}
	if got := FirstSentAtOrAfter(reqs, "other arm", t0()); got != 0 {
		t.Errorf("another arm's first request %d, want 0", got)
	}
	l := LatencyOf(reqs, "COUNT_BASED")
	// Latencies 101..130 ms: nearest-rank p50 is the 15th (115), p90 the 27th
	// (127), p95 the 29th (129), p99 the 30th.
	want := LatencyStats{P50: 115, P90: 127, P95: 129, P99: 130, Max: 130, Mean: 115.5}
	if l != want {
		t.Errorf("LatencyOf = %+v, want %+v", l, want)
	}
	// Per phase: the sample requests are all in phase1; phase3 sent none.
	a := sampleRun().Arms[0]
	a.SetLatency(reqs)
	if a.Latency != want || a.Phases[0].Latency != want || a.Phases[2].Latency != (LatencyStats{}) {
		t.Errorf("SetLatency: arm %+v, phase1 %+v, phase3 %+v; want the arm's latency on phase1 and none on phase3",
			a.Latency, a.Phases[0].Latency, a.Phases[2].Latency)
	}
}

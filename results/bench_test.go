package results

import (
	"bufio"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchRequests returns n requests at 1000 per second.
func benchRequests(n int) []Request {
	out := make([]Request, n)
	for i := range out {
		at := t0().Add(time.Duration(i) * time.Millisecond)
		out[i] = Request{Arm: "attack", Seq: i + 1, Phase: "phase1", Intended: at, Sent: at.Add(50 * time.Microsecond),
			Latency: time.Duration(100+i%400) * time.Millisecond, Status: 200, Outcome: OutcomeSucceeded}
		if i%3 == 0 {
			out[i].Status, out[i].Outcome = 503, OutcomeRejected
		}
	}
	return out
}

// writeQueued hands every request to w.Request, returns the time that took
// (what the producer pays) and then closes w (not timed).
func writeQueued(b *testing.B, w *Writer, reqs []Request) time.Duration {
	start := time.Now()
	for _, r := range reqs {
		w.Request(r)
	}
	d := time.Since(start)
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return d
}

// writeSync is the baseline the append benchmarks compare against: every
// request's CSV row written and flushed to w before the next one. It returns
// the time spent.
func writeSync(w io.Writer, reqs []Request) time.Duration {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	var rec []string
	start := time.Now()
	for _, r := range reqs {
		rec = requestRecord(rec, r)
		_ = cw.Write(rec)
		cw.Flush()
		_ = bw.Flush()
	}
	return time.Since(start)
}

// BenchmarkAppendRequests measures what a producer (the attack's emit
// callback) pays per request: Writer.Request, which queues, against writing
// the CSV row synchronously and flushing it (what a naive writer would do to
// keep the file current). One op is 100 000 requests.
func BenchmarkAppendRequests(b *testing.B) {
	const n = 100_000
	reqs := benchRequests(n)
	var queued, direct time.Duration
	for range b.N {
		dir := filepath.Join(b.TempDir(), "run")
		w, err := Create(dir)
		if err != nil {
			b.Fatal(err)
		}
		queued += writeQueued(b, w, reqs)

		f, err := os.Create(filepath.Join(b.TempDir(), "direct.csv"))
		if err != nil {
			b.Fatal(err)
		}
		direct += writeSync(f, reqs)
		_ = f.Close()
	}
	total := float64(b.N * n)
	b.ReportMetric(float64(queued.Nanoseconds())/total, "ns/request-queued")
	b.ReportMetric(float64(direct.Nanoseconds())/total, "ns/request-sync")
	b.ReportMetric(float64(direct)/float64(queued), "sync/queued")
}

// BenchmarkLoadAndHTML measures reading back a 100 000-request run and
// rendering its report.html; it reports the page size.
func BenchmarkLoadAndHTML(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range benchRequests(100_000) {
		w.Request(r)
	}
	run := &Run{Experiment: "bench", Started: t0(), Arms: []Arm{{Name: "attack"}}}
	if err := w.Finish(run); err != nil {
		b.Fatal(err)
	}
	var load, render time.Duration
	size := 0
	for range b.N {
		start := time.Now()
		rec, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		load += time.Since(start)
		start = time.Now()
		cw := &countWriter{}
		if err := WriteHTML(cw, rec); err != nil {
			b.Fatal(err)
		}
		render += time.Since(start)
		size = cw.n
	}
	b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "ms/load-100k")
	b.ReportMetric(float64(render.Milliseconds())/float64(b.N), "ms/html-100k")
	b.ReportMetric(float64(size)/1024, "KiB-html")
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// slowDisk takes delay for every Write, like a saturated disk or a network share.
type slowDisk struct{ delay time.Duration }

func (s slowDisk) Write(p []byte) (int, error) { time.Sleep(s.delay); return len(p), nil }
func (s slowDisk) Close() error                { return nil }

// BenchmarkAppendSlowDisk compares what the producer pays per request when
// every write takes 200 µs: Writer.Request (queued, written in batches by the
// background goroutine) against a synchronous write and flush per request.
// One op is 2 000 requests.
func BenchmarkAppendSlowDisk(b *testing.B) {
	const n = 2000
	disk := slowDisk{delay: 200 * time.Microsecond}
	reqs := benchRequests(n)
	var queued, direct time.Duration
	maxBacklog := 0
	for range b.N {
		dir := filepath.Join(b.TempDir(), "run")
		w, err := create(dir, func(name string) (io.WriteCloser, error) { return disk, nil })
		if err != nil {
			b.Fatal(err)
		}
		queued += writeQueued(b, w, reqs)
		maxBacklog = max(maxBacklog, w.MaxBacklog())

		direct += writeSync(disk, reqs)
	}
	total := float64(b.N * n)
	b.ReportMetric(float64(queued.Nanoseconds())/total, "ns/request-queued")
	b.ReportMetric(float64(direct.Nanoseconds())/total, "ns/request-sync")
	b.ReportMetric(float64(direct)/float64(queued), "sync/queued")
	b.ReportMetric(float64(maxBacklog), "max-backlog")
}

package results

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeBenchShards writes total requests of a plan of nPhases equal phases
// at 2000/s, 1 s pauses between them, as n shard runs under dir, streaming:
// request k of a phase goes to shard k mod n; each shard's rows are written
// with neighbours swapped in pairs, so the merge has to reorder them.
func writeBenchShards(b *testing.B, dir string, total, n, nPhases int) []string {
	b.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var phases []PhaseStats
	for i := range nPhases {
		if i > 0 {
			phases = append(phases, PhaseStats{Name: fmt.Sprintf("pause%d", i), Duration: time.Second})
		}
		phases = append(phases, PhaseStats{Name: fmt.Sprintf("load%d", i+1), Rate: 2000, Planned: total / nPhases})
	}
	for i := range phases {
		if phases[i].Rate > 0 {
			phases[i].Duration = time.Duration(float64(phases[i].Planned) / phases[i].Rate * float64(time.Second))
		}
	}
	items := map[string]string{"experiment": "attack", "phases": fmt.Sprint(phases), "shards": fmt.Sprint(n)}
	var dirs []string
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(d, DirMode); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(filepath.Join(d, RequestsFile))
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		cw := csv.NewWriter(bw)
		_ = cw.Write(RequestColumns())
		arm := Arm{Name: "attack", Thresholds: Thresholds{FailureRate: Unknown, SlowCallRate: Unknown}}
		var rec []string
		var pending *Request
		seq := 0
		t0 := start
		for _, ph := range phases {
			ps := PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration}
			for k := i; k < ph.Planned; k += n {
				seq++
				it := t0.Add(time.Duration(float64(k) / ph.Rate * float64(time.Second)))
				h := uint64(k)*0x9e3779b97f4a7c15 + uint64(seq)
				r := Request{Arm: "attack", Seq: seq, Phase: ph.Name, Intended: it, Sent: it.Add(time.Duration(h%1000) * time.Microsecond),
					Latency: time.Duration(1+h%400_000) * time.Microsecond, Status: 200, Outcome: OutcomeSucceeded}
				if h%10 < 3 {
					r.Status, r.Outcome, r.Error = 503, OutcomeRejected, "503 Service Unavailable"
				}
				ps.Planned++
				arm.Add(r)
				if pending == nil {
					pending = &r
					continue
				}
				rec = requestRecord(rec, r)
				_ = cw.Write(rec)
				rec = requestRecord(rec, *pending)
				_ = cw.Write(rec)
				pending = nil
			}
			if p := arm.Phase(ph.Name); p != nil {
				p.Planned, p.Rate, p.Duration = ps.Planned, ps.Rate, ps.Duration
			} else {
				arm.Phases = append(arm.Phases, ps)
			}
			t0 = t0.Add(ph.Duration)
		}
		if pending != nil {
			rec = requestRecord(rec, *pending)
			_ = cw.Write(rec)
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			b.Fatal(err)
		}
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		for _, name := range []string{SamplesFile, EventsFile} {
			if err := os.WriteFile(filepath.Join(d, name), nil, FileMode); err != nil {
				b.Fatal(err)
			}
		}
		run := &Run{Experiment: "attack", Complete: true, Started: start, Arms: []Arm{arm},
			Shard: &Shard{Index: i, Count: n, Plan: PlanID(items), PlanItems: items, StartAt: start}}
		if err := writeFileAtomic(d, RunFile, func(o io.Writer) error { return EncodeRun(o, run) }); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

// peakHeap samples the live heap every millisecond until stop is called and
// returns the largest value seen, in bytes.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	wg.Go(func() {
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-tk.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// BenchmarkMerge merges 4 shard runs of 250 k and 1 M requests in total,
// in 2 or 10 phases, without report.html, and reports the merge rate, the
// peak live heap during the merge (sampled each millisecond after a GC), and
// what the merge held: the reorder buffer, the largest phase's latencies,
// the sorted latency runs (one a phase) spilled for the arm's percentiles.
func BenchmarkMerge(b *testing.B) {
	for _, c := range []struct{ total, phases int }{{250_000, 2}, {1_000_000, 2}, {1_000_000, 10}} {
		total := c.total
		b.Run(fmt.Sprintf("requests=%d/phases=%d/shards=4", total, c.phases), func(b *testing.B) {
			dir := b.TempDir()
			dirs := writeBenchShards(b, filepath.Join(dir, "in"), total, 4, c.phases)
			i := 0
			var peak uint64
			var st MergeStats
			for b.Loop() {
				i++
				out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
				runtime.GC()
				stop := peakHeap()
				var err error
				_, st, err = Merge(dirs, MergeOptions{Out: out})
				peak = max(peak, stop())
				if err != nil {
					b.Fatal(err)
				}
				if st.Requests != total {
					b.Fatalf("merged %d requests, want %d", st.Requests, total)
				}
				b.StopTimer()
				_ = os.RemoveAll(out)
				b.StartTimer()
			}
			b.ReportMetric(float64(total)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(st.MaxHeld), "max-held")
			b.ReportMetric(float64(st.MaxPhase), "max-phase")
			b.ReportMetric(float64(st.LatencyRuns), "latency-runs")
		})
	}
}

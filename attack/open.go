package attack

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// fragPrefix tags the first step's URL with the request's Seq so the vegeta
// Result (which carries the URL) finds its flow run again. A URL fragment is
// never sent on the wire, so the target does not see it.
const fragPrefix = "#cbprobe-"

// stopError is returned by the targeter to end a phase's attack without a send.
type stopError string

func (e stopError) Error() string { return string(e) }

// errStopped ends a phase's attack when the run is cancelled, and errPhaseOver
// when a send comes due after its phase ended (the tick waited for a worker).
const (
	errStopped   = stopError("attack stopped")
	errPhaseOver = stopError("phase over")
)

// slot is one scheduled send: its intended time, and its Seq once it is
// handed to a worker.
type slot struct {
	seq      int64
	intended time.Time
}

// slotQueue hands scheduled slots from the pacer to the targeter, in order.
type slotQueue struct {
	mu    sync.Mutex
	slots []slot
	head  int
}

func (q *slotQueue) push(s slot) {
	q.mu.Lock()
	if q.head > 1024 && q.head*2 > len(q.slots) {
		q.slots = append(q.slots[:0], q.slots[q.head:]...)
		q.head = 0
	}
	q.slots = append(q.slots, s)
	q.mu.Unlock()
}

// take pops the oldest slot and numbers it from seq, under one lock so Seqs
// follow intended-send order. A slot taken at or after end is returned with
// late = true and no Seq.
func (q *slotQueue) take(seq *atomic.Int64, end time.Time) (s slot, ok, late bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head >= len(q.slots) {
		return slot{}, false, false
	}
	s = q.slots[q.head]
	q.head++
	if !time.Now().Before(end) {
		return s, true, true
	}
	s.seq = seq.Add(1)
	return s, true, false
}

// pacer is a vegeta.Pacer for one phase that never catches up: slot i is due
// at start + i/rate; a slot the pacer reaches more than dropAfter late, or at
// or after the phase's end, is dropped and counted instead of sent.
// vegeta calls Pace from one goroutine only.
type pacer struct {
	start, end time.Time
	rate       float64
	planned    int
	dropAfter  time.Duration
	next       int
	queue      *slotQueue
	stopped    *atomic.Bool
}

func (p *pacer) due(i int) time.Time {
	return p.start.Add(time.Duration(float64(i) / p.rate * float64(time.Second)))
}

// Pace implements vegeta.Pacer. It ignores vegeta's elapsed and hit count and
// works from its own schedule.
func (p *pacer) Pace(time.Duration, uint64) (time.Duration, bool) {
	if p.stopped.Load() {
		return 0, true
	}
	now := time.Now()
	if !now.Before(p.end) {
		p.next = p.planned
		return 0, true
	}
	for p.next < p.planned {
		due := p.due(p.next)
		p.next++
		if now.Sub(due) > p.dropAfter {
			continue // dropped: counted at the phase's end as due - sent
		}
		p.queue.push(slot{intended: due})
		return max(due.Sub(now), 0), false
	}
	return 0, true
}

// Rate implements vegeta.Pacer (informational: the phase's rate).
func (p *pacer) Rate(time.Duration) float64 { return p.rate }

// ctxTransport runs every request of a phase's Attacker under the run's
// context plus the per-request timeout (covering the answer's body too), so a
// cancelled run aborts requests in flight. It replaces http.Client.Timeout for
// the Attacker, at the same cost: one context and one body wrapper a request.
type ctxTransport struct {
	ctx     context.Context
	timeout time.Duration
	base    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.timeout)
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		if ctx.Err() == context.DeadlineExceeded && t.ctx.Err() == nil {
			return nil, fmt.Errorf("timeout after %s: %w", t.timeout, err)
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelBody releases the request's context once the body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close implements io.Closer.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// readLimited reads up to limit bytes and discards the rest, so the
// connection can be reused.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit))
	if err != nil {
		return body, err
	}
	_, err = io.Copy(io.Discard, r)
	return body, err
}

// sleepUntil waits until t or ctx is done; it reports whether t was reached.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// open runs the open-model phases.
func (e *engine) open(ctx context.Context) (Summary, error) {
	maxBody := int64(BodyLimit)
	if len(e.steps[0].capture) > 0 {
		maxBody = captureLimit
	}
	phases := e.cfg.Phases
	stats := make([]*phaseStats, len(phases))
	starts := make([]time.Time, len(phases))
	var (
		drains    sync.WaitGroup
		attackers []*vegeta.Attacker
	)
	started := time.Now()
	t0 := started
	for i, ph := range phases {
		stats[i] = &phaseStats{}
		starts[i] = t0
		t0 = t0.Add(ph.Duration)
	}
	end := t0 // the end of the last phase
	cancelled := false
	for i, ph := range phases {
		t0 := starts[i]
		if !sleepUntil(ctx, t0) {
			cancelled = true
			break
		}
		if e.cfg.stall != nil {
			e.cfg.stall(i)
		}
		e.log.Debug("phase start", "phase", ph.Name, "rate_per_s", ph.Rate, "duration", ph.Duration)
		if ph.Rate > 0 {
			q := &slotQueue{}
			interval := time.Duration(float64(time.Second) / ph.Rate)
			p := &pacer{
				start: t0, end: t0.Add(ph.Duration), rate: ph.Rate, planned: ph.Planned(),
				dropAfter: max(e.cfg.DropAfter, interval), queue: q, stopped: &e.stopped,
			}
			opts := []func(*vegeta.Attacker){
				vegeta.Client(e.client), vegeta.Timeout(0), vegeta.MaxBody(maxBody),
			}
			if e.cfg.MaxWorkers > 0 {
				opts = append(opts, vegeta.Workers(uint64(min(e.cfg.MaxWorkers, vegeta.DefaultWorkers))), vegeta.MaxWorkers(uint64(e.cfg.MaxWorkers)))
			}
			atk := vegeta.NewAttacker(opts...)
			attackers = append(attackers, atk)
			results := atk.Attack(e.targeter(i, ph.Name, stats[i], q, p.end), p, 0, ph.Name)
			drains.Add(1)
			go func() {
				defer drains.Done()
				e.drain(ctx, results)
			}()
		}
	}
	if !cancelled && !sleepUntil(ctx, end) {
		cancelled = true
	}
	cutoff := end
	if cancelled {
		cutoff = time.Now()
		e.stopped.Store(true)
		for _, a := range attackers {
			a.Stop()
		}
	}
	drains.Wait()
	e.flows.Wait()
	sum := Summary{Started: started}
	for i, ph := range phases {
		ps := stats[i].summary(ph, starts[i], ph.Planned())
		ps.Dropped = max(dueBefore(ph, starts[i], cutoff)-ps.Sent, 0)
		sum.Phases = append(sum.Phases, ps)
	}
	sum.Ended = time.Now()
	if cancelled {
		return sum, ctx.Err()
	}
	return sum, nil
}

// dueBefore counts the phase's scheduled sends due before cutoff.
//
// Dropped is computed from it rather than counted where sends are skipped:
// a send is dropped when its time came (before its phase ended, or before
// the run was cancelled) and it never left, whichever part of the engine
// gave up on it.
func dueBefore(ph Phase, start, cutoff time.Time) int {
	planned := ph.Planned()
	if !cutoff.Before(start.Add(ph.Duration)) {
		return planned
	}
	if !cutoff.After(start) || ph.Rate <= 0 {
		return 0
	}
	n := int(math.Ceil(cutoff.Sub(start).Seconds() * ph.Rate))
	return min(n, planned)
}

// targeter builds the first step's request for the next scheduled slot.
//
// A tick can wait for a free worker after the pacer released it (with
// MaxWorkers). If it is handed out at or after the phase's end, the send is
// dropped (counted) and the phase's attack stops: nothing leaves in the next
// phase's time, in particular not in a pause.
func (e *engine) targeter(phase int, name string, stats *phaseStats, q *slotQueue, end time.Time) vegeta.Targeter {
	cs := &e.steps[0]
	return func(t *vegeta.Target) error {
		if e.stopped.Load() {
			return errStopped
		}
		s, ok, over := q.take(&e.seq, end)
		if !ok {
			// Cannot happen: the pacer queues a slot before every tick.
			return errStopped
		}
		if over {
			return errPhaseOver // dropped: counted at the phase's end
		}
		fr := e.newFlowRun(s.seq, phase, name, stats, 0, s.intended)
		rs, err := e.render(cs, &fr.data)
		if err != nil {
			// Make vegeta fail the request without sending it; drain reports
			// the render error.
			fr.res.Error = err.Error()
			t.Method = "INVALID METHOD"
		} else {
			t.Method, t.Body, t.Header = rs.method, rs.body, rs.header
		}
		u := rs.url
		if i := strings.IndexByte(u, '#'); i >= 0 {
			u = u[:i]
		}
		t.URL = u + fragPrefix + strconv.FormatInt(s.seq, 10)
		e.pendMu.Lock()
		e.pending[s.seq] = fr
		e.pendMu.Unlock()
		return nil
	}
}

// drain turns the phase's vegeta results into flow runs: it finishes
// single-step runs and hands multi-step runs to their own goroutine.
func (e *engine) drain(ctx context.Context, results <-chan *vegeta.Result) {
	cs := &e.steps[0]
	for r := range results {
		i := strings.LastIndex(r.URL, fragPrefix)
		if i < 0 {
			continue // the targeter refused (run stopped): nothing was sent
		}
		seq, err := strconv.ParseInt(r.URL[i+len(fragPrefix):], 10, 64)
		if err != nil {
			continue
		}
		e.pendMu.Lock()
		fr, ok := e.pending[seq]
		delete(e.pending, seq)
		e.pendMu.Unlock()
		if !ok {
			continue
		}
		fr.res.Sent = r.Timestamp
		fr.stats.sent.Add(1)
		if fr.res.Sent.Sub(fr.intended) > e.lateAfter {
			fr.stats.late.Add(1)
		}
		sr := StepResult{Name: cs.name, Status: int(r.Code), Sent: r.Timestamp, Latency: r.Latency, Error: r.Error}
		if fr.res.Error != "" { // render error
			sr.Error, sr.Status = fr.res.Error, 0
			fr.res.Error = ""
		}
		if !e.finishStep(fr, cs, sr, r.Body) || len(e.steps) == 1 {
			e.complete(fr)
			continue
		}
		e.flows.Add(1)
		go func() {
			defer e.flows.Done()
			e.runSteps(ctx, fr, 1)
			e.complete(fr)
		}()
	}
}

// sequential runs Users users, each doing Requests flow runs back to back.
func (e *engine) sequential(ctx context.Context) (Summary, error) {
	st := &phaseStats{}
	started := time.Now()
	var wg sync.WaitGroup
	for u := 1; u <= e.cfg.Users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < e.cfg.Requests; i++ {
				if i > 0 && e.cfg.Think > 0 && !sleepUntil(ctx, time.Now().Add(e.cfg.Think)) {
					return
				}
				if ctx.Err() != nil {
					return
				}
				seq := e.seq.Add(1)
				fr := e.newFlowRun(seq, 0, "sequential", st, u, time.Now())
				e.runSteps(ctx, fr, 0)
				st.sent.Add(1)
				if fr.res.Sent.Sub(fr.intended) > e.lateAfter {
					st.late.Add(1)
				}
				e.complete(fr)
			}
		}()
	}
	wg.Wait()
	ph := Phase{Name: "sequential"}
	sum := Summary{Started: started, Phases: []PhaseSummary{st.summary(ph, started, e.cfg.Users*e.cfg.Requests)}}
	sum.Ended = time.Now()
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	return sum, nil
}

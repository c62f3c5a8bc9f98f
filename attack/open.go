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

// schedule is one rate phase's send plan: slot i is due at start + i/rate.
// Its Pace method is the phase's vegeta.Pacer (called from vegeta's one pacing
// goroutine) and its take method feeds the phase's targeter (called from
// vegeta's workers).
//
// Every slot ends in exactly one count, each counted where it happens:
// released and taken by a worker before the phase's end (sent: it gets a
// Seq), skipped by the pacer more than dropAfter behind (late), taken by a
// worker at or after the phase's end (over), or, once the attack is over,
// never reached by the pacer or released and never taken (counted by
// dropped, if due before the cutoff). So sent + dropped = planned is a real
// check on the result pipeline, not an identity.
type schedule struct {
	start, end time.Time
	rate       float64
	planned    int
	dropAfter  time.Duration
	stopped    *atomic.Bool
	shard      Shard // slot i of this schedule is the phase's slot shard.slot(i)
	// stall, when set (tests only), runs before the pacer looks at slot next.
	stall func(next int)

	mu     *sync.Mutex // shared by every phase of the run: Seqs follow intended order across phases
	next   int         // the next slot the pacer looks at
	queue  []int       // released slots not yet taken, from head on, oldest first
	head   int
	handed int           // slots given a Seq
	late   int           // skipped by the pacer: more than dropAfter behind
	over   int           // taken at or after the phase's end
	behind time.Duration // the furthest behind schedule seen (now - due)
}

func (s *schedule) due(i int) time.Time {
	return s.start.Add(time.Duration(float64(s.shard.slot(i)) / s.rate * float64(time.Second)))
}

// now is the current time on the phase's monotonic clock: start plus the
// monotonic time since start. It costs one clock read where time.Now costs
// two (wall and monotonic), and the pacer and every worker call it per send.
func (s *schedule) now() time.Time {
	return s.start.Add(time.Since(s.start))
}

func (s *schedule) noteBehind(d time.Duration) {
	s.behind = max(s.behind, d)
}

// Pace implements vegeta.Pacer. It ignores vegeta's elapsed time and hit
// count and works from the phase's own schedule: it releases the next slot
// at its due time, skips (drops) the slots more than dropAfter behind, and
// stops at the phase's end. It never catches up beyond dropAfter, so a
// stall drops only the sends whose time passed by more than dropAfter and
// the phase then goes on on schedule.
func (s *schedule) Pace(time.Duration, uint64) (time.Duration, bool) {
	if s.stopped.Load() {
		return 0, true
	}
	if s.stall != nil {
		s.mu.Lock()
		next := s.next
		s.mu.Unlock()
		s.stall(next)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !now.Before(s.end) {
		// The slots left were due before the end and never reached: dropped
		// (counted by dropped). A whole phase goes this way only if the
		// process stalled for the whole phase.
		if s.next < s.planned {
			s.noteBehind(now.Sub(s.due(s.next)))
		}
		return 0, true
	}
	for s.next < s.planned {
		i := s.next
		s.next++
		lag := now.Sub(s.due(i))
		s.noteBehind(lag)
		if lag > s.dropAfter {
			s.late++
			continue
		}
		if s.head > 1024 && s.head*2 > len(s.queue) {
			s.queue = append(s.queue[:0], s.queue[s.head:]...)
			s.head = 0
		}
		s.queue = append(s.queue, i)
		return max(-lag, 0), false
	}
	return 0, true
}

// Rate implements vegeta.Pacer (informational: the phase's rate).
func (s *schedule) Rate(time.Duration) float64 { return s.rate }

// take pops the oldest released slot for a worker's tick. Before the phase's
// end it numbers the slot from seq and returns its intended time and the
// send time (now, which is never before the intended time: a slot's tick
// is given out at or after its due time, and ticks are taken in order).
// At or after the end the slot is counted as over and over is true.
// ok is false if no slot is waiting (it cannot happen: the pacer releases a
// slot before every tick).
func (s *schedule) take(seq *atomic.Int64) (n int64, intended, sent time.Time, ok, over bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head >= len(s.queue) {
		return 0, time.Time{}, time.Time{}, false, false
	}
	i := s.queue[s.head]
	s.head++
	intended = s.due(i)
	now := s.now()
	s.noteBehind(now.Sub(intended))
	if !now.Before(s.end) {
		s.over++
		return 0, intended, now, true, true
	}
	s.handed++
	return seq.Add(1), intended, now, true, false
}

// drops is a phase's dropped sends by where they were given up.
type drops struct {
	late      int // skipped by the pacer: more than dropAfter behind
	over      int // taken by a worker at or after the phase's end
	unreached int // never reached by the pacer before the phase ended or the run stopped
	untaken   int // released, but no worker took them before the attack ended
}

func (d drops) total() int { return d.late + d.over + d.unreached + d.untaken }

// dropped counts the phase's dropped sends once its attack is over: the
// pacer's and the targeter's drops, plus the slots due before cutoff that
// were never reached or never taken. Slots due at or after cutoff (a
// cancelled run) are not dropped: their time never came.
func (s *schedule) dropped(ph Phase, cutoff time.Time) drops {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := drops{late: s.late, over: s.over}
	for _, i := range s.queue[s.head:] {
		if s.due(i).Before(cutoff) {
			d.untaken++
		}
	}
	d.unreached = max(s.shard.dueBefore(ph, s.start, cutoff)-s.next, 0)
	return d
}

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
	if !e.cfg.StartAt.IsZero() {
		started = e.cfg.StartAt
	}
	t0 := started
	for i, ph := range phases {
		stats[i] = &phaseStats{}
		starts[i] = t0
		t0 = t0.Add(ph.Duration)
	}
	end := t0 // the end of the last phase
	cancelled := false
	scheds := make([]*schedule, len(phases))
	var takeMu sync.Mutex
	for i, ph := range phases {
		t0 := starts[i]
		if !sleepUntil(ctx, t0) {
			cancelled = true
			break
		}
		e.log.Debug("phase start", "phase", ph.Name, "rate_per_s", ph.Rate, "duration", ph.Duration, "late_by", time.Since(t0))
		if ph.Rate > 0 {
			interval := time.Duration(float64(time.Second) / ph.Rate)
			sc := &schedule{
				start: t0, end: t0.Add(ph.Duration), rate: ph.Rate, planned: e.cfg.Shard.Planned(ph),
				dropAfter: max(e.cfg.DropAfter, interval), stopped: &e.stopped, mu: &takeMu, shard: e.cfg.Shard,
			}
			if e.cfg.stall != nil {
				sc.stall = func(next int) { e.cfg.stall(i, next) }
			}
			scheds[i] = sc
			opts := []func(*vegeta.Attacker){
				vegeta.Client(e.client), vegeta.Timeout(0), vegeta.MaxBody(maxBody),
			}
			if e.cfg.MaxWorkers > 0 {
				opts = append(opts, vegeta.Workers(uint64(min(e.cfg.MaxWorkers, vegeta.DefaultWorkers))), vegeta.MaxWorkers(uint64(e.cfg.MaxWorkers)))
			}
			atk := vegeta.NewAttacker(opts...)
			attackers = append(attackers, atk)
			results := atk.Attack(e.targeter(i, ph.Name, stats[i], sc), sc, 0, ph.Name)
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
		ps := stats[i].summary(ph, starts[i], e.cfg.Shard.Planned(ph))
		if sc := scheds[i]; sc != nil {
			d := sc.dropped(ph, cutoff)
			ps.Dropped = d.total()
			sc.mu.Lock()
			handed := sc.handed
			ps.Behind = sc.behind
			sc.mu.Unlock()
			if handed != ps.Sent {
				// Cannot happen: every numbered slot's request yields one result.
				e.log.Error("attack: sends and results disagree", "phase", ph.Name, "numbered", handed, "results", ps.Sent)
			}
			if ps.Dropped > 0 {
				e.log.Info("load generator fell behind: sends dropped", "phase", ph.Name, "planned", ps.Planned,
					"sent", ps.Sent, "dropped", ps.Dropped, "behind", ps.Behind, "dropped_behind", d.late,
					"dropped_at_end", d.over, "dropped_unreached", d.unreached, "dropped_untaken", d.untaken)
			}
		}
		sum.Phases = append(sum.Phases, ps)
	}
	sum.Ended = time.Now()
	if cancelled {
		return sum, ctx.Err()
	}
	return sum, nil
}

// dueBefore counts the phase's scheduled sends due before cutoff (slot i is
// due at start + i/rate).
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

// inflight is a first step between the targeter and its vegeta result: what
// the targeter knew when it built the request. It is kept by value in
// engine.pending (no allocation); only flows that need more than their first
// request (more steps, or captures) carry a flowRun.
type inflight struct {
	fr       *flowRun // nil for a one-step flow without captures
	stats    *phaseStats
	phase    int
	orderID  string
	intended time.Time
	sent     time.Time
	err      string // the render error, if any
}

// targeter builds the first step's request for the next released slot.
//
// A targeter error ends the phase's whole vegeta attack, so it returns one
// only when the phase is over for good: the run was cancelled, or a tick was
// taken at or after the phase's end (it waited for a free worker, or the
// process stalled). That send is dropped (counted) and nothing of the phase
// leaves in the next phase's time, in particular not in a pause. A send
// taken before the end always leaves, late if need be.
//
// A constant first step (no template in its URL, headers or body) costs two
// allocations: the URL (with the Seq fragment) and the OrderID.
func (e *engine) targeter(phase int, name string, stats *phaseStats, sc *schedule) vegeta.Targeter {
	cs := &e.steps[0]
	return func(t *vegeta.Target) error {
		if e.stopped.Load() {
			return errStopped
		}
		seq, intended, sent, ok, over := sc.take(&e.seq)
		if !ok {
			// Cannot happen: the pacer releases a slot before every tick.
			return errStopped
		}
		if over {
			return errPhaseOver // dropped: counted by the schedule
		}
		h := inflight{stats: stats, phase: phase, intended: intended, sent: sent}
		var data *TemplateData
		if e.keepRuns {
			h.fr = e.newFlowRun(seq, phase, name, stats, 0, intended)
			h.fr.res.Sent = sent
			data = &h.fr.data
			h.orderID = data.OrderID
		} else {
			h.orderID = orderID(e.cfg.RunID, seq)
			if !cs.constant {
				data = &TemplateData{Seq: int(seq), OrderID: h.orderID, UserID: openUserID}
			}
		}
		prefix := e.urlPrefix
		if cs.constant {
			t.Method, t.Body, t.Header = cs.method, cs.constBody, cs.constHeader
		} else {
			rs, err := e.render(cs, data)
			if err != nil {
				// Make vegeta fail the request without sending it; handle
				// reports the render error.
				h.err = err.Error()
				t.Method = "INVALID METHOD"
			} else {
				t.Method, t.Body, t.Header = rs.method, rs.body, rs.header
			}
			if prefix == "" {
				prefix = withoutFragment(rs.url) + fragPrefix
			}
		}
		var n [20]byte
		t.URL = prefix + string(strconv.AppendInt(n[:0], seq, 10))
		e.pendMu.Lock()
		e.pending[seq] = h
		e.pendMu.Unlock()
		return nil
	}
}

// withoutFragment cuts a URL's #fragment.
func withoutFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// drain turns the phase's vegeta results into flow runs.
func (e *engine) drain(ctx context.Context, results <-chan *vegeta.Result) {
	for r := range results {
		e.handle(ctx, r)
	}
}

// handle turns one vegeta result into its flow run's first step: it finishes
// one-step runs and hands multi-step runs to their own goroutine.
func (e *engine) handle(ctx context.Context, r *vegeta.Result) {
	i := strings.LastIndex(r.URL, fragPrefix)
	if i < 0 {
		return // the targeter refused (run stopped): nothing was sent
	}
	seq, err := strconv.ParseInt(r.URL[i+len(fragPrefix):], 10, 64)
	if err != nil {
		return
	}
	e.pendMu.Lock()
	h, ok := e.pending[seq]
	delete(e.pending, seq)
	e.pendMu.Unlock()
	if !ok {
		return
	}
	// h.sent is when the targeter took the slot, right before the request
	// went out. vegeta's Timestamp is taken before the targeter runs, so
	// under load it can belong to an earlier slot's moment (and precede this
	// slot's intended time): only the end of the hit is used.
	h.stats.sent.Add(1)
	if h.sent.Sub(h.intended) > e.lateAfter {
		h.stats.late.Add(1)
	}
	cs := &e.steps[0]
	done := r.Timestamp.Add(r.Latency)
	sr := StepResult{Name: cs.name, Status: int(r.Code), Sent: h.sent, Latency: max(done.Sub(h.sent), 0), Error: r.Error}
	if h.err != "" { // render error
		sr.Error, sr.Status = h.err, 0
	}
	if h.fr == nil {
		// A one-step flow without captures: the run lives on the stack.
		fr := flowRun{seq: seq, phase: h.phase, stats: h.stats, intended: h.intended, res: Result{
			Seq: int(seq), Phase: h.phase, PhaseName: e.cfg.Phases[h.phase].Name, OrderID: h.orderID,
			Intended: h.intended, Sent: h.sent,
		}}
		e.finishStep(&fr, cs, sr, r.Body)
		e.complete(&fr)
		return
	}
	fr := h.fr
	if !e.finishStep(fr, cs, sr, r.Body) || len(e.steps) == 1 {
		e.complete(fr)
		return
	}
	e.flows.Add(1)
	go func() {
		defer e.flows.Done()
		e.runSteps(ctx, fr, 1)
		e.complete(fr)
	}()
}

// sequential runs Users users, each doing Requests flow runs back to back.
func (e *engine) sequential(ctx context.Context) (Summary, error) {
	st := &phaseStats{}
	if !e.cfg.StartAt.IsZero() && !sleepUntil(ctx, e.cfg.StartAt) {
		return Summary{Started: e.cfg.StartAt, Ended: time.Now(), Phases: []PhaseSummary{
			st.summary(Phase{Name: "sequential"}, e.cfg.StartAt, e.cfg.Shard.Users(e.cfg.Users)*e.cfg.Requests)}}, ctx.Err()
	}
	started := time.Now()
	var wg sync.WaitGroup
	for j := 1; j <= e.cfg.Shard.Users(e.cfg.Users); j++ {
		u := e.cfg.Shard.User(j)
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
	sum := Summary{Started: started, Phases: []PhaseSummary{st.summary(ph, started, e.cfg.Shard.Users(e.cfg.Users)*e.cfg.Requests)}}
	sum.Ended = time.Now()
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	return sum, nil
}

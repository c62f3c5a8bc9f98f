// Package runner runs one arm of load for every command that runs load
// (`cbprobe attack` and `cbprobe experiment`): it starts the target when
// asked (the embedded service, or the user's service with --service), polls
// the breaker's metrics while the attack runs, streams requests, samples and
// events to the run directory, drains the metrics after the last request, and
// reconciles its evidence before any verdict (collect.Reconcile). Rules about
// observation live here once.
//
// Imports point one way: runner uses attack, collect and results; experiments
// and cmd/cbprobe use runner.
package runner

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/results"
)

// LagShare is the share of planned requests that may be dropped or sent late
// (attack's LateAfter, 10 ms by default) before the load generator counts as
// fallen behind: above it the run warns and comparisons whose value depends
// on timing are inconclusive. At least one request is always allowed.
const LagShare = 0.01

// DownStreak is the number of consecutive requests failing without an answer
// (transport errors) after which the target is reported as not answering.
const DownStreak = 5

// MaxDrain bounds how long the runner keeps reading a Prometheus server after
// the last request, waiting for a scrape newer than it.
const MaxDrain = 2 * time.Minute

// Target is a started target: its base URL, the clock its breaker runs on,
// how much faster than real time that clock runs, and how to stop it.
type Target struct {
	// URL is the service's base URL.
	URL string
	// Clock is the service's clock (nil: the wall clock).
	Clock collect.Clock
	// Speed is how many times faster than real time Clock runs (0 or 1: real time).
	Speed float64
	// Stop stops what Start started (nil: nothing to stop).
	Stop func()
}

// Config is one arm.
type Config struct {
	// Arm names the arm in every record.
	Arm string
	// Attack is the load; its Target is set from Start when Start is given.
	Attack attack.Config
	// Start, when set, starts the target for this arm (the embedded reference
	// service, or the user's service) before anything else; Stop runs when the
	// arm ends.
	Start func(ctx context.Context) (Target, error)
	// Source makes the metrics source once the target is known; nil: no polling.
	Source func(target string, clock collect.Clock) (collect.Source, error)
	// Interval is the poll interval in real time (0: collect.DefaultInterval).
	Interval time.Duration
	// Thresholds complete what the source does not export (Prometheus).
	Thresholds collect.Thresholds
	// Breaker is the breaker asked for ("name" or "name@instance"). "" with
	// Prefer set picks Prefer if the metrics show it, else the only breaker
	// they show (with a note), else Prefer itself: with several other
	// breakers none is taken for it, and the arm is inconclusive, naming them.
	// "" without Prefer picks the only breaker, else the first that left
	// CLOSED, else the first seen (with a note).
	Breaker string
	// Prefer is the breaker the configuration names (the Feign name).
	Prefer string
	// Writer receives requests, samples and events as they happen.
	Writer *results.Writer
	// Logger receives diagnostics (nil discards).
	Logger *slog.Logger
	// Notify, when set, is told about a problem the moment it is first seen
	// (a metrics error, the target not answering), in one sentence.
	Notify func(msg string)
	// Progress, when set, is called about four times a second.
	Progress func(results.Progress)
	// BeforeAttack runs after polling started, just before the first request.
	BeforeAttack func()
	// OnResult sees every request's raw result (captured variables).
	OnResult func(attack.Result)
}

// Outcome is what one arm produced.
type Outcome struct {
	// Target is the URL the load went to.
	Target string
	// Started is when the load started (wall clock).
	Started time.Time
	// Requests are every request, by Seq.
	Requests []results.Request
	// Summary is the load engine's account (planned, dropped, late).
	Summary attack.Summary
	// Recording is everything the metrics source delivered (service clock).
	Recording collect.Recording
	// Gaps are the polling gaps (service clock).
	Gaps []collect.Gap
	// PollErrors counts failed polls.
	PollErrors int
	// Breaker is the breaker the arm follows ("name" or "name@instance").
	Breaker string
	// Seen lists every breaker the metrics showed.
	Seen []string
	// Transitions are the followed breaker's transitions (wall clock), inferred ones included.
	Transitions []results.Transition
	// Reconciliation is the verdict on the evidence; nil without polling.
	Reconciliation *collect.Reconciliation
	// Lag says whether the load generator fell behind.
	Lag Lag
	// TargetDown says when and how the target stopped answering ("" if it did not).
	TargetDown string
	// Notes are remarks for the arm.
	Notes []string

	tl timeline
	// Instances are the followed breaker's replicas, when the metrics show it on
	// more than one instance (a fleet); nil otherwise.
	Instances []InstanceOutcome
}

// Lag is how far the load generator fell behind its plan.
type Lag struct {
	// Planned, Dropped and Late count requests (see attack.PhaseSummary).
	Planned, Dropped, Late int
	// Behind is true when Dropped+Late exceeds LagShare of Planned (at least 1).
	Behind bool
	// Warning states it, with the threshold ("" when not Behind).
	Warning string
}

// timeline maps the service's clock to the wall clock (the embedded service
// runs Speed times faster than real time).
type timeline struct {
	wall0, svc0 time.Time
	speed       float64
}

func (t timeline) toWall(s time.Time) time.Time {
	if s.IsZero() || t.speed == 1 {
		return s
	}
	return t.wall0.Add(time.Duration(float64(s.Sub(t.svc0)) / t.speed))
}

func (t timeline) fromWall(w time.Time) time.Time {
	if w.IsZero() || t.speed == 1 {
		return w
	}
	return t.svc0.Add(time.Duration(float64(w.Sub(t.wall0)) * t.speed))
}

// ToWall converts a time on the service's clock to the wall clock.
func (o *Outcome) ToWall(t time.Time) time.Time { return o.tl.toWall(t) }

// state is the live record of an arm, shared by the attack's emit, the
// sampler and the progress ticker.
type state struct {
	cfg *Config
	tl  timeline

	mu          sync.Mutex
	requests    []results.Request
	recording   collect.Recording
	gaps        []collect.Gap
	pollErrors  int
	errKinds    map[string]bool
	seenOrder   []string
	seen        map[string]bool
	leftClosed  string // first breaker seen in a state other than CLOSED
	lastState   string
	counts      results.Progress
	streak      int
	streakFrom  int
	streakErr   string
	downNotice  bool
	lastSvcSeen time.Time // newest ObservedAt of any sample (service clock)
	lastPoll    time.Time // newest good poll: lastSvcSeen, or its receive time without breakers (service clock)
	failStreak  int       // failed polls since the last good one
	failSince   time.Time // wall time of the last good poll before them (wall0 without one)
	lastFail    time.Time // wall time of the last failed poll
	stamped     bool      // the source stamps samples with its own scrape time
	notices     *notices  // Config.Notify's queue (nil without Notify)
	observed    []time.Time
}

// Run runs one arm: it starts the target (Config.Start), starts polling,
// runs the attack, drains the metrics and reconciles. The error is the
// context's on interruption (the Outcome then holds what was recorded), an
// infrastructure error when the target could not be started or reached, or
// the attack's own error.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = collect.DefaultInterval
	}
	tgt := Target{URL: cfg.Attack.Target}
	if cfg.Start != nil {
		var err error
		tgt, err = cfg.Start(ctx)
		if err != nil {
			return nil, err
		}
		if tgt.Stop != nil {
			defer tgt.Stop()
		}
		cfg.Attack.Target = tgt.URL
	}
	if !(tgt.Speed > 0) {
		tgt.Speed = 1
	}
	clock := tgt.Clock
	if clock == nil {
		clock = collect.SystemClock()
	}
	st := &state{cfg: &cfg, seen: map[string]bool{}, errKinds: map[string]bool{},
		tl: timeline{wall0: time.Now(), svc0: clock.Now(), speed: tgt.Speed}}
	out := &Outcome{Target: tgt.URL, tl: st.tl}
	if cfg.Notify != nil {
		st.notices = startNotices(cfg.Notify)
		defer st.notices.stop()
	}

	var sampler *collect.Sampler
	if cfg.Source != nil {
		src, err := cfg.Source(tgt.URL, clock)
		if err != nil {
			return nil, err
		}
		sampler, err = collect.NewSampler(collect.SamplerConfig{Source: src, Clock: clock, Logger: cfg.Logger,
			Interval: time.Duration(float64(cfg.Interval) * tgt.Speed), Thresholds: cfg.Thresholds})
		if err != nil {
			return nil, err
		}
	}
	pollCtx, stopPolling := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPolling()
	var pollWG sync.WaitGroup
	if sampler != nil {
		pollWG.Go(func() { sampler.Run(pollCtx, st.consume) })
	}
	if cfg.BeforeAttack != nil {
		cfg.BeforeAttack()
	}
	stopProgress := st.progress(cfg.Attack)
	out.Started = time.Now().UTC()
	if cfg.Writer != nil {
		cfg.Writer.Event(results.Event{Time: out.Started, Arm: cfg.Arm, Kind: "phase", Message: "attack started against " + tgt.URL})
	}
	summary, attackErr := attack.Run(ctx, cfg.Attack, st.addRequest)
	stopProgress()
	out.Summary = summary

	if sampler != nil && ctx.Err() == nil {
		st.drain(ctx)
	}
	stopPolling()
	pollWG.Wait()

	st.mu.Lock()
	defer st.mu.Unlock()
	out.Requests = append([]results.Request(nil), st.requests...)
	sort.Slice(out.Requests, func(i, j int) bool { return out.Requests[i].Seq < out.Requests[j].Seq })
	out.Recording, out.Gaps, out.PollErrors = st.recording, st.gaps, st.pollErrors
	out.Seen = append([]string(nil), st.seenOrder...)
	out.Lag = lagOf(summary)
	if ctx.Err() == nil && st.streak >= DownStreak {
		if err := attack.CheckTarget(context.WithoutCancel(ctx), tgt.URL, nil); err != nil {
			out.TargetDown = fmt.Sprintf("the target is not answering: requests #%d to the end (%d) got no answer (%s), nor did a check after the run: %v",
				st.streakFrom, st.streak, st.streakErr, err)
		}
	}
	if sampler != nil {
		out.Breaker, out.Notes = st.pick()
		keys := fleetKeys(out.Breaker, out.Seen)
		if keys == nil {
			out.analyse(&cfg, st)
		} else { // every replica's breaker on its own, instead of the one picked
			out.analyseFleet(&cfg, st, keys)
			out.Breaker = parseKey(keys[0]).Name
			out.Notes = append(out.Notes[:0], fmt.Sprintf("The metrics show %s on %d replicas (%s): each replica's transitions are labelled and reconciled on its own, and the arm's are all of them.",
				parseKey(keys[0]).Name, len(keys), strings.Join(keys, ", ")))
		}
	}
	if attackErr != nil {
		return out, attackErr
	}
	return out, ctx.Err()
}

func lagOf(s attack.Summary) Lag {
	var l Lag
	for _, p := range s.Phases {
		l.Planned += p.Planned
		l.Dropped += p.Dropped
		l.Late += p.Late
	}
	allowed := max(1, int(math.Floor(LagShare*float64(l.Planned))))
	if l.Dropped+l.Late > allowed {
		l.Behind = true
		l.Warning = fmt.Sprintf("the load generator fell behind: %d of %d planned requests were dropped and %d left late (more than %d, %.0f %% of the plan); comparisons that depend on timing are inconclusive: run on a less loaded machine or at a lower rate",
			l.Dropped, l.Planned, l.Late, allowed, 100*LagShare)
	}
	return l
}

// drain keeps polling after the last request: at least three poll
// intervals, and until a poll newer than the last answer plus one
// observation interval arrived (for a Prometheus server: a scrape that new),
// or polling has been failing since after the last answer (FailedDrain), or
// MaxDrain passed. A poll that hangs is waited for until it fails (the
// source's timeout), so a metrics endpoint that stopped answering is recorded
// as a gap, not mistaken for the end of polling.
func (st *state) drain(ctx context.Context) {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	if !wait(3 * st.cfg.Interval) {
		return
	}
	deadline := time.Now().Add(MaxDrain)
	for time.Now().Before(deadline) {
		st.mu.Lock()
		done := st.drained(time.Now())
		st.mu.Unlock()
		if done || !wait(st.cfg.Interval) {
			return
		}
	}
}

// FailedDrain is how long polling must have been failing (or hanging on one
// poll), since after the last request, for the drain to stop waiting for a
// fresh sample; at least three poll intervals, or three failed polls.
const FailedDrain = time.Second

// drained reports whether the drain may stop at now (mu held).
func (st *state) drained(now time.Time) bool {
	if len(st.requests) == 0 {
		return true
	}
	last := st.lastAnswer()
	if st.lastPoll.After(st.tl.fromWall(last.Add(st.scrapeInterval()))) {
		return true
	}
	return st.failStreak > 0 && st.lastFail.After(last) &&
		(st.failStreak >= 3 || now.Sub(st.failSince) >= max(3*st.cfg.Interval, FailedDrain))
}

// lastAnswer is the wall time of the latest answer (mu held).
func (st *state) lastAnswer() time.Time {
	var t time.Time
	for _, r := range st.requests {
		if end := r.Sent.Add(r.Latency); end.After(t) {
			t = end
		}
	}
	return t
}

// scrapeInterval is the real time between two fresh observations: the poll
// interval, or for a server-stamped source the spacing of its distinct scrape
// times (the median; 15 s, Prometheus' usual setting, until two are seen).
// mu held.
func (st *state) scrapeInterval() time.Duration {
	if !st.stamped {
		return st.cfg.Interval
	}
	var ds []time.Duration
	for i := 1; i < len(st.observed); i++ {
		if d := st.observed[i].Sub(st.observed[i-1]); d > 0 {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return 15 * time.Second
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return max(st.cfg.Interval, time.Duration(float64(ds[len(ds)/2])/st.tl.speed))
}

// notify queues msg for Config.Notify (mu may be held): messages are
// delivered in order by one goroutine, outside the state's lock, and every
// one before Run returns, so none is printed after the run's own output.
func (st *state) notify(msg string) {
	if st.notices != nil {
		st.notices.send(msg)
	}
}

// notices delivers messages to a callback from one goroutine, in order.
type notices struct {
	fn    func(string)
	mu    sync.Mutex
	queue []string
	wake  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
}

func startNotices(fn func(string)) *notices {
	n := &notices{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	n.wg.Go(n.loop)
	return n
}

func (n *notices) send(msg string) {
	n.mu.Lock()
	n.queue = append(n.queue, msg)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func (n *notices) loop() {
	for {
		stopping := false
		select {
		case <-n.wake:
		case <-n.done:
			stopping = true
		}
		for {
			n.mu.Lock()
			q := n.queue
			n.queue = nil
			n.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, m := range q {
				n.fn(m)
			}
		}
		if stopping {
			return
		}
	}
}

// stop delivers what is queued and returns when the last message was.
func (n *notices) stop() {
	close(n.done)
	n.wg.Wait()
}

func (st *state) since(w time.Time) string {
	return fmt.Sprintf("+%.1f s", w.Sub(st.tl.wall0).Seconds())
}

func (st *state) addRequest(r attack.Result) {
	req := results.Request{Arm: st.cfg.Arm, Seq: r.Seq, Phase: r.PhaseName, User: r.User,
		Intended: r.Intended.UTC(), Sent: r.Sent.UTC(), Latency: r.Latency,
		Status: r.Status, Outcome: results.Classify(r.Status, r.Body), Error: r.Error}
	if st.cfg.Writer != nil {
		st.cfg.Writer.Request(req)
	}
	if st.cfg.OnResult != nil {
		st.cfg.OnResult(r)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.requests = append(st.requests, req)
	st.counts.Sent++
	switch req.Outcome {
	case results.OutcomeSucceeded:
		st.counts.Succeeded++
	case results.OutcomeRejected:
		st.counts.Rejected++
	default:
		st.counts.Failed++
	}
	if r.Status == 0 && r.Error != "" {
		if st.streak == 0 {
			st.streakFrom, st.streakErr = r.Seq, r.Error
		}
		st.streak++
		if st.streak == DownStreak && !st.downNotice {
			st.downNotice = true
			msg := fmt.Sprintf("the target is not answering: %d requests in a row from #%d got no answer (%s)", st.streak, st.streakFrom, r.Error)
			st.event("target", "", msg)
			st.notify(msg)
		}
	} else {
		st.streak = 0
	}
}

// event queues one run event now (mu may be held).
func (st *state) event(kind, breaker, msg string) {
	if st.cfg.Writer != nil {
		st.cfg.Writer.Event(results.Event{Time: time.Now().UTC(), Arm: st.cfg.Arm, Kind: kind, Breaker: breaker, Message: msg})
	}
}

// consume records one sampler update: every poll error, every gap, every
// sample (unknown values as results.Unknown, time = when the values were read
// at the service), every service event with its kind.
func (st *state) consume(u collect.Update) {
	st.mu.Lock()
	defer st.mu.Unlock()
	w := st.cfg.Writer
	if u.Err != "" {
		if st.failStreak == 0 {
			st.failSince = st.tl.toWall(st.lastPoll)
			if st.lastPoll.IsZero() {
				st.failSince = st.tl.wall0
			}
		}
		st.failStreak++
		st.lastFail = time.Now()
		st.pollErrors++
		st.event("poll-error", "", u.Err)
		if !st.errKinds[u.Err] {
			st.errKinds[u.Err] = true
			msg := fmt.Sprintf("metrics: %s (at %s)", u.Err, st.since(time.Now()))
			st.notify(msg)
		}
	}
	if g := u.Gap; g != nil {
		st.gaps = append(st.gaps, *g)
		to := "the end"
		if !g.To.IsZero() {
			to = st.since(st.tl.toWall(g.To))
		}
		st.event("poll-gap", "", fmt.Sprintf("no breaker metrics for %d polls, from %s to %s (%s)",
			g.Polls, st.since(st.tl.toWall(g.From)), to, strings.Join(g.Reasons, "; ")))
	}
	s := u.Snapshot
	if s == nil {
		return
	}
	st.failStreak = 0
	if len(s.Breakers) == 0 && s.Received.After(st.lastPoll) {
		st.lastPoll = s.Received
	}
	for _, b := range s.Breakers {
		key := b.Key().String()
		if !st.seen[key] {
			st.seen[key] = true
			st.seenOrder = append(st.seenOrder, key)
		}
		if st.leftClosed == "" && b.State != "" && b.State != "CLOSED" {
			st.leftClosed = key
		}
		at := b.ObservedAt
		if at.IsZero() {
			at = b.Received
		}
		if !at.Equal(b.Received) {
			st.stamped = true
		}
		if at.After(st.lastSvcSeen) {
			st.lastSvcSeen = at
			st.observed = append(st.observed, at)
		}
		if at.After(st.lastPoll) {
			st.lastPoll = at
		}
		if key == st.follow() {
			st.lastState = b.State
		}
		st.recording.Samples = append(st.recording.Samples, b)
		if w != nil {
			w.Sample(results.Sample{Arm: st.cfg.Arm, Time: st.tl.toWall(at).UTC(), Source: s.Source, Breaker: key, State: b.State,
				FailureRate: known(b.FailureRate), SlowCallRate: known(b.SlowCallRate),
				FailureRateThreshold: known(b.FailureRateThreshold), SlowCallRateThreshold: known(b.SlowCallRateThreshold),
				Buffered: known(b.Buffered), Failed: known(b.Failed), Slow: known(b.Slow), SlowFailed: known(b.SlowFailed),
				NotPermitted: known(firstKnown(b.NotPermitted, b.NotPermittedTotal))})
		}
	}
	for _, e := range s.Events {
		st.recording.Events = append(st.recording.Events, e)
		if w == nil {
			continue
		}
		ev := results.Event{Time: st.tl.toWall(e.CreationTime).UTC(), Arm: st.cfg.Arm, Kind: e.Kind,
			Breaker: BreakerKey(e.Name, e.Instance), Type: e.Type, Message: e.ErrorMessage}
		if from, to, ok := strings.Cut(e.StateTransition, "_TO_"); ok {
			ev.From, ev.To = from, to
		}
		w.Event(ev)
	}
	for _, l := range s.Lost {
		st.event("lost-events", BreakerKey(l.Name, l.Instance), fmt.Sprintf("the service's event buffer (%d) may have dropped events between %s and %s (at least %d)",
			l.BufferSize, st.tl.toWall(l.After).UTC().Format(time.RFC3339Nano), st.tl.toWall(l.Before).UTC().Format(time.RFC3339Nano), l.AtLeast))
	}
	st.recording.Lost = append(st.recording.Lost, s.Lost...)
	st.recording.Limiters = append(st.recording.Limiters, s.Limiters...)
	st.recording.Restarts = append(st.recording.Restarts, s.Restarts...)
	for _, n := range s.Notices {
		st.event("note", "", n)
	}
	for _, wn := range s.Warnings {
		if !st.errKinds[wn] {
			st.errKinds[wn] = true
			st.event("note", "", wn)
			st.notify("metrics: " + wn)
		}
	}
}

// BreakerKey is "name" or "name@instance", the key every record uses.
func BreakerKey(name, instance string) string {
	return collect.BreakerKey{Name: name, Instance: instance}.String()
}

func known(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return results.Unknown
	}
	return f
}

func firstKnown(a, b float64) float64 {
	if !math.IsNaN(a) {
		return a
	}
	return b
}

// matches reports whether key ("name" or "name@instance") is what asked names.
func matches(key, asked string) bool {
	if key == asked {
		return true
	}
	name, _, _ := strings.Cut(key, "@")
	return !strings.Contains(asked, "@") && name == asked
}

// follow is the breaker followed so far (mu held).
func (st *state) follow() string {
	b, _ := st.pick()
	return b
}

// pick resolves the breaker the arm is about (mu held), with a note when the
// choice was not obvious.
func (st *state) pick() (string, []string) {
	find := func(asked string) string {
		for _, k := range st.seenOrder {
			if matches(k, asked) {
				return k
			}
		}
		return ""
	}
	if st.cfg.Breaker != "" {
		if k := find(st.cfg.Breaker); k != "" {
			return k, nil
		}
		return st.cfg.Breaker, nil
	}
	if st.cfg.Prefer != "" {
		if k := find(st.cfg.Prefer); k != "" {
			return k, nil
		}
		if len(st.seenOrder) == 1 {
			return st.seenOrder[0], []string{fmt.Sprintf("The metrics do not show %s; this arm follows the only breaker they show, %s: set --breaker to choose.",
				st.cfg.Prefer, st.seenOrder[0])}
		}
		// None of several other breakers is taken for the configured one:
		// the arm follows Prefer, unobserved, and reconciliation names them.
		return st.cfg.Prefer, nil
	}
	switch {
	case len(st.seenOrder) == 1:
		return st.seenOrder[0], nil
	case len(st.seenOrder) == 0:
		return "", nil
	}
	k := st.leftClosed
	why := "the first to leave CLOSED"
	if k == "" {
		k, why = st.seenOrder[0], "the first seen"
	}
	return k, []string{fmt.Sprintf("The metrics show %d breakers (%s); this arm follows %s, %s: set --breaker to choose.",
		len(st.seenOrder), strings.Join(st.seenOrder, ", "), k, why)}
}

// progress reports counts to Config.Progress four times a second until stopped.
func (st *state) progress(cfg attack.Config) func() {
	if st.cfg.Progress == nil {
		return func() {}
	}
	var total time.Duration
	for _, ph := range cfg.Phases {
		total += ph.Duration
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		prevSent, prevAt := 0, start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				st.mu.Lock()
				pr := st.counts
				pr.State = st.lastState
				st.mu.Unlock()
				pr.Elapsed, pr.Total = now.Sub(start), total
				if st.cfg.Writer != nil {
					pr.Backlog = st.cfg.Writer.Backlog()
				}
				if d := now.Sub(prevAt); d > 0 {
					pr.Rate = float64(pr.Sent-prevSent) / d.Seconds()
				}
				prevSent, prevAt = pr.Sent, now
				st.cfg.Progress(pr)
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

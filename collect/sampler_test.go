package collect

import (
	"context"
	"errors"
	"github.com/cbprobe/cbprobe/breaker"
	"reflect"
	"sync"
	"testing"
	"time"
)

// instantClock advances by the requested delay at once: the sampler runs as
// fast as the test can drive it, on a deterministic timeline.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *instantClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	go f()
	return stopper{}
}

type stopper struct{}

func (stopper) Stop() bool { return false }

// scripted returns one step per poll; the context is cancelled after the last.
type scripted struct {
	clk    Clock
	steps  []func(now time.Time) (Snapshot, error)
	i      int
	cancel context.CancelFunc
}

func (s *scripted) Name() string { return "scripted" }
func (s *scripted) Poll(ctx context.Context) (Snapshot, error) {
	if s.i >= len(s.steps) {
		s.cancel()
		return Snapshot{}, ctx.Err()
	}
	now := s.clk.Now()
	snap, err := s.steps[s.i](now)
	s.i++
	snap.Sent, snap.Received = now, now.Add(time.Millisecond)
	for i := range snap.Breakers {
		snap.Breakers[i].Sent, snap.Breakers[i].Received, snap.Breakers[i].ObservedAt = snap.Sent, snap.Received, snap.Received
	}
	for i := range snap.Events {
		snap.Events[i].Polled = snap.Received
	}
	return snap, err
}

func sample(state string, fail, slow float64) BreakerSample {
	b := newBreakerSample("pg", "")
	b.State, b.FailureRate, b.SlowCallRate = state, fail, slow
	b.FailureRateThreshold, b.SlowCallRateThreshold = 60, 50
	b.Buffered, b.Failed = 20, 9
	return b
}

func TestSamplerKeepsGoingThroughErrors(t *testing.T) {
	clk := &instantClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	refused := &FetchError{URL: "http://x/actuator/circuitbreakers", Kind: "refused", Msg: "connection refused"}
	ok := func(b BreakerSample) func(time.Time) (Snapshot, error) {
		return func(time.Time) (Snapshot, error) { return Snapshot{Breakers: []BreakerSample{b}}, nil }
	}
	fail := func(time.Time) (Snapshot, error) { return Snapshot{}, refused }
	src := &scripted{clk: clk, cancel: cancel, steps: []func(time.Time) (Snapshot, error){
		ok(sample("CLOSED", 40, 30)),
		fail, fail, fail, // service down mid-run: one report, one gap of 3 polls
		ok(sample("OPEN", 45, 55)), // opened during the gap: slow-call rate 55 >= 50
		ok(sample("OPEN", 45, 55)),
	}}
	s, err := NewSampler(SamplerConfig{Source: src, Interval: 50 * time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var ups []Update
	s.Run(ctx, func(u Update) { ups = append(ups, u) })
	var firsts, errs, gaps int
	var trans []Transition
	var rec Recording
	for _, u := range ups {
		if u.Err != "" {
			errs++
			if u.FirstOfKind {
				firsts++
			}
		}
		if u.Gap != nil {
			gaps++
			if u.Gap.Polls != 3 || len(u.Gap.Reasons) != 1 {
				t.Errorf("gap %+v", u.Gap)
			}
		}
		trans = append(trans, u.Transitions...)
		if u.Snapshot != nil {
			rec.Samples = append(rec.Samples, u.Snapshot.Breakers...)
			rec.Events = append(rec.Events, u.Snapshot.Events...)
		}
	}
	if errs != 3 || firsts != 1 || gaps != 1 {
		t.Errorf("errors %d (first %d), gaps %d", errs, firsts, gaps)
	}
	if len(trans) != 1 || trans[0].Cause != breaker.CauseSlowCallRate || trans[0].TimeSource != TimeFromPoll {
		t.Fatalf("transitions %+v", trans)
	}
	// The gap widens the interval: from the last CLOSED poll to the first OPEN one.
	if w := trans[0].Latest.Sub(trans[0].Earliest); w < 4*50*time.Millisecond {
		t.Errorf("interval %v too narrow for a 3-poll gap", w)
	}
	if len(rec.Samples) != 3 {
		t.Errorf("samples kept: %d", len(rec.Samples))
	}
	// Analyze on the recording gives what the live tracker gave.
	again := Analyze(rec.Samples, rec.Events, nil)
	if !reflect.DeepEqual(stripPrivate(again), stripPrivate(s.Tracker().Transitions())) {
		t.Errorf("Analyze differs from the live tracker:\n%+v\n%+v", again, s.Tracker().Transitions())
	}
}

func stripPrivate(ts []Transition) []Transition {
	out := make([]Transition, len(ts))
	for i, t := range ts {
		out[i] = Transition{Breaker: t.Breaker, From: t.From, To: t.To, Time: t.Time, Earliest: t.Earliest, Latest: t.Latest,
			TimeSource: t.TimeSource, Cause: t.Cause, Reason: t.Reason, Inferred: t.Inferred}
	}
	return out
}

func TestAnalyzeCauses(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int, b BreakerSample) BreakerSample {
		b.Sent = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		b.Received, b.ObservedAt = b.Sent.Add(time.Millisecond), b.Sent.Add(time.Millisecond)
		return b
	}
	noTh := func(b BreakerSample) BreakerSample {
		b.FailureRateThreshold, b.SlowCallRateThreshold = nan(), nan()
		return b
	}
	tests := []struct {
		name    string
		samples []BreakerSample
		th      Thresholds
		want    []string // "FROM>TO:cause"
	}{
		{"failure rate", []BreakerSample{at(0, sample("CLOSED", 50, 10)), at(1, sample("OPEN", 65, 10))}, nil, []string{"CLOSED>OPEN:failure-rate"}},
		{"both", []BreakerSample{at(0, sample("CLOSED", 50, 10)), at(1, sample("OPEN", 60, 50))}, nil, []string{"CLOSED>OPEN:both"}},
		{"half-open trial and inferred OPEN", []BreakerSample{at(0, sample("CLOSED", -1, -1)), at(1, sample("HALF_OPEN", -1, -1)), at(2, sample("OPEN", 80, 0))}, nil,
			[]string{"CLOSED>OPEN:unknown", "OPEN>HALF_OPEN:", "HALF_OPEN>OPEN:half-open-trial"}},
		{"forced", []BreakerSample{at(0, sample("CLOSED", -1, -1)), at(1, sample("FORCED_OPEN", -1, -1))}, nil, []string{"CLOSED>FORCED_OPEN:forced"}},
		{"thresholds unknown", []BreakerSample{at(0, noTh(sample("CLOSED", 1, 1))), at(1, noTh(sample("OPEN", 65, 10)))}, nil, []string{"CLOSED>OPEN:unknown"}},
		{"thresholds from config", []BreakerSample{at(0, noTh(sample("CLOSED", 1, 1))), at(1, noTh(sample("OPEN", 65, 10)))},
			StaticThresholds(map[string]Threshold{"pg": {60, 50, "config"}}), []string{"CLOSED>OPEN:failure-rate"}},
		{"float32 threshold compare", []BreakerSample{at(0, sample("CLOSED", 1, 1)), at(1, sample("OPEN", 59.999999, 10))}, nil, []string{"CLOSED>OPEN:failure-rate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tr := range Analyze(tc.samples, nil, tc.th) {
				got = append(got, tr.From+">"+tr.To+":"+string(tr.Cause))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSamplerNeedsSource(t *testing.T) {
	if _, err := NewSampler(SamplerConfig{}); err == nil {
		t.Fatal("want error")
	}
	if _, err := NewSampler(SamplerConfig{Source: &scripted{}, Interval: -1}); !errors.Is(err, err) || err == nil {
		t.Fatal("want error for negative interval")
	}
}

func TestPrometheusCounterResetAndRecorder(t *testing.T) {
	clk := &instantClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctx, cancel := context.WithCancel(context.Background())
	withCounters := func(state string, notPerm, calls float64) func(time.Time) (Snapshot, error) {
		return func(time.Time) (Snapshot, error) {
			b := sample(state, -1, -1)
			b.FailureRateThreshold, b.SlowCallRateThreshold = nan(), nan()
			b.NotPermittedTotal, b.CallsSuccessful = notPerm, calls
			return Snapshot{Breakers: []BreakerSample{b}}, nil
		}
	}
	src := &scripted{clk: clk, cancel: cancel, steps: []func(time.Time) (Snapshot, error){
		withCounters("OPEN", 40, 100),
		withCounters("OPEN", 55, 100),
		withCounters("CLOSED", 0, 3), // restarted: counters back near zero, CLOSED
		withCounters("CLOSED", 0, 9),
	}}
	s, err := NewSampler(SamplerConfig{Source: src, Interval: 50 * time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	var rec Recorder
	s.Run(ctx, rec.Add)
	if rs := rec.Resets(); len(rs) != 1 || rs[0].Breaker.Name != "pg" {
		t.Fatalf("resets %+v", rs)
	}
	tr := rec.Transitions()
	if len(tr) != 1 || tr[0].From != "OPEN" || tr[0].To != "CLOSED" || tr[0].Note == "" {
		t.Fatalf("transitions %+v", tr)
	}
	if n := len(rec.Recording().Samples); n != 4 {
		t.Errorf("recorded %d samples, want 4 (nothing lost across the restart)", n)
	}
	// The pure analysis of the recording finds the same restart transition.
	again := AnalyzeRecording(rec.Recording(), nil)
	if len(again) != 1 || again[0].Note != tr[0].Note {
		t.Errorf("AnalyzeRecording %+v", again)
	}
}

func TestAdaptClock(t *testing.T) {
	sys := time.Now
	c := AdaptClock(sys, time.AfterFunc)
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("adapted AfterFunc never fired")
	}
	if c.Now().IsZero() {
		t.Fatal("zero time")
	}
	// A breaker clock fits too: ten times faster than the wall clock.
	bc := breaker.NewScaledClock(10)
	sc := AdaptClock(bc.Now, bc.AfterFunc)
	t0, w0 := sc.Now(), time.Now()
	time.Sleep(20 * time.Millisecond)
	if ratio := sc.Now().Sub(t0).Seconds() / time.Since(w0).Seconds(); ratio < 5 || ratio > 11 {
		t.Errorf("scaled clock ratio %.1f, want about 10", ratio)
	}
}

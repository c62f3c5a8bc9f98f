package collect

import "sync"

// Recorder keeps everything a Sampler streams, for AnalyzeRecording and for
// writing results. Add is safe to call from the sampler while others read.
type Recorder struct {
	mu     sync.Mutex
	rec    Recording
	gaps   []Gap
	trans  []Transition
	resets []Reset
}

// Add stores one update; pass it as the Sampler's emit function.
func (r *Recorder) Add(u Update) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := u.Snapshot; s != nil {
		r.rec.Samples = append(r.rec.Samples, s.Breakers...)
		r.rec.Events = append(r.rec.Events, s.Events...)
		r.rec.Limiters = append(r.rec.Limiters, s.Limiters...)
		r.rec.Lost = append(r.rec.Lost, s.Lost...)
		r.rec.Restarts = append(r.rec.Restarts, s.Restarts...)
	}
	if u.Gap != nil {
		r.gaps = append(r.gaps, *u.Gap)
	}
	r.trans = append(r.trans, u.Transitions...)
	r.resets = append(r.resets, u.Resets...)
}

// Recording returns a copy of the samples, events, limiter counters, losses
// and restarts recorded so far.
func (r *Recorder) Recording() Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Recording{
		Samples:  append([]BreakerSample(nil), r.rec.Samples...),
		Events:   append([]Event(nil), r.rec.Events...),
		Limiters: append([]LimiterSample(nil), r.rec.Limiters...),
		Lost:     append([]LostEvents(nil), r.rec.Lost...),
		Restarts: append([]Reset(nil), r.rec.Restarts...),
	}
}

// Gaps returns the polling gaps recorded so far.
func (r *Recorder) Gaps() []Gap {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Gap(nil), r.gaps...)
}

// Transitions returns the transitions the sampler reported live, in order.
func (r *Recorder) Transitions() []Transition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Transition(nil), r.trans...)
}

// Resets returns the resets the sampler reported.
func (r *Recorder) Resets() []Reset {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Reset(nil), r.resets...)
}

package results

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// htmlSeries is everything the report's script draws for one arm: the
// ArmSeries (state bands, rates, outcomes per second, OPEN marks) and what the
// report computes itself from the run directory: the phases on the time axis,
// latency percentiles per second, failures by kind, the breaker's calls, its
// window, and the Retry and TimeLimiter events. Times are seconds from the
// record's origin (Record.Origin).
type htmlSeries struct {
	ArmSeries
	// Start and End bound the arm's own activity, in seconds from the origin:
	// the time axis shows [Start, End] until the reader zooms.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// Phases are the traffic phases on the time axis.
	Phases []htmlPhase `json:"phases"`
	// Bin is the width in seconds of the time bins the counts and latency
	// percentiles below are grouped by (see binWidth): the T of a bin is its
	// index, it spans [T×Bin, (T+1)×Bin) seconds from the origin.
	Bin float64 `json:"bin"`
	// Outcomes are the requests per bin by outcome (succeeded, rejected, failed).
	Outcomes htmlStack `json:"outcomes"`
	// Latency holds latency percentiles per bin in milliseconds.
	Latency []htmlLatency `json:"latency"`
	// Failures are the failed requests per bin by kind.
	Failures htmlStack `json:"failures"`
	// Calls are the breaker's calls per bin from its per-call events: calls
	// it let through to the gateway (split by outcome and error kind) and calls
	// it refused.
	Calls htmlStack `json:"calls"`
	// Window is the breaker's window as polled: buffered, failed and slow calls
	// and not-permitted calls.
	Window htmlLines `json:"window"`
	// Retry and Limiter are the Retry's and the TimeLimiter's events per second.
	Retry   htmlStack `json:"retry"`
	Limiter htmlStack `json:"limiter"`
	// Gaps are stretches in which the breaker was not observed.
	Gaps []htmlSpan `json:"gaps"`
}

// htmlPhase is one traffic phase on the time axis, in seconds from the origin.
type htmlPhase struct {
	Name string  `json:"name"`
	From float64 `json:"from"`
	To   float64 `json:"to"`
	// Rate is the intended rate in requests per second (0: pause or sequential).
	Rate float64 `json:"rate"`
	// Pause is true for a phase that sends nothing.
	Pause bool `json:"pause"`
}

// htmlSpan is a stretch of time in seconds from the origin with a note.
type htmlSpan struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Note string  `json:"note"`
}

// htmlLatency is one bin's latency percentiles in milliseconds over N requests.
type htmlLatency struct {
	T   int     `json:"t"`
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// htmlStack is a stacked count per time bin: Keys name the stacked parts (in
// drawing order), each of Seconds' V holds one count per key.
type htmlStack struct {
	// Recorded is false when the run directory holds nothing this panel could
	// be drawn from; Missing then says why.
	Recorded bool   `json:"recorded"`
	Missing  string `json:"missing,omitempty"`
	// Note is a remark on the data (lost events, names drawn).
	Note    string        `json:"note,omitempty"`
	Keys    []string      `json:"keys"`
	Seconds []htmlStackAt `json:"seconds"`
}

// htmlStackAt is one time bin of a stack: T is the bin's index.
type htmlStackAt struct {
	T int   `json:"t"`
	V []int `json:"v"`
}

// htmlLines are polled values over time: Keys name the lines, each point's V
// holds one value per key (negative: not reported).
type htmlLines struct {
	Recorded bool          `json:"recorded"`
	Missing  string        `json:"missing,omitempty"`
	Keys     []string      `json:"keys"`
	Points   []htmlLinesAt `json:"points"`
}

// htmlLinesAt is one poll of htmlLines.
type htmlLinesAt struct {
	T float64   `json:"t"`
	V []float64 `json:"v"`
}

// maxKinds is how many kinds a stack shows before it sums the rest as "other".
const maxKinds = 6

// htmlSeriesOf builds the report's view of the arm at index i of rec.Run.Arms.
func htmlSeriesOf(rec *Record, i int) htmlSeries {
	arm := &rec.Run.Arms[i]
	t0 := rec.Origin()
	sec := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	s := htmlSeries{ArmSeries: rec.Series(i), Phases: []htmlPhase{}, Latency: []htmlLatency{}, Gaps: []htmlSpan{}}

	var reqs []*Request
	for j := range rec.Requests {
		if rec.Requests[j].Arm == arm.Name {
			reqs = append(reqs, &rec.Requests[j])
		}
	}
	var events []Event
	for _, e := range rec.Events {
		if e.Arm == arm.Name {
			events = append(events, e)
		}
	}

	// The arm's own span: its first request, sample or phase note to its last.
	start, end := math.Inf(1), math.Inf(-1)
	see := func(t float64) { start, end = math.Min(start, t), math.Max(end, t) }
	for _, q := range reqs {
		see(sec(q.Intended))
		see(sec(q.sentAt().Add(q.Latency)))
	}
	for _, p := range rec.Samples {
		if p.Arm == arm.Name {
			see(sec(p.Time))
		}
	}
	for _, e := range events {
		if e.Kind == "phase" {
			see(sec(e.Time))
		}
	}
	for _, t := range arm.Transitions {
		see(sec(t.At))
	}
	if math.IsInf(start, 1) {
		start, end = 0, s.Duration
	}
	s.Phases = htmlPhases(rec, arm, reqs, events, sec, start)
	for _, p := range s.Phases {
		end = math.Max(end, p.To)
	}
	s.Start, s.End = start, math.Max(end, start+1)

	s.Bin = binWidth(s.End - s.Start)
	// The per-second buckets of ArmSeries are replaced by the bins below.
	s.Seconds = []SecondBucket{}
	bin := func(t time.Time) int { return int(math.Floor(sec(t) / s.Bin)) }
	s.Outcomes = outcomesPerBin(reqs, bin)
	s.Latency = latencyPerBin(reqs, bin)
	s.Failures = failuresByKind(reqs, bin)
	s.Calls = breakerCalls(arm, events, bin)

	s.Window = breakerWindow(arm, s.Breaker, rec.Samples, sec)
	s.Retry = eventStack(events, bin, "retry", []string{"RETRY", "SUCCESS", "ERROR", "IGNORED_ERROR"},
		[]string{"retry scheduled", "succeeded after retrying", "failed after every attempt", "not retried (ignored error)"},
		"no Retry events were recorded for this arm: the service has no Retry around the call, or its retryevents endpoint is not read (actuator only; Prometheus sources carry no events)")
	s.Limiter = eventStack(events, bin, "timelimiter", []string{"SUCCESS", "TIMEOUT", "ERROR"},
		[]string{"finished in time", "timed out", "failed in time"},
		"no TimeLimiter events were recorded for this arm: the service has no TimeLimiter around the call, or its timelimiterevents endpoint is not read (actuator only; Prometheus sources carry no events)")
	if legacyEvents(events) {
		// Older runs wrote kind "breaker" for the Retry's and TimeLimiter's events too.
		why := "this run was recorded before cbprobe told the service's breaker, Retry and TimeLimiter events apart (all are kind \"breaker\" in its events.jsonl)"
		for _, st := range []*htmlStack{&s.Calls, &s.Retry, &s.Limiter} {
			if !st.Recorded {
				st.Missing = why
			}
		}
	}
	if lost := lostEvents(events); lost != "" {
		for _, st := range []*htmlStack{&s.Calls, &s.Retry, &s.Limiter} {
			if st.Recorded {
				st.Note = strings.TrimSpace(st.Note + " " + lost)
			}
		}
	}
	if o := arm.Observation; o != nil {
		for _, g := range o.Gaps {
			to := s.End
			if !g.To.IsZero() {
				to = sec(g.To)
			}
			note := strconv.Itoa(g.Polls) + " failed polls"
			if g.Reason != "" {
				note += ": " + g.Reason
			}
			s.Gaps = append(s.Gaps, htmlSpan{From: sec(g.From), To: to, Note: note})
		}
	}
	return s
}

// htmlPhases places the arm's phases on the time axis. A phase that sent
// requests starts at its first intended send time; one that sent none (a
// pause) starts where the previous one ended. A phase lasts its planned
// duration divided by the run's speed parameter (runs at --speed N compress
// time), or, without one, until its last answer.
func htmlPhases(rec *Record, arm *Arm, reqs []*Request, events []Event, sec func(time.Time) float64, start float64) []htmlPhase {
	speed := 1.0
	if v, ok := rec.Run.Parameters["speed"].(float64); ok && v > 0 {
		speed = v
	}
	first := map[string]float64{}
	last := map[string]float64{}
	for _, q := range reqs {
		t := sec(q.Intended)
		if f, ok := first[q.Phase]; !ok || t < f {
			first[q.Phase] = t
		}
		last[q.Phase] = math.Max(last[q.Phase], sec(q.sentAt().Add(q.Latency)))
	}
	cursor := start
	for _, e := range events {
		if e.Kind == "phase" {
			cursor = math.Min(cursor, sec(e.Time))
		}
	}
	out := []htmlPhase{}
	for _, p := range arm.Phases {
		from := cursor
		if f, ok := first[p.Name]; ok {
			from = f
		}
		to := from
		switch {
		case p.Duration > 0:
			to = from + p.Duration.Seconds()/speed
		case last[p.Name] > from:
			to = last[p.Name]
		}
		if n := len(out); n > 0 && out[n-1].To > from {
			out[n-1].To = math.Max(out[n-1].From, from)
		}
		out = append(out, htmlPhase{Name: p.Name, From: from, To: to, Rate: p.Rate, Pause: p.Rate == 0 && p.Duration > 0 && p.Sent == 0})
		cursor = to
	}
	return out
}

// binWidth is the width in seconds of the time bins of an arm that spans
// span seconds: 1 s, or for an arm shorter than 30 s (a run at --speed N) the
// widest of 0.5, 0.2, 0.1, 0.05, 0.02 and 0.01 s that gives it 30 bins.
func binWidth(span float64) float64 {
	if span >= 30 {
		return 1
	}
	w := 1.0
	for _, b := range []float64{0.5, 0.2, 0.1, 0.05, 0.02, 0.01} {
		w = b
		if span/b >= 30 {
			break
		}
	}
	return w
}

// outcomesPerBin counts the requests sent in each bin by outcome.
func outcomesPerBin(reqs []*Request, bin func(time.Time) int) htmlStack {
	var kinds []string
	var at []int
	for _, q := range reqs {
		k := "failed"
		switch q.Outcome {
		case OutcomeSucceeded:
			k = "succeeded"
		case OutcomeRejected:
			k = "rejected by the breaker"
		}
		kinds = append(kinds, k)
		at = append(at, bin(q.sentAt()))
	}
	st := stackOf(kinds, at, []string{"succeeded", "rejected by the breaker", "failed"})
	st.Recorded = true
	return st
}

// latencyPerBin is the nearest-rank p50, p90, p95 and p99 of the requests
// sent in each bin.
func latencyPerBin(reqs []*Request, bin func(time.Time) int) []htmlLatency {
	lat := map[int][]float64{}
	for _, q := range reqs {
		k := bin(q.sentAt())
		lat[k] = append(lat[k], float64(q.Latency)/float64(time.Millisecond))
	}
	out := []htmlLatency{}
	for k, l := range lat {
		slices.Sort(l)
		out = append(out, htmlLatency{T: k, N: len(l), P50: quantile(l, .50), P90: quantile(l, .90), P95: quantile(l, .95), P99: quantile(l, .99)})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].T < out[b].T })
	return out
}

// failureKind names why a failed request failed: the step and HTTP status
// ("pay: HTTP 500"), or for no answer what the transport said ("no answer:
// timeout").
func failureKind(q Request) string {
	step := ""
	if s, _, ok := strings.Cut(q.Error, ": "); ok && !strings.ContainsAny(s, " \n") {
		step = s + ": "
	}
	if q.Status != 0 {
		return step + "HTTP " + strconv.Itoa(q.Status)
	}
	e := strings.ToLower(q.Error)
	switch {
	case strings.Contains(e, "timeout") || strings.Contains(e, "deadline"):
		return "no answer: timeout"
	case strings.Contains(e, "refused"):
		return "no answer: connection refused"
	case strings.Contains(e, "reset") || strings.Contains(e, "eof"):
		return "no answer: connection closed"
	}
	return "no answer: other error"
}

// failuresByKind counts the failed requests per bin by failureKind.
func failuresByKind(reqs []*Request, bin func(time.Time) int) htmlStack {
	var kinds []string
	var at []int
	for _, q := range reqs {
		if q.Outcome != OutcomeFailed {
			continue
		}
		kinds = append(kinds, failureKind(*q))
		at = append(at, bin(q.sentAt()))
	}
	st := stackOf(kinds, at, nil)
	st.Recorded = true
	return st
}

// errorKind shortens a Java throwable's toString to its class's simple name:
// "feign.FeignException$InternalServerError: [500 ..." reads
// "InternalServerError".
func errorKind(msg string) string {
	cls, _, _ := strings.Cut(msg, ":")
	cls = strings.TrimSpace(cls)
	if i := strings.LastIndexAny(cls, ".$"); i >= 0 {
		cls = cls[i+1:]
	}
	if cls == "" || strings.Contains(cls, " ") {
		return "error"
	}
	return cls
}

// isBreakerEvent reports whether e is the circuit breaker's own event.
func isBreakerEvent(e Event) bool { return e.Kind == "circuitbreaker" }

// legacyEvents reports whether events were written by an older cbprobe that
// gave every service event the kind "breaker": the breaker's, the Retry's and
// the TimeLimiter's SUCCESS and ERROR events cannot be told apart, so the
// report counts none of them.
func legacyEvents(events []Event) bool {
	for _, e := range events {
		if e.Kind == "breaker" && e.Type != "STATE_TRANSITION" && !strings.HasSuffix(e.Type, "_EXCEEDED") {
			return true
		}
	}
	return false
}

// breakerCalls counts the breaker's per-call events per bin: SUCCESS,
// ERROR (split by error kind) and IGNORED_ERROR are calls it let through to
// the gateway, NOT_PERMITTED calls it refused.
func breakerCalls(arm *Arm, events []Event, bin func(time.Time) int) htmlStack {
	var kinds []string
	var at []int
	for _, e := range events {
		if !isBreakerEvent(e) || (arm.Breaker != "" && e.Breaker != "" && !sameBreaker(e.Breaker, arm.Breaker)) {
			continue
		}
		k := ""
		switch e.Type {
		case "SUCCESS":
			k = "gateway call succeeded"
		case "ERROR":
			k = "gateway call failed: " + errorKind(e.Message)
		case "IGNORED_ERROR":
			k = "gateway call failed, ignored: " + errorKind(e.Message)
		case "NOT_PERMITTED":
			k = "refused (not permitted)"
		default:
			continue
		}
		kinds = append(kinds, k)
		at = append(at, bin(e.Time))
	}
	if len(kinds) == 0 {
		return htmlStack{Keys: []string{}, Seconds: []htmlStackAt{},
			Missing: "no per-call breaker events were recorded for this arm (SUCCESS, ERROR, NOT_PERMITTED): they come from the actuator's circuitbreakerevents endpoint; Prometheus sources carry no events"}
	}
	st := stackOf(kinds, at, []string{"gateway call succeeded"})
	st.Recorded = true
	return st
}

// sameBreaker reports whether an event's breaker key names the arm's breaker
// ("name" or "name@instance").
func sameBreaker(key, breaker string) bool {
	if key == breaker {
		return true
	}
	a, _, _ := strings.Cut(key, "@")
	b, _, _ := strings.Cut(breaker, "@")
	return a == b
}

// breakerWindow is the polled window of the arm's breaker.
func breakerWindow(arm *Arm, breaker string, samples []Sample, sec func(time.Time) float64) htmlLines {
	l := htmlLines{Keys: []string{"buffered", "failed", "slow", "not permitted"}, Points: []htmlLinesAt{}}
	for _, p := range samples {
		if p.Arm != arm.Name || (breaker != "" && p.Breaker != breaker) {
			continue
		}
		v := []float64{p.Buffered, p.Failed, p.Slow, p.NotPermitted}
		for _, x := range v {
			if x >= 0 {
				l.Recorded = true
			}
		}
		l.Points = append(l.Points, htmlLinesAt{T: sec(p.Time), V: v})
	}
	if !l.Recorded {
		l.Missing = "the breaker's window (buffered, failed, slow and not-permitted calls) was not polled for this arm"
	}
	return l
}

// eventStack counts the arm's events of one kind per bin by type; labels
// name the types in the legend.
func eventStack(events []Event, bin func(time.Time) int, kind string, types, labels []string, missing string) htmlStack {
	label := map[string]string{}
	for i, t := range types {
		label[t] = labels[i]
	}
	var kinds []string
	var at []int
	names := map[string]bool{}
	for _, e := range events {
		if e.Kind != kind {
			continue
		}
		l, ok := label[e.Type]
		if !ok {
			l = strings.ToLower(e.Type)
		}
		kinds = append(kinds, l)
		at = append(at, bin(e.Time))
		names[e.Breaker] = true
	}
	if len(kinds) == 0 {
		return htmlStack{Keys: []string{}, Seconds: []htmlStackAt{}, Missing: missing}
	}
	st := stackOf(kinds, at, labels)
	st.Recorded = true
	if len(names) > 1 {
		n := make([]string, 0, len(names))
		for k := range names {
			n = append(n, k)
		}
		sort.Strings(n)
		st.Note = "summed over " + strings.Join(n, ", ") + "."
	}
	return st
}

// lostEvents says when the service's event buffer may have dropped events.
func lostEvents(events []Event) string {
	n := 0
	for _, e := range events {
		if e.Kind == "lost-events" {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return "The service's event buffer may have dropped events " + strconv.Itoa(n) + " times: the counts are lower bounds."
}

// stackOf counts kinds[i] at second at[i]. Keys come in the order of first
// (when seen), then by count, most frequent first; beyond maxKinds the rarest
// are summed as "other".
func stackOf(kinds []string, at []int, first []string) htmlStack {
	count := map[string]int{}
	for _, k := range kinds {
		count[k]++
	}
	var keys []string
	for _, k := range first {
		if count[k] > 0 {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range count {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	sort.Slice(rest, func(a, b int) bool {
		if count[rest[a]] != count[rest[b]] {
			return count[rest[a]] > count[rest[b]]
		}
		return rest[a] < rest[b]
	})
	keys = append(keys, rest...)
	if len(keys) > maxKinds {
		keys = append(keys[:maxKinds-1], "other")
	}
	index := map[string]int{}
	for i, k := range keys {
		index[k] = i
	}
	bySec := map[int][]int{}
	for i, k := range kinds {
		j, ok := index[k]
		if !ok {
			j = len(keys) - 1
		}
		v := bySec[at[i]]
		if v == nil {
			v = make([]int, len(keys))
			bySec[at[i]] = v
		}
		v[j]++
	}
	st := htmlStack{Keys: append([]string{}, keys...), Seconds: []htmlStackAt{}}
	for t, v := range bySec {
		st.Seconds = append(st.Seconds, htmlStackAt{T: t, V: v})
	}
	sort.Slice(st.Seconds, func(a, b int) bool { return st.Seconds[a].T < st.Seconds[b].T })
	return st
}

// latencyRow is the whole arm's latency percentiles in milliseconds from its
// requests: p50, p90, p95, p99 and max (nil when it sent none).
func latencyRow(reqs []Request, arm string) []string {
	var l []float64
	for _, q := range reqs {
		if q.Arm == arm {
			l = append(l, float64(q.Latency)/float64(time.Millisecond))
		}
	}
	if len(l) == 0 {
		return nil
	}
	slices.Sort(l)
	out := []string{}
	for _, q := range []float64{.50, .90, .95, .99} {
		out = append(out, num(quantile(l, q)))
	}
	return append(out, num(l[len(l)-1]))
}

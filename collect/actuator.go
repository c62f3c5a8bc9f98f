package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ActuatorSource reads a Spring Boot actuator: /circuitbreakers (or, when that is
// not exposed or lists only names, /health), then /circuitbreakerevents,
// /timelimiterevents and /retryevents when exposed. Events are de-duplicated
// across polls and ring-buffer losses are reported.
type ActuatorSource struct {
	base        string
	g           *httpGetter
	said        map[string]bool
	useHealth   bool
	namesOnly   bool
	off         map[string]bool // optional endpoints that answered 404
	rings       map[string]*ring
	prev        map[BreakerKey]BreakerSample
	prevSeen    map[BreakerKey][2]int // NOT_PERMITTED and SUCCESS/ERROR events delivered last poll
	lastBody    map[string][]byte     // path -> previous body: an unchanged body is not parsed again
	lastBrk     []BreakerSample
	evCache     map[string]*eventCache // path -> parser reusing the previous answer's events
	spare       map[string][]byte      // path -> unreferenced buffer for the next answer
	sideRead    time.Time              // when the time limiter and retry events were last read
	sideSkipped int                    // polls since then
	polls       int                    // polls made (the first is the start)
	started     time.Time              // Sent of the first poll: events before it are history
	readOK      map[string]bool        // event endpoints read successfully at least once
	tap         *dateTap               // the service's clock, from its Date headers
}

// sideEventsEvery and sideEventsPolls pace the time limiter and retry event
// endpoints: they are read at the first poll and then once sideEventsEvery
// (less 10 % for scheduling jitter) has passed or sideEventsPolls polls have
// been made, whichever comes first; the breaker and its events are read at
// every poll. Those events only feed the timeout share and the recording
// (each event keeps its creationTime), and their rings (100 events a name by
// default) hold far more than 200 ms of traffic, so reading them at every
// 50 ms poll would double the sampler's requests for nothing.
const (
	sideEventsEvery = 200 * time.Millisecond
	sideEventsPolls = 4
)

// NewActuator returns a source for the actuator at base, which may be the
// service root ("http://host:8080") or the actuator base path
// ("http://host:8080/actuator", "http://host:8080/manage").
func NewActuator(base string, opt HTTPOptions) Source {
	b := strings.TrimRight(base, "/")
	if !strings.HasSuffix(b, "/actuator") && !hasPathBeyondRoot(b) {
		b += "/actuator"
	}
	g := newGetter(opt)
	tap := tapDates(g)
	return &ActuatorSource{base: b, g: g, said: map[string]bool{}, off: map[string]bool{},
		rings: map[string]*ring{}, prev: map[BreakerKey]BreakerSample{}, prevSeen: map[BreakerKey][2]int{}, lastBody: map[string][]byte{},
		evCache: map[string]*eventCache{}, spare: map[string][]byte{}, readOK: map[string]bool{}, tap: tap}
}

func hasPathBeyondRoot(u string) bool {
	i := strings.Index(u, "://")
	if i < 0 {
		return false
	}
	return strings.Contains(u[i+3:], "/")
}

// Name implements Source.
func (a *ActuatorSource) Name() string { return "actuator " + safeURL(a.base) }

func (a *ActuatorSource) notice(s *Snapshot, key, msg string) {
	if !a.said[key] {
		a.said[key] = true
		s.Notices = append(s.Notices, msg)
	}
}

func isStatus(err error, code int) bool {
	var fe *FetchError
	return errors.As(err, &fe) && fe.Kind == "http-status" && fe.Status == code
}

// Poll implements Source.
func (a *ActuatorSource) Poll(ctx context.Context) (Snapshot, error) {
	s := Snapshot{Source: a.Name(), Sent: a.g.clock.Now()}
	a.polls++
	if a.polls == 1 {
		a.started = s.Sent
	}
	breakers, err := a.readBreakers(ctx, &s)
	if err != nil {
		return s, err
	}
	s.Breakers = breakers
	// Events are read after the breakers, so every transition a sample shows is
	// already in the event list (unless the ring dropped it).
	side := a.sideRead.IsZero() || a.sideSkipped >= sideEventsPolls-1 || s.Sent.Sub(a.sideRead) >= sideEventsEvery*9/10
	if side {
		a.sideRead, a.sideSkipped = s.Sent, 0
	} else {
		a.sideSkipped++
	}
	type opt struct{ path, key, kind, what string }
	for _, o := range []opt{
		{"/circuitbreakerevents", "circuitBreakerEvents", KindCircuitBreaker, "circuit breaker events"},
		{"/timelimiterevents", "timeLimiterEvents", KindTimeLimiter, "time limiter events"},
		{"/retryevents", "retryEvents", KindRetry, "retry events"},
	} {
		if a.off[o.path] || o.kind != KindCircuitBreaker && !side {
			continue
		}
		u := a.base + o.path
		body, _, err := a.g.getInto(ctx, u, "application/json", a.spare[o.path])
		if isStatus(err, 404) {
			a.off[o.path] = true
			a.notice(&s, o.path, fmt.Sprintf("%s%s is not exposed (HTTP 404): no %s", safeURL(a.base), o.path, o.what))
			continue
		}
		if err != nil {
			s.Warnings = append(s.Warnings, err.Error())
			continue
		}
		if bytes.Equal(body, a.lastBody[o.path]) { // nothing happened since the last poll
			a.spare[o.path] = body
			if o.kind == KindCircuitBreaker {
				s.EventsOK = true
			}
			continue
		}
		c := a.evCache[o.path]
		if c == nil {
			c = newEventCache(o.key, o.kind)
			a.evCache[o.path] = c
		}
		evs, err := c.parse(body)
		if err != nil {
			a.spare[o.path] = body
			s.Warnings = append(s.Warnings, a.g.bodyError(u, err).Error())
			continue
		}
		// The previous body is no longer referenced (the cache now holds
		// slices of this one): read the next answer into it.
		a.lastBody[o.path], a.spare[o.path] = body, a.lastBody[o.path]
		a.absorb(&s, o.kind, evs, a.historyRule(&s, o.path))
		if o.kind == KindCircuitBreaker {
			s.EventsOK = true
		}
	}
	s.Received = a.g.clock.Now()
	for i := range s.Breakers {
		s.Breakers[i].Sent, s.Breakers[i].Received, s.Breakers[i].ObservedAt = s.Sent, s.Received, s.Received
	}
	for i := range s.Events {
		s.Events[i].Polled = s.Received
	}
	for i := range s.History {
		s.History[i].Polled, s.History[i].History = s.Received, true
	}
	for i := range s.Lost {
		s.Lost[i].Polled = s.Received
	}
	for i := range s.Restarts {
		s.Restarts[i].Received = s.Received
	}
	a.lossBounds(&s)
	return s, nil
}

func (a *ActuatorSource) readBreakers(ctx context.Context, s *Snapshot) ([]BreakerSample, error) {
	if !a.useHealth {
		u := a.base + "/circuitbreakers"
		body, _, err := a.g.get(ctx, u, "application/json")
		switch {
		case isStatus(err, 404):
			a.useHealth = true
			a.notice(s, "health", fmt.Sprintf("%s/circuitbreakers is not exposed (HTTP 404): reading breakers from /health", safeURL(a.base)))
		case err != nil:
			return nil, err
		default:
			if a.lastBrk != nil && bytes.Equal(body, a.lastBody["/circuitbreakers"]) {
				return append([]BreakerSample(nil), a.lastBrk...), nil
			}
			samples, names, err := ParseCircuitBreakers(body)
			if err != nil {
				return nil, a.g.bodyError(u, err)
			}
			if samples != nil || len(names) == 0 {
				a.lastBody["/circuitbreakers"], a.lastBrk = body, append([]BreakerSample(nil), samples...)
				return samples, nil
			}
			a.namesOnly = true
			a.notice(s, "names", fmt.Sprintf("%s/circuitbreakers lists names only (Resilience4j before 2.0): reading details from /health", safeURL(a.base)))
			hs, herr := a.readHealth(ctx)
			if herr != nil {
				a.notice(s, "names-health", "no breaker details: "+herr.Error())
				out := make([]BreakerSample, 0, len(names))
				for _, n := range names {
					out = append(out, newBreakerSample(n, ""))
				}
				return out, nil
			}
			return a.withMissing(s, hs, names), nil
		}
	}
	return a.readHealth(ctx)
}

// withMissing keeps the breakers the name list has and /health does not (their
// health indicator is off: register-health-indicator defaults to false), with
// every value unknown, and names each once in a notice.
func (a *ActuatorSource) withMissing(s *Snapshot, hs []BreakerSample, names []string) []BreakerSample {
	in := make(map[string]bool, len(hs))
	for _, b := range hs {
		in[b.Name] = true
	}
	added := false
	for _, n := range names {
		if in[n] {
			continue
		}
		added = true
		hs = append(hs, newBreakerSample(n, ""))
		a.notice(s, "nohealth\x00"+n, fmt.Sprintf("breaker %s is listed by %s/circuitbreakers but absent from /health, so its state is unknown: "+
			"its health indicator is off (register-health-indicator is false by default; set resilience4j.circuitbreaker.instances.%s.register-health-indicator=true, "+
			"or configs.default.register-health-indicator=true for breakers created at run time)", n, safeURL(a.base), n))
	}
	if added {
		sortSamples(hs)
	}
	return hs
}

func (a *ActuatorSource) readHealth(ctx context.Context) ([]BreakerSample, error) {
	u := a.base + "/health"
	body, _, err := a.g.get(ctx, u, "application/json")
	if err != nil && !isStatus(err, 503) { // DOWN answers 503 with the same body
		return nil, err
	}
	samples, perr := ParseHealth(body)
	if perr != nil {
		return nil, a.g.bodyError(u, perr)
	}
	return samples, nil
}

// ring follows one name's event ring buffer across polls.
type ring struct {
	prev []Event
	max  int // largest list seen: the ring is at least this big
}

func sameEvent(a, b Event) bool {
	return a.RawTime == b.RawTime && a.Type == b.Type && a.StateTransition == b.StateTransition &&
		a.ErrorMessage == b.ErrorMessage && a.DurationMs == b.DurationMs && a.NumberOfAttempts == b.NumberOfAttempts
}

// update returns the events of cur not seen before, whether the ring may have
// dropped events since the last poll, and whether the ring was cleared (restart).
func (r *ring) update(cur []Event, bufSize int) (fresh []Event, gap, cleared bool) {
	prev := r.prev
	r.prev = cur
	if len(cur) > r.max {
		r.max = len(cur)
	}
	size := max(bufSize, r.max)
	if len(prev) == 0 {
		return cur, false, false
	}
	for j := range prev {
		if !sameEvent(prev[j], cur0(cur)) {
			continue
		}
		n := len(prev) - j
		if n > len(cur) {
			continue
		}
		match := true
		for k := 1; k < n; k++ {
			if !sameEvent(prev[j+k], cur[k]) {
				match = false
				break
			}
		}
		if match {
			return cur[n:], false, false
		}
	}
	if len(cur) == 0 {
		return nil, false, true
	}
	last := prev[len(prev)-1]
	if !cur[0].CreationTime.Before(last.CreationTime) && len(cur) >= size {
		return cur, true, false
	}
	return cur, false, true
}

func cur0(cur []Event) Event {
	if len(cur) == 0 {
		return Event{RawTime: "\x00none"}
	}
	return cur[0]
}

// absorb de-duplicates one endpoint's events into the snapshot: those that
// happened before the source started (historic, nil: none) go to s.History,
// the others to s.Events.
func (a *ActuatorSource) absorb(s *Snapshot, kind string, evs []Event, historic func(Event) bool) {
	byName := map[string][]Event{}
	var order []string
	single := len(evs) > 0
	for i := 1; i < len(evs) && single; i++ {
		single = evs[i].Name == evs[0].Name
	}
	if single { // one name (the usual case): no copy
		order, byName[evs[0].Name] = []string{evs[0].Name}, evs
	} else {
		for _, e := range evs {
			if _, ok := byName[e.Name]; !ok {
				order = append(order, e.Name)
			}
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	// Names whose ring vanished entirely (restart, or registry entry replaced).
	for key, r := range a.rings {
		k, name, _ := strings.Cut(key, "\x00")
		if k == kind && len(r.prev) > 0 {
			if _, ok := byName[name]; !ok {
				order = append(order, name)
			}
		}
	}
	for _, name := range order {
		key := kind + "\x00" + name
		r := a.rings[key]
		if r == nil {
			r = &ring{}
			a.rings[key] = r
		}
		var last Event
		if len(r.prev) > 0 {
			last = r.prev[len(r.prev)-1]
		}
		fresh, gap, cleared := r.update(byName[name], a.g.bufSize)
		if historic != nil {
			for _, e := range fresh {
				if historic(e) {
					s.History = append(s.History, e)
				} else {
					s.Events = append(s.Events, e)
				}
			}
		} else {
			s.Events = append(s.Events, fresh...)
		}
		if gap {
			s.Lost = append(s.Lost, LostEvents{Kind: kind, Name: name, After: last.CreationTime, Before: fresh[0].CreationTime, BufferSize: max(a.g.bufSize, r.max)})
		}
		if cleared && kind == KindCircuitBreaker {
			s.Restarts = append(s.Restarts, Reset{Breaker: BreakerKey{Name: name}, Reason: "event ring buffer was cleared (service restarted?)"})
		}
	}
}

// lossBounds fills LostEvents.AtLeast from the breaker counters and remembers
// what this poll delivered. Breakers are read before events, so the counter
// delta covers (previous read, this read] while the delivered events cover
// (previous event read, this event read]; subtracting the events delivered in
// the previous poll as well keeps the bound sound.
func (a *ActuatorSource) lossBounds(s *Snapshot) {
	seen := map[BreakerKey][2]int{}
	// History counts too: those events were delivered by this poll's event
	// read, which may follow the counters read at the start of the poll.
	for _, e := range append(s.History[:len(s.History):len(s.History)], s.Events...) {
		if e.Kind != KindCircuitBreaker {
			continue
		}
		k := BreakerKey{Name: e.Name}
		v := seen[k]
		switch e.Type {
		case "NOT_PERMITTED":
			v[0]++
		case "SUCCESS", "ERROR":
			v[1]++
		}
		seen[k] = v
	}
	cur := map[BreakerKey]BreakerSample{}
	for _, b := range s.Breakers {
		cur[b.Key()] = b
	}
	for i, l := range s.Lost {
		if l.Kind != KindCircuitBreaker {
			continue
		}
		k := BreakerKey{Name: l.Name}
		p, ok1 := a.prev[k]
		c, ok2 := cur[k]
		if !ok1 || !ok2 || p.State != c.State {
			continue
		}
		bound := 0.0
		if c.State == "OPEN" || c.State == "HALF_OPEN" {
			bound += math.Max(0, c.NotPermitted-p.NotPermitted-float64(seen[k][0]+a.prevSeen[k][0]))
		}
		if c.State == "CLOSED" || c.State == "HALF_OPEN" || c.State == "METRICS_ONLY" {
			bound += math.Max(0, c.Buffered-p.Buffered-float64(seen[k][1]+a.prevSeen[k][1]))
		}
		if !math.IsNaN(bound) {
			s.Lost[i].AtLeast = int(bound)
		}
	}
	a.prev = cur
	a.prevSeen = seen
}

// The history rule. Resilience4j keeps the last events of every breaker
// (event-consumer-buffer-size, 100 by default) for as long as the service
// runs, so the first answer of an event endpoint can hold events of last
// week. Those are history: they are delivered in Snapshot.History (with
// Event.History set), never in Snapshot.Events, so no transition is counted
// from them. Which events are history is decided without trusting any clock
// where possible:
//
//   - The first successful read of an event endpoint made during the source's
//     first poll (the start): every event in it was already buffered when
//     observation began. Exact; an event created during that first request
//     (one round trip) counts as history too.
//   - Every later read: the ring is de-duplicated against the previous answer,
//     so a fresh event was created after that answer was generated, i.e. after
//     the start. Exact.
//   - The first successful read made after the start (the endpoint failed
//     before): its events are compared with the start on the service's own
//     clock. The service's clock is taken from the HTTP Date header of its
//     answers (offset = Date + 0.5 s - the middle of the request on this
//     machine's clock), with a tolerance of 0.5 s (the header's one-second
//     resolution) plus half the round trip; an event up to that tolerance after
//     the start is still history (a real transition there is still seen by
//     the state samples). Without a Date header the clocks are taken as equal.
//     A source given a clock that is not the wall clock (the embedded demo on
//     a scaled clock) takes that clock to be the service's.

// historyRule returns the history test for the events of a successful read of
// path in this poll, and records that path has been read.
func (a *ActuatorSource) historyRule(s *Snapshot, path string) func(Event) bool {
	first := !a.readOK[path]
	a.readOK[path] = true
	switch {
	case !first:
		return nil
	case a.polls == 1:
		return func(Event) bool { return true }
	}
	cut, tol, known := a.startOnServiceClock()
	if !known {
		a.notice(s, "clock", fmt.Sprintf("%s sends no Date header: its clock is taken as equal to this machine's to tell events before the start from later ones", safeURL(a.base)))
	}
	limit := cut.Add(tol)
	return func(e Event) bool { return !e.CreationTime.After(limit) }
}

// startOnServiceClock returns the source's start as a time on the service's
// clock, the tolerance of that estimate, and whether the service's clock was
// known (from a Date header).
func (a *ActuatorSource) startOnServiceClock() (start time.Time, tol time.Duration, known bool) {
	if d := time.Until(a.g.clock.Now()); d > time.Second || d < -time.Second {
		return a.started, 0, true // a virtual clock: the service's own (embedded demo)
	}
	off, tol, ok := a.tap.offset()
	if !ok {
		return a.started, 0, false
	}
	return a.started.Add(off), tol, true
}

// ServiceClockOffset is the service's clock minus this machine's, measured
// from the Date header of its last answer, with its tolerance (0.5 s for the
// header's resolution plus half the round trip). ok is false before any
// answer with a Date header.
func (a *ActuatorSource) ServiceClockOffset() (offset, tolerance time.Duration, ok bool) {
	return a.tap.offset()
}

// dateTap records the Date header of the answers that pass through it, with
// the wall-clock send and receive times of their requests.
type dateTap struct {
	next       http.RoundTripper
	mu         sync.Mutex
	date       time.Time // the service's clock, truncated to the second
	sent, recv time.Time
}

// tapDates puts a dateTap in front of g's transport (on a copy of its client).
func tapDates(g *httpGetter) *dateTap {
	c := *g.client
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	t := &dateTap{next: next}
	c.Transport = t
	g.client = &c
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *dateTap) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := time.Now()
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if d, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		recv := time.Now()
		t.mu.Lock()
		t.date, t.sent, t.recv = d, sent, recv
		t.mu.Unlock()
	}
	return resp, nil
}

// offset returns the service's clock minus the wall clock and its tolerance.
func (t *dateTap) offset() (time.Duration, time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.date.IsZero() {
		return 0, 0, false
	}
	rtt := t.recv.Sub(t.sent)
	mid := t.sent.Add(rtt / 2)
	return t.date.Add(500 * time.Millisecond).Sub(mid), 500*time.Millisecond + rtt/2, true
}

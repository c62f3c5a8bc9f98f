package attack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// Defaults used when the corresponding Config field is zero.
const (
	// DefaultTimeout is the per-request (per-step) timeout.
	DefaultTimeout = 5 * time.Second
	// DefaultLateAfter is how much later than intended a send may leave before
	// it counts as late.
	DefaultLateAfter = 10 * time.Millisecond
	// DefaultDropAfter is how far behind its schedule the pacer may be before
	// it drops a send instead of sending it late.
	DefaultDropAfter = 100 * time.Millisecond
	// BodyLimit is how many bytes of the last step's answer Result.Body keeps.
	BodyLimit = 4 << 10
	// captureLimit is how many bytes of an answer are read for captures.
	captureLimit = 1 << 20
)

// Config describes one attack. Open-model mode (Users == 0) runs Phases;
// sequential mode (Users > 0) runs Users users each doing Requests flow runs
// back to back and ignores Phases.
type Config struct {
	// Target is the base URL relative step URLs are appended to, e.g.
	// "http://127.0.0.1:8080". It may be empty only if every step URL is absolute.
	Target string
	// Flow is what one request does; nil means DefaultFlow().
	Flow *Flow
	// Phases is the open-model plan (rates in requests per second, 0 = pause).
	Phases []Phase
	// Users is the number of sequential users; > 0 selects sequential mode.
	Users int
	// Requests is the number of flow runs each sequential user makes.
	Requests int
	// Think is the pause between two flow runs of one sequential user.
	Think time.Duration
	// Timeout bounds each HTTP request (each step); 0 means DefaultTimeout (5 s).
	Timeout time.Duration
	// Client supplies the Transport (the connection pool, kept across pauses
	// and shared by every phase and step), CheckRedirect and Jar; nil builds
	// one with vegeta's transport settings. Its Timeout is not used: Timeout
	// applies to each request instead.
	Client *http.Client
	// Logger receives progress at debug/info level; nil discards.
	Logger *slog.Logger

	// LateAfter is the lateness (actual - intended send time) above which a
	// send counts as late; 0 means DefaultLateAfter (10 ms).
	LateAfter time.Duration
	// DropAfter bounds catching up: when the pacer reaches a scheduled send
	// more than max(DropAfter, one interval) after its intended time, it
	// drops it (counted, never sent); 0 means DefaultDropAfter (100 ms). So
	// after a stall the load generator sends at most DropAfter worth of
	// traffic late and then goes on on schedule. Independently, nothing of a
	// phase leaves at or after the phase's end: a send still waiting for a
	// worker then is dropped too, so a backlog never runs into the next
	// phase or a pause.
	DropAfter time.Duration
	// MaxWorkers caps vegeta's concurrent workers per phase; 0 means no cap.
	// A cap makes the load closed-loop once every worker is busy: the sends
	// that cannot leave in time are then counted as dropped.
	MaxWorkers int
	// RunID prefixes every OrderID ("<RunID>-<Seq, 6 digits>"); empty picks 6
	// random hex digits.
	RunID string
	// Shard, when split, makes this Run send only its share of the plan (see
	// Shard); Summary and Result counts and Seqs are then the shard's own.
	Shard Shard
	// StartAt, when not zero, is when the first phase (or the first
	// sequential request) starts instead of at once: processes given the same
	// StartAt send on one schedule. A StartAt in the past starts the plan
	// then, and the sends whose time passed by more than DropAfter are dropped.
	StartAt time.Time

	// stall, when set (tests in this package only), runs in a rate phase's
	// pacer before it looks at the phase's slot next (0-based): a test sleeps
	// in it to stall the load generator deterministically.
	stall func(phase, next int)
}

// StepResult is the outcome of one step of a flow run.
type StepResult struct {
	// Name is the step's name.
	Name string
	// Status is the HTTP status, 0 on a transport error.
	Status int
	// Sent is when the step's request left.
	Sent time.Time
	// Latency is from Sent to the end of reading the answer.
	Latency time.Duration
	// Error is empty on success; otherwise the transport error, the HTTP
	// status text for statuses outside 200-399, or the capture error.
	Error string
}

// Result is one request: one flow run, however many steps it has.
type Result struct {
	// Seq is the 1-based request number in intended-send order (dropped sends
	// get no number).
	Seq int
	// Phase is the 0-based phase index (0 in sequential mode).
	Phase int
	// PhaseName is the phase's name ("sequential" in sequential mode).
	PhaseName string
	// User is the 1-based sequential user, 0 in open-model mode.
	User int
	// OrderID is the flow run's {{.OrderID}}.
	OrderID string
	// Intended is when the request should have left: phase start + i/rate in
	// open-model mode, the moment the user was ready in sequential mode.
	Intended time.Time
	// Sent is when the first step's request left: when a vegeta worker took
	// the scheduled send and built its request, never before Intended.
	Sent time.Time
	// Latency is the whole flow: from Sent to the end of the last step run.
	Latency time.Duration
	// Status is the HTTP status of the last step run, 0 on a transport error.
	Status int
	// Error is empty when every step succeeded; otherwise the failing step's
	// error, prefixed with its name in multi-step flows ("pay: 503 Service Unavailable").
	Error string
	// Body is the first BodyLimit (4 KiB) bytes of the last step's answer.
	Body []byte
	// Steps holds one entry per step run; a failing step ends the flow run.
	Steps []StepResult
	// Vars are the values captured from the steps' JSON answers (nil when the
	// flow captures nothing), e.g. the service's orderId.
	Vars map[string]string
}

// Delay is how much later than intended the request left (negative: early).
func (r Result) Delay() time.Duration { return r.Sent.Sub(r.Intended) }

// PhaseSummary counts what happened in one phase.
type PhaseSummary struct {
	// Name is the phase's name.
	Name string
	// Rate is the phase's rate in requests per second.
	Rate float64
	// Duration is the phase's planned length.
	Duration time.Duration
	// Start is the phase's scheduled start.
	Start time.Time
	// Planned is how many requests the phase scheduled.
	Planned int
	// Sent is how many requests left (and produced a Result).
	Sent int
	// Dropped is how many scheduled sends came due (before the phase ended or
	// the run was cancelled) and never left, each counted where it was given
	// up: the pacer was more than Config.DropAfter behind, a send was still
	// waiting for a worker (MaxWorkers, or a starved process) at the phase's
	// end, or the phase's time passed while the process was stalled. They
	// have no Result and no Seq. Sent + Dropped = Planned for a completed run.
	Dropped int
	// Late is how many sends left more than Config.LateAfter after their intended time.
	Late int
	// Behind is the furthest the load generator fell behind this phase's
	// schedule: the largest now - intended time seen when a send was
	// released, taken by a worker or dropped; 0 if it never was. A stall of
	// the process (or of its scheduling) shows here; a phase the process
	// slept through entirely has Behind >= Duration and every send dropped.
	Behind time.Duration
	// Failed is how many sent requests ended with an error.
	Failed int
}

// Summary is what Run did.
type Summary struct {
	// Phases has one entry per phase (one "sequential" entry in sequential mode).
	Phases []PhaseSummary
	// Started is the start of the first phase; Ended is when Run returned.
	Started, Ended time.Time
}

// ConfigError is a bad Config field. ExitCode is 2.
type ConfigError struct {
	// Field is the Config field, e.g. "Target".
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *ConfigError) Error() string { return "attack config: " + e.Field + ": " + e.Msg }

// ExitCode is 2: a bad configuration is a usage error.
func (e *ConfigError) ExitCode() int { return 2 }

// Run runs the attack described by cfg and calls emit once per request, as
// results arrive. emit is never called concurrently (calls are serialized)
// and never after Run returns; it must be fast or hand the Result to a
// buffer: a slow emit does not delay sends (vegeta starts more workers), but
// it holds results and goroutines in memory.
//
// Run returns after the last phase's end and once every request in flight has
// finished (at most Timeout later). On ctx cancellation it stops sending,
// aborts requests in flight, and returns the partial Summary with ctx.Err().
// A target failing mid-run is recorded per request; Run does not stop.
func Run(ctx context.Context, cfg Config, emit func(Result)) (Summary, error) {
	e, err := newEngine(cfg, emit)
	if err != nil {
		return Summary{}, err
	}
	// Every request of the run goes through one transport wrapper: the run's
	// context (cancel aborts requests in flight) plus the per-request timeout.
	e.client.Transport = &ctxTransport{ctx: ctx, timeout: e.cfg.Timeout, base: e.base}
	if e.cfg.Users > 0 {
		return e.sequential(ctx)
	}
	return e.open(ctx)
}

// engine is the state of one Run.
type engine struct {
	cfg       Config
	steps     []compiledStep
	target    string // without trailing slash
	log       *slog.Logger
	client    *http.Client // every request; its Transport is set by Run
	base      http.RoundTripper
	lateAfter time.Duration

	emitMu sync.Mutex
	emitFn func(Result)

	seq     atomic.Int64
	stopped atomic.Bool
	pendMu  sync.Mutex
	pending map[int64]inflight // between targeter and result
	hasVars bool               // some step captures
	// keepRuns is set when a flow run needs more than its first request
	// (more steps, or captures): the targeter then builds a flowRun.
	keepRuns bool
	// urlPrefix is the first step's URL plus fragPrefix when the URL is
	// not a template, "" otherwise.
	urlPrefix string
	flows     sync.WaitGroup
}

func newEngine(cfg Config, emit func(Result)) (*engine, error) {
	if emit == nil {
		emit = func(Result) {}
	}
	if cfg.Flow == nil {
		cfg.Flow = DefaultFlow()
	}
	steps, err := cfg.Flow.compile(cfg.Flow.Name, nil)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, &ConfigError{Field: "Timeout", Msg: fmt.Sprintf("negative timeout %s", cfg.Timeout)}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.LateAfter < 0 {
		return nil, &ConfigError{Field: "LateAfter", Msg: fmt.Sprintf("negative tolerance %s", cfg.LateAfter)}
	}
	if cfg.LateAfter == 0 {
		cfg.LateAfter = DefaultLateAfter
	}
	if cfg.DropAfter < 0 {
		return nil, &ConfigError{Field: "DropAfter", Msg: fmt.Sprintf("negative bound %s", cfg.DropAfter)}
	}
	if cfg.DropAfter == 0 {
		cfg.DropAfter = DefaultDropAfter
	}
	if err := cfg.Shard.check(); err != nil {
		return nil, &ConfigError{Field: "Shard", Msg: err.Error()}
	}
	if cfg.MaxWorkers < 0 {
		return nil, &ConfigError{Field: "MaxWorkers", Msg: fmt.Sprintf("negative worker cap %d", cfg.MaxWorkers)}
	}
	switch {
	case cfg.Users < 0:
		return nil, &ConfigError{Field: "Users", Msg: fmt.Sprintf("negative user count %d", cfg.Users)}
	case cfg.Users > 0 && cfg.Requests <= 0:
		return nil, &ConfigError{Field: "Requests", Msg: fmt.Sprintf("sequential mode needs requests per user > 0, got %d", cfg.Requests)}
	case cfg.Think < 0:
		return nil, &ConfigError{Field: "Think", Msg: fmt.Sprintf("negative think time %s", cfg.Think)}
	case cfg.Users == 0 && len(cfg.Phases) == 0:
		return nil, &ConfigError{Field: "Phases", Msg: "no phases (want e.g. 15/s:5s,0/s:15s,5/s:8s) and no sequential users"}
	}
	if cfg.Users == 0 {
		for i, p := range cfg.Phases {
			if p.Rate < 0 || p.Rate > MaxRate || math.IsNaN(p.Rate) || p.Duration <= 0 {
				return nil, &ConfigError{Field: fmt.Sprintf("Phases[%d]", i), Msg: fmt.Sprintf("%s: want 0 <= rate <= %d/s and duration > 0", p, MaxRate)}
			}
		}
	}
	target := strings.TrimRight(strings.TrimSpace(cfg.Target), "/")
	needTarget := false
	for _, s := range steps {
		if !s.absolute {
			needTarget = true
		}
	}
	if target != "" || needTarget {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, &ConfigError{Field: "Target", Msg: fmt.Sprintf("%q is not an http(s) base URL (want e.g. http://127.0.0.1:8080)", cfg.Target)}
		}
	}
	if cfg.RunID == "" {
		cfg.RunID = fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shared := cfg.Client
	if shared == nil {
		shared = newClient()
	}
	base := shared.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := &http.Client{Transport: base, CheckRedirect: shared.CheckRedirect, Jar: shared.Jar}
	e := &engine{
		cfg: cfg, steps: steps, target: target, log: log, client: client, base: base,
		lateAfter: cfg.LateAfter, emitFn: emit, pending: map[int64]inflight{},
	}
	for i := range steps {
		s := &steps[i]
		if len(s.capture) > 0 {
			e.hasVars = true
		}
		if s.url.tmpl == nil {
			s.fixedURL = e.resolve(s, s.url.text)
		}
	}
	e.keepRuns = e.hasVars || len(steps) > 1
	if steps[0].url.tmpl == nil {
		e.urlPrefix = withoutFragment(steps[0].fixedURL) + fragPrefix
	}
	return e, nil
}

// newClient is the shared client built when Config.Client is nil: vegeta's
// transport settings (keep-alive, a large idle pool per host, no connection cap).
func newClient() *http.Client {
	d := &net.Dialer{KeepAlive: 30 * time.Second, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: vegeta.DefaultConnections,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func (e *engine) emit(r Result) {
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	e.emitFn(r)
}

// phaseStats are the live counters of one phase.
type phaseStats struct {
	sent, late, failed atomic.Int64
}

func (s *phaseStats) summary(p Phase, start time.Time, planned int) PhaseSummary {
	return PhaseSummary{
		Name: p.Name, Rate: p.Rate, Duration: p.Duration, Start: start, Planned: planned,
		Sent: int(s.sent.Load()), Late: int(s.late.Load()), Failed: int(s.failed.Load()),
	}
}

// flowRun is one request (one run of the flow) in progress.
type flowRun struct {
	seq      int64
	phase    int
	stats    *phaseStats
	user     int
	intended time.Time
	data     TemplateData
	res      Result
}

func (e *engine) newFlowRun(seq int64, phase int, name string, stats *phaseStats, user int, intended time.Time) *flowRun {
	fr := &flowRun{seq: seq, phase: phase, stats: stats, user: user, intended: intended}
	fr.data = TemplateData{Seq: int(seq), OrderID: orderID(e.cfg.RunID, seq), User: user}
	if e.hasVars {
		fr.data.Vars = make(map[string]string, 2)
	}
	fr.data.UserID = openUserID
	if user > 0 {
		fr.data.UserID = fmt.Sprintf("user-%d", user)
	}
	fr.res = Result{Seq: int(seq), Phase: phase, PhaseName: name, User: user, OrderID: fr.data.OrderID, Intended: intended,
		Steps: make([]StepResult, 0, len(e.steps)), Vars: fr.data.Vars}
	return fr
}

// openUserID is TemplateData.UserID in open-model mode.
const openUserID = "cbprobe"

// orderID is "<runID>-<seq, at least 6 digits>" (one allocation).
func orderID(runID string, seq int64) string {
	var nb [20]byte
	n := strconv.AppendInt(nb[:0], seq, 10)
	return runID + "-" + "000000"[:max(6-len(n), 0)] + string(n)
}

// resolve turns a rendered step URL into an absolute one.
func (e *engine) resolve(cs *compiledStep, u string) string {
	if cs.absolute {
		return u
	}
	if strings.HasPrefix(u, "/") {
		return e.target + u
	}
	return e.target + "/" + u
}

// renderedStep is a step's request with its templates applied.
type renderedStep struct {
	method, url string
	header      http.Header
	body        []byte
}

// render applies the step's templates. The returned header and body may be
// shared between requests (constant parts): callers must not change them.
func (e *engine) render(cs *compiledStep, d *TemplateData) (renderedStep, error) {
	var r renderedStep
	r.method = cs.method
	if cs.url.tmpl == nil {
		r.url = cs.fixedURL
	} else {
		u, err := cs.url.render(d)
		if err != nil {
			return r, fmt.Errorf("render url: %w", err)
		}
		r.url = e.resolve(cs, u)
	}
	if cs.body.tmpl == nil {
		r.body = cs.constBody
	} else {
		body, err := cs.body.render(d)
		if err != nil {
			return r, fmt.Errorf("render body: %w", err)
		}
		if body != "" {
			r.body = []byte(body)
		}
	}
	if cs.constHeader != nil {
		r.header = cs.constHeader
		return r, nil
	}
	r.header = make(http.Header, len(cs.headers))
	for _, h := range cs.headers {
		v, err := h.val.render(d)
		if err != nil {
			return r, fmt.Errorf("render header %s: %w", h.raw, err)
		}
		r.header[h.key] = []string{v}
	}
	return r, nil
}

// finishStep records a finished step in fr and applies its captures.
// It reports whether the flow run may go on.
func (e *engine) finishStep(fr *flowRun, cs *compiledStep, sr StepResult, body []byte) bool {
	if sr.Error == "" && len(cs.capture) > 0 {
		for _, c := range cs.capture {
			v, err := extract(body, c.path)
			if err != nil {
				sr.Error = fmt.Sprintf("capture %s: %v", c.name, err)
				break
			}
			fr.data.Vars[c.name] = v
		}
	}
	fr.res.Steps = append(fr.res.Steps, sr)
	fr.res.Status = sr.Status
	fr.res.Latency = sr.Sent.Add(sr.Latency).Sub(fr.res.Sent)
	fr.res.Body = nil
	if len(body) > 0 {
		n := min(len(body), BodyLimit)
		if cap(body) > 2*BodyLimit {
			// do not keep a large capture buffer alive for 4 KiB
			fr.res.Body = append([]byte(nil), body[:n]...)
		} else {
			fr.res.Body = body[:n:n]
		}
	}
	if sr.Error != "" {
		fr.res.Error = sr.Error
		if len(e.steps) > 1 {
			fr.res.Error = sr.Name + ": " + sr.Error
		}
		return false
	}
	return true
}

// complete counts and emits a finished flow run.
func (e *engine) complete(fr *flowRun) {
	if fr.res.Error != "" {
		fr.stats.failed.Add(1)
	}
	e.emit(fr.res)
}

// runSteps runs steps from index `from` with the shared client.
func (e *engine) runSteps(ctx context.Context, fr *flowRun, from int) {
	for i := from; i < len(e.steps); i++ {
		cs := &e.steps[i]
		sr, body := e.doStep(ctx, cs, fr)
		if i == 0 {
			fr.res.Sent = sr.Sent
		}
		if !e.finishStep(fr, cs, sr, body) {
			return
		}
	}
}

// doStep sends one step with the shared client and reads its answer.
func (e *engine) doStep(ctx context.Context, cs *compiledStep, fr *flowRun) (StepResult, []byte) {
	sr := StepResult{Name: cs.name}
	rs, err := e.render(cs, &fr.data)
	if err != nil {
		sr.Sent = time.Now()
		sr.Error = err.Error()
		return sr, nil
	}
	var bodyReader io.Reader
	if rs.body != nil {
		bodyReader = bytes.NewReader(rs.body)
	}
	req, err := http.NewRequestWithContext(ctx, rs.method, rs.url, bodyReader)
	if err != nil {
		sr.Sent = time.Now()
		sr.Error = err.Error()
		return sr, nil
	}
	req.Header = rs.header.Clone()
	sr.Sent = time.Now()
	resp, err := e.client.Do(req)
	if err != nil {
		sr.Latency = time.Since(sr.Sent)
		sr.Error = err.Error()
		return sr, nil
	}
	defer resp.Body.Close()
	limit := int64(BodyLimit)
	if len(cs.capture) > 0 {
		limit = captureLimit
	}
	body, err := readLimited(resp.Body, limit)
	sr.Latency = time.Since(sr.Sent)
	sr.Status = resp.StatusCode
	switch {
	case err != nil:
		sr.Error = fmt.Sprintf("read answer: %v", err)
	case resp.StatusCode < 200 || resp.StatusCode >= 400:
		sr.Error = resp.Status
	}
	return sr, body
}

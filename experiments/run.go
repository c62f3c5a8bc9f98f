package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/sim"
)

// Options says how to run an experiment.
type Options struct {
	// Spec is the experiment to run.
	Spec *Spec
	// Target is the base URL of the user's service; "" runs the embedded reference
	// service against the embedded gateway.
	Target string
	// PGListen is where the gateway listens for an external target (default 127.0.0.1:8082).
	PGListen string
	// CallbackPrefix is the prefix the gateway requires of every callbackUrl when
	// the target is external; "" accepts any http(s) URL. (The original
	// pg-simulator requires http://localhost:8080.)
	CallbackPrefix string
	// Arm runs only the arm of that name; required with Target when the spec has several.
	Arm string
	// Breaker is the circuit breaker to read on the target; "" means the Feign name,
	// or the only breaker the target exposes.
	Breaker string
	// Metrics is the source of breaker metrics: "actuator" (default), "prometheus" or "prom-api".
	Metrics string
	// MetricsURL is where that source is; "" means the target (actuator) or the
	// target's /actuator/prometheus (prometheus). prom-api needs it.
	MetricsURL string
	// Selector is the PromQL label selector of the prom-api source.
	Selector string
	// Headers are sent with every metrics request ("Name: value").
	Headers http.Header
	// Insecure skips TLS verification of the metrics source.
	Insecure bool
	// Seed makes the gateway's outcomes and the predictions reproducible (0: 1).
	Seed int64
	// Speed runs the embedded setup Speed times faster (1: real time).
	Speed float64
	// Out is the run directory; "" means results.DefaultDir.
	Out string
	// Expect adds expectations to the spec's.
	Expect []string
	// ConfigPath replaces the spec's configuration (application.yml).
	ConfigPath string
	// PredictRuns is the number of simulated runs per arm (0: 1,000).
	PredictRuns int
	// Logger receives progress and diagnostics; nil discards.
	Logger *slog.Logger
	// Progress, when set, is called about four times a second during each arm.
	Progress func(arm string, p results.Progress)
	// Version is recorded in run.json.
	Version string
}

// RunError is an infrastructure failure of an experiment (exit code 3).
type RunError struct {
	Op  string
	Err error
}

func (e *RunError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *RunError) Unwrap() error { return e.Err }

// ExitCode is 3: the target, the gateway or the metrics could not be used.
func (e *RunError) ExitCode() int { return 3 }

// ExpectationsFailed is returned by Run when the run completed and at least one
// expectation did not hold (exit code 1).
type ExpectationsFailed struct {
	Failed, Total int
}

func (e *ExpectationsFailed) Error() string {
	return fmt.Sprintf("%d of %d expectations failed", e.Failed, e.Total)
}

// ExitCode is 1: the breaker did not behave as asserted.
func (e *ExpectationsFailed) ExitCode() int { return 1 }

// Run runs every selected arm of the experiment, writes the run directory and
// returns the record. The error is *ExpectationsFailed when the run completed
// but an expectation failed, the context's error when interrupted (the run
// directory then holds a partial run), and a usage or infrastructure error
// otherwise.
func Run(ctx context.Context, o Options) (*results.Run, string, error) {
	o = withDefaults(o)
	spec := o.Spec
	switch o.Metrics {
	case "actuator", "prometheus":
	case "prom-api":
		if o.MetricsURL == "" {
			return nil, "", &SpecError{Source: "--metrics-url", Msg: "prom-api needs the Prometheus server's URL"}
		}
	default:
		return nil, "", &SpecError{Source: "--metrics", Msg: fmt.Sprintf("%q is not one of actuator, prometheus, prom-api", o.Metrics)}
	}
	exprs := append(append([]string{}, spec.Expect...), o.Expect...)
	expects, err := ParseExpectations(exprs)
	if err != nil {
		return nil, "", err
	}
	if o.Target != "" {
		if o.Speed != 1 {
			return nil, "", &SpecError{Source: "--speed", Msg: "only the embedded setup can run faster than real time; drop --speed with --target"}
		}
		if o.Arm == "" && len(spec.Arms) > 1 {
			return nil, "", &SpecError{Source: "--arm", Msg: fmt.Sprintf("with --target pick the arm your service is configured for (arms: %s)", armNames(spec))}
		}
	}
	plans, err := planArms(spec, o.Arm, o.ConfigPath)
	if err != nil {
		return nil, "", err
	}
	dir := o.Out
	if dir == "" {
		dir = results.DefaultDir(spec.Name, time.Now().UTC())
	}
	w, err := results.Create(dir)
	if err != nil {
		return nil, "", err
	}
	run := &results.Run{
		Experiment:  spec.Name,
		Description: spec.Title,
		Tool:        o.Version,
		Target:      o.Target,
		Started:     time.Now().UTC(),
		Parameters:  runParameters(o),
	}
	if err := w.Checkpoint(run); err != nil {
		return nil, dir, err
	}
	for i, p := range plans {
		o.Logger.Info("arm", "name", p.arm.Name, "of", len(plans), "index", i+1)
		prediction, err := sim.Predict(ctx, p.sim, o.PredictRuns, uint64(o.Seed))
		if err != nil && ctx.Err() == nil {
			err = fmt.Errorf("arm %s: predict: %w", p.arm.Name, err)
			_ = w.Abort(run, err.Error())
			return run, dir, err
		}
		if ctx.Err() != nil {
			return run, dir, interrupted(ctx, w, run)
		}
		arm, unob, err := runArm(ctx, o, p, w)
		if arm != nil {
			addComparisons(arm, prediction, p, unob)
			run.Arms = append(run.Arms, *arm)
			if cerr := w.Checkpoint(run); cerr != nil {
				o.Logger.Warn("checkpoint run.json", "dir", dir, "err", cerr)
			}
		}
		if ctx.Err() != nil {
			return run, dir, interrupted(ctx, w, run)
		}
		if err != nil {
			_ = w.Abort(run, err.Error())
			return run, dir, err
		}
	}
	run.Findings = findings(run, plans)
	outcomes := make([]ArmOutcome, len(run.Arms))
	for i := range run.Arms {
		outcomes[i] = armOutcome(&run.Arms[i])
	}
	failed := 0
	for _, e := range expects {
		for _, v := range Check(e, outcomes) {
			if !v.OK {
				failed++
			}
			run.Expectations = append(run.Expectations, results.Expectation{
				Expr: e.Expr, OK: v.OK, Arm: v.Arm, Got: v.Got, Want: want(e), Message: v.Reason,
			})
		}
	}
	run.Ended = time.Now().UTC()
	if err := w.Finish(run); err != nil {
		return run, dir, err
	}
	if failed > 0 {
		return run, dir, &ExpectationsFailed{Failed: failed, Total: len(run.Expectations)}
	}
	return run, dir, nil
}

func interrupted(ctx context.Context, w *results.Writer, run *results.Run) error {
	run.Ended = time.Now().UTC()
	if err := w.Abort(run, "interrupted"); err != nil {
		return errors.Join(ctx.Err(), err)
	}
	return ctx.Err()
}

func withDefaults(o Options) Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if !(o.Speed > 0) {
		o.Speed = 1
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.PredictRuns <= 0 {
		o.PredictRuns = 1000
	}
	if o.Metrics == "" {
		o.Metrics = "actuator"
	}
	if o.PGListen == "" {
		o.PGListen = "127.0.0.1:8082"
	}
	return o
}

func armNames(s *Spec) string {
	names := make([]string, len(s.Arms))
	for i, a := range s.Arms {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}

func runParameters(o Options) map[string]any {
	m := map[string]any{"seed": o.Seed, "speed": o.Speed, "predictRuns": o.PredictRuns, "spec": o.Spec.Source}
	if o.Target != "" {
		m["target"] = o.Target
		m["metrics"] = o.Metrics
		m["pgListen"] = o.PGListen
	}
	if o.ConfigPath != "" {
		m["config"] = o.ConfigPath
	}
	if o.Spec.Traffic.Phases != "" {
		m["phases"] = o.Spec.Traffic.Phases
	}
	if s := o.Spec.Traffic.Sequential; s != nil {
		m["sequential"] = fmt.Sprintf("%d users × %d requests", s.Users, s.Requests)
	}
	return m
}

func want(e Expectation) string {
	if e.Metric == "cause" {
		return e.Op + " " + e.Cause
	}
	return fmt.Sprintf("%s %g", e.Op, e.Number)
}

// timeline maps the service's clock to the wall clock: the embedded service runs
// on a clock Speed times faster than real time.
type timeline struct {
	wall0, svc0 time.Time
	speed       float64
}

func (t timeline) toWall(s time.Time) time.Time {
	if s.IsZero() {
		return s
	}
	return t.wall0.Add(time.Duration(float64(s.Sub(t.svc0)) / t.speed))
}

// armRun is what one arm produced while it ran.
type armRun struct {
	mu           sync.Mutex
	requests     []results.Request
	recording    collect.Recording
	gaps         []string
	summary      attack.Summary
	attempts     pgsim.AttemptStats
	log          []pgsim.Attempt
	orders       map[int]string // request number -> the service's orderId (captured by the flow)
	unobstructed int            // requests none of whose attempts the breaker refused
	tl           timeline
	breaker      string // the breaker analysed ("" until resolved)
	feign        string // the breaker name the configuration resolves
	seen         map[string]bool
	counts       results.Progress // running totals for the progress line
}

// runArm starts the gateway (and the reference service unless o.Target is set),
// polls the breaker while the attack runs, and analyses what happened.
func runArm(ctx context.Context, o Options, p armPlan, w *results.Writer) (*results.Arm, int, error) {
	ar := &armRun{seen: map[string]bool{}, breaker: o.Breaker, feign: p.settings.BreakerName, orders: map[int]string{}}
	target := o.Target
	var gateway *pgsim.Server
	var svc *demo.Service
	clock := breaker.SystemClock()
	if target == "" {
		var err error
		svc, err = demo.New(demo.Config{
			Spring:          p.file,
			EmbeddedGateway: true,
			Gateway:         pgsim.Config{Behavior: p.behaviors[0], Seed: o.Seed},
			Seed:            o.Seed,
			Speed:           o.Speed,
		}, o.Logger)
		if err != nil {
			return nil, 0, err
		}
		if err := svc.Start(ctx, "127.0.0.1:0"); err != nil {
			return nil, 0, &RunError{Op: "start the reference service", Err: err}
		}
		defer closeWithin(svc.Close)
		target, gateway, clock = svc.URL(), svc.Gateway(), svc.Clock()
	} else {
		var err error
		prefix := o.CallbackPrefix
		if prefix == "" {
			prefix = "http"
		}
		gateway, err = pgsim.New(pgsim.Config{Behavior: p.behaviors[0], Seed: o.Seed, CallbackPrefix: prefix}, o.Logger)
		if err != nil {
			return nil, 0, err
		}
		if err := gateway.Start(ctx, o.PGListen); err != nil {
			return nil, 0, &RunError{Op: "start the gateway on " + o.PGListen, Err: err}
		}
		defer closeWithin(gateway.Close)
		if err := attack.CheckTarget(ctx, target, nil); err != nil {
			return nil, 0, err
		}
	}
	ar.tl = timeline{wall0: time.Now(), svc0: clock.Now(), speed: o.Speed}
	source, err := metricsSource(o, target, clock)
	if err != nil {
		return nil, 0, err
	}
	realInterval := max(20*time.Millisecond, time.Duration(float64(100*time.Millisecond)/o.Speed))
	sampler, err := collect.NewSampler(collect.SamplerConfig{
		Source:     source,
		Interval:   time.Duration(float64(realInterval) * o.Speed),
		Clock:      collect.AdaptClock(clock.Now, clock.AfterFunc),
		Logger:     o.Logger,
		Thresholds: configThresholds(p),
	})
	if err != nil {
		return nil, 0, err
	}
	pollCtx, stopPolling := context.WithCancel(context.WithoutCancel(ctx))
	var pollWG sync.WaitGroup
	pollWG.Add(1)
	var lastState string
	go func() {
		defer pollWG.Done()
		sampler.Run(pollCtx, func(u collect.Update) {
			ar.consume(p.arm.Name, u, w, &lastState)
		})
	}()
	gateway.ResetStats()
	phaseTimers := schedulePhaseBehaviors(p, gateway, o.Speed, o.Logger)
	cfg := attack.Config{Target: target, Flow: p.flow}
	if p.seq != nil {
		cfg.Users, cfg.Requests = p.seq.Users, p.seq.Requests
		cfg.Think = time.Duration(float64(p.think) / o.Speed)
	} else {
		cfg.Phases = scalePhases(p.phases, o.Speed)
	}
	stopProgress := ar.progress(o, p, cfg, &lastState, w)
	w.Event(results.Event{Time: time.Now().UTC(), Arm: p.arm.Name, Kind: "phase", Message: "attack started against " + target})
	summary, attackErr := attack.Run(ctx, cfg, func(r attack.Result) {
		ar.addRequest(p.arm.Name, r, w)
	})
	stopProgress()
	for _, t := range phaseTimers {
		t.Stop()
	}
	ar.summary = summary
	// Let the sampler see the last transitions before it stops.
	if ctx.Err() == nil {
		time.Sleep(3 * realInterval)
	}
	stopPolling()
	pollWG.Wait()
	ar.resolveBreaker()
	ar.attempts = gateway.Stats().Attempts
	ar.log = gateway.Attempts()
	arm := ar.analyse(p, o)
	if attackErr != nil && ctx.Err() == nil {
		return arm, ar.unobstructed, attackErr
	}
	if o.Target != "" && ctx.Err() == nil && !ar.seen[arm.Breaker] {
		return arm, ar.unobstructed, &RunError{Op: "read the breaker", Err: fmt.Errorf("breaker %q never appeared in the %s metrics (found: %s); set --breaker", arm.Breaker, o.Metrics, ar.seenNames())}
	}
	return arm, ar.unobstructed, nil
}

func closeWithin(closeFn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = closeFn(ctx)
}

func metricsSource(o Options, target string, clock breaker.Clock) (collect.Source, error) {
	opt := collect.HTTPOptions{Headers: o.Headers, Insecure: o.Insecure, Clock: collect.AdaptClock(clock.Now, clock.AfterFunc), Logger: o.Logger}
	url := o.MetricsURL
	switch o.Metrics {
	case "actuator":
		if url == "" {
			url = target
		}
		return collect.NewActuator(url, opt), nil
	case "prometheus":
		if url == "" {
			url = strings.TrimRight(target, "/") + "/actuator/prometheus"
		}
		return collect.NewPrometheus(url, opt), nil
	case "prom-api":
		if url == "" {
			return nil, &SpecError{Source: "--metrics-url", Msg: "prom-api needs the Prometheus server's URL"}
		}
		return collect.NewPromAPI(url, o.Selector, opt)
	}
	return nil, &SpecError{Source: "--metrics", Msg: fmt.Sprintf("%q is not one of actuator, prometheus, prom-api", o.Metrics)}
}

func configThresholds(p armPlan) collect.Thresholds {
	c := p.settings.Breaker
	return collect.StaticThresholds(map[string]collect.Threshold{
		p.settings.BreakerName: {FailureRate: float64(c.FailureRateThreshold), SlowCallRate: float64(c.SlowCallRateThreshold), Source: "config " + p.file.Name()},
	})
}

// scalePhases shortens the plan for a sped-up run: rates × speed, durations ÷ speed,
// so each phase sends the same requests.
func scalePhases(ph []attack.Phase, speed float64) []attack.Phase {
	out := make([]attack.Phase, len(ph))
	for i, p := range ph {
		out[i] = attack.Phase{Name: p.Name, Rate: p.Rate * speed, Duration: time.Duration(float64(p.Duration) / speed)}
	}
	return out
}

// schedulePhaseBehaviors switches the gateway's behaviour when a phase starts
// (within a few milliseconds of the attack's phase boundary).
func schedulePhaseBehaviors(p armPlan, g *pgsim.Server, speed float64, log *slog.Logger) []*time.Timer {
	if len(p.phases) == 0 {
		return nil
	}
	var timers []*time.Timer
	var at time.Duration
	for i, ph := range p.phases {
		if i > 0 && p.behaviors[i].String() != p.behaviors[i-1].String() {
			b := p.behaviors[i]
			timers = append(timers, time.AfterFunc(time.Duration(float64(at)/speed), func() {
				if err := g.SetBehavior(b); err != nil {
					log.Warn("gateway behaviour for phase", "phase", ph.Name, "err", err)
				}
			}))
		}
		at += ph.Duration
	}
	return timers
}

func (ar *armRun) addRequest(arm string, r attack.Result, w *results.Writer) {
	req := results.Request{
		Arm: arm, Seq: r.Seq, Phase: r.PhaseName, User: r.User,
		Intended: r.Intended.UTC(), Sent: r.Sent.UTC(), Latency: r.Latency,
		Status: r.Status, Outcome: results.Classify(r.Status, r.Body), Error: r.Error,
	}
	w.Request(req)
	ar.mu.Lock()
	ar.requests = append(ar.requests, req)
	if id := r.Vars["orderId"]; id != "" {
		ar.orders[r.Seq] = id
	}
	ar.counts.Sent++
	switch req.Outcome {
	case results.OutcomeSucceeded:
		ar.counts.Succeeded++
	case results.OutcomeRejected:
		ar.counts.Rejected++
	default:
		ar.counts.Failed++
	}
	ar.mu.Unlock()
}

func (ar *armRun) consume(arm string, u collect.Update, w *results.Writer, lastState *string) {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if u.Err != "" {
		if u.FirstOfKind {
			ar.gaps = append(ar.gaps, u.Err)
			w.Event(results.Event{Time: time.Now().UTC(), Arm: arm, Kind: "poll-error", Message: u.Err})
		}
		return
	}
	s := u.Snapshot
	if s == nil {
		return
	}
	for _, b := range s.Breakers {
		ar.seen[b.Name] = true
		ar.recording.Samples = append(ar.recording.Samples, b)
		if b.Name == ar.want() {
			*lastState = b.State
		}
		w.Sample(results.Sample{
			Arm: arm, Time: ar.tl.toWall(b.Received).UTC(), Source: s.Source, Breaker: b.Name, State: b.State,
			FailureRate: b.FailureRate, SlowCallRate: b.SlowCallRate,
			FailureRateThreshold: b.FailureRateThreshold, SlowCallRateThreshold: b.SlowCallRateThreshold,
			Buffered: b.Buffered, Failed: b.Failed, Slow: b.Slow, SlowFailed: b.SlowFailed, NotPermitted: b.NotPermitted,
		})
	}
	for _, e := range s.Events {
		ar.recording.Events = append(ar.recording.Events, e)
		if e.Type == "SUCCESS" || e.Type == "ERROR" {
			continue // per-call events stay in the service's ring; the record keeps the decisive ones
		}
		from, to, _ := strings.Cut(e.StateTransition, "_TO_")
		w.Event(results.Event{Time: ar.tl.toWall(e.CreationTime).UTC(), Arm: arm, Kind: "breaker", Breaker: e.Name,
			Type: e.Type, From: from, To: to, Message: e.ErrorMessage})
	}
	ar.recording.Lost = append(ar.recording.Lost, s.Lost...)
	ar.recording.Limiters = append(ar.recording.Limiters, s.Limiters...)
	ar.recording.Restarts = append(ar.recording.Restarts, s.Restarts...)
	for _, n := range s.Notices {
		w.Event(results.Event{Time: time.Now().UTC(), Arm: arm, Kind: "note", Message: n})
	}
}

// want is the breaker the progress line follows: the one asked for, else the
// Feign name the reference configuration uses.
func (ar *armRun) want() string {
	if ar.breaker != "" {
		return ar.breaker
	}
	return ar.feign
}

// resolveBreaker picks the breaker to analyse when none was named: the Feign
// name if the target exposed it, else the only breaker it exposed, else the
// Feign name (so the error names what was expected).
func (ar *armRun) resolveBreaker() {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.breaker != "" {
		return
	}
	ar.breaker = ar.feign
	if !ar.seen[ar.feign] && len(ar.seen) == 1 {
		for n := range ar.seen {
			ar.breaker = n
		}
	}
}

func (ar *armRun) seenNames() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if len(ar.seen) == 0 {
		return "no breaker at all"
	}
	var names []string
	for n := range ar.seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// progress reports counts to o.Progress four times a second until stopped.
func (ar *armRun) progress(o Options, p armPlan, cfg attack.Config, lastState *string, w *results.Writer) func() {
	if o.Progress == nil {
		return func() {}
	}
	var total time.Duration
	for _, ph := range cfg.Phases {
		total += ph.Duration
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		prevSent, prevAt := 0, start
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				ar.mu.Lock()
				pr := ar.counts
				pr.State = *lastState
				ar.mu.Unlock()
				pr.Elapsed, pr.Total, pr.Backlog = now.Sub(start), total, w.Backlog()
				pr.Rate = float64(pr.Sent-prevSent) / now.Sub(prevAt).Seconds()
				prevSent, prevAt = pr.Sent, now
				o.Progress(p.arm.Name, pr)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/fault"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/runner"
	"github.com/cbprobe/cbprobe/service"
	"github.com/cbprobe/cbprobe/sim"
	"github.com/cbprobe/cbprobe/springconf"
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
	// Gateway is GatewayPgsim or GatewayFault, what applies the payments'
	// outcomes; "" takes the spec's gateway.kind (pgsim when unset).
	Gateway string
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
	// MetricsURLs, when it holds more than one URL, reads a fleet: one actuator
	// per replica (collect.FleetSource); MetricsURL is then ignored.
	MetricsURLs []string
	// Selector is the PromQL label selector of the prom-api source.
	Selector string
	// InstanceLabel is the label naming a replica for prom-api ("" = instance).
	InstanceLabel string
	// Headers are sent with every metrics request ("Name: value").
	Headers http.Header
	// Insecure skips TLS verification of the metrics source.
	Insecure bool
	// Interval is the metrics poll interval in real time; 0 means 100 ms of
	// service time (100 ms ÷ Speed, at least 20 ms).
	Interval time.Duration
	// Seed makes the gateway's outcomes and the predictions reproducible (0: 1).
	Seed int64
	// Speed runs the embedded setup Speed times faster (1: real time).
	Speed float64
	// Out is the run directory; "" means results.DefaultDir.
	Out string
	// Expect adds expectations to the spec's.
	Expect []string
	// FailOn is the lowest finding severity that fails the run ("warning",
	// "error"; "" or "none": findings never do); see results.Run.FailingFindings.
	FailOn string
	// ConfigPath replaces the spec's configuration (application.yml).
	ConfigPath string
	// PredictRuns is the number of simulated runs per arm (0: 1,000).
	PredictRuns int
	// Logger receives progress and diagnostics; nil discards.
	Logger *slog.Logger
	// Progress, when set, is called about four times a second during each arm.
	Progress func(arm string, p results.Progress)
	// Notify, when set, is told about a problem with the evidence the moment
	// it is first seen (a metrics error, the target not answering).
	Notify func(arm, msg string)
	// Version is recorded in run.json.
	Version string
	// Created, when set, is called with the run directory's writer as soon as
	// it exists (the command uses it to mark the run on a second Ctrl-C).
	Created func(*results.Writer)
	// Service, when set, starts the user's service for every arm with the arm's
	// properties and the gateway's URL, and stops it after the arm (--service);
	// a spec's service.command is used when nil.
	Service *service.Config
	// Shard, when split, sends only this process's share of the arm's load
	// (attack.Shard); it needs Target and one arm. ShardRecord is then
	// written as run.json's shard.
	Shard       attack.Shard
	ShardRecord *results.Shard
	// StartAt, when not zero, is when the arm's load starts (attack.Config.StartAt).
	StartAt time.Time
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
	// Findings counts the findings that failed the run (Options.FailOn).
	Findings int
}

func (e *ExpectationsFailed) Error() string {
	msg := fmt.Sprintf("%d of %d expectations failed", e.Failed, e.Total)
	if e.Findings > 0 {
		msg += fmt.Sprintf(", %d findings at --fail-on severity", e.Findings)
	}
	return msg
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
	case collect.KindActuator, collect.KindPrometheus:
	case collect.KindPromAPI:
		if o.MetricsURL == "" {
			return nil, "", &SpecError{Source: "--prom-api", Msg: "prom-api needs the Prometheus server's URL"}
		}
	default:
		return nil, "", &SpecError{Source: "--metrics", Msg: fmt.Sprintf("%q is not one of %s", o.Metrics, strings.Join(collect.Kinds(), ", "))}
	}
	if err := results.CheckFailOn(o.FailOn); err != nil {
		return nil, "", &SpecError{Source: "--fail-on", Msg: err.Error()}
	}
	exprs := append(append([]string{}, spec.Expect...), o.Expect...)
	expects, err := ParseExpectations(exprs)
	if err != nil {
		return nil, "", err
	}
	if o.Service, err = spec.Service.Spec.Resolve(spec.Dir, o.Service); err != nil {
		return nil, "", err
	}
	if o.Service != nil && (o.Target != "" || o.Speed != 1) {
		return nil, "", &SpecError{Source: "--service", Msg: "starts your service on a free port for each arm in real time: drop --target and --speed"}
	}
	switch o.Gateway {
	case "":
		o.Gateway = spec.Gateway.Kind
	case GatewayPgsim, GatewayFault:
	default:
		return nil, "", &SpecError{Source: "--gateway", Msg: fmt.Sprintf("%q is not pgsim or fault", o.Gateway)}
	}
	gw := gatewayPlan{kind: o.Gateway, upstream: spec.Gateway.Upstream}
	if gw.kind == GatewayFault {
		if o.Speed != 1 {
			return nil, "", &SpecError{Source: "--gateway", Msg: "cbprobe fault injects latency in real time: drop --speed"}
		}
		if spec.Gateway.Stub != "" {
			stub, err := fault.LoadStub(spec.Path(spec.Gateway.Stub))
			if err != nil {
				return nil, "", &SpecError{Source: spec.Source, Msg: fmt.Sprintf("gateway.stub: %v", err)}
			}
			gw.stub = stub
		}
		if spec.Gateway.Rules != "" {
			rules, err := fault.LoadRulesFile(spec.Path(spec.Gateway.Rules))
			if err != nil {
				return nil, "", &SpecError{Source: spec.Source, Msg: fmt.Sprintf("gateway.rules: %v", err)}
			}
			gw.rules = rules
		}
	}
	if o.Target != "" {
		if o.Speed != 1 {
			return nil, "", &SpecError{Source: "--speed", Msg: "only the embedded setup can run faster than real time; drop --speed with --target"}
		}
		if o.Arm == "" && len(spec.Arms) > 1 {
			return nil, "", &SpecError{Source: "--arm", Msg: fmt.Sprintf("with --target pick the arm your service is configured for (arms: %s)", armNames(spec))}
		}
	}
	if err := spec.CheckFleetTarget(o.Target); err != nil {
		return nil, "", err
	}
	plans, err := planArms(spec, o.Arm, o.ConfigPath)
	if err != nil {
		return nil, "", err
	}
	if o.Shard.Split() && (o.Target == "" || len(plans) != 1) {
		return nil, "", &SpecError{Source: "--shard", Msg: "a split plan runs one arm against one --target (pick it with --arm)"}
	}
	var w *results.Writer
	if o.Out == "" {
		w, err = results.CreateDefault(spec.Name, time.Now().UTC())
	} else {
		w, err = results.Create(o.Out)
	}
	if err != nil {
		return nil, "", err
	}
	dir := w.Dir()
	if o.Created != nil {
		o.Created(w)
	}
	run := &results.Run{
		Experiment:  spec.Name,
		Description: spec.Title,
		Tool:        o.Version,
		Target:      o.Target,
		Started:     time.Now().UTC(),
		Parameters:  runParameters(o),
		Shard:       o.ShardRecord,
	}
	if err := w.Checkpoint(run); err != nil {
		return nil, dir, err
	}
	var facts []armFacts // one per arm of run.Arms
	for i, p := range plans {
		o.Logger.Info("arm", "name", p.arm.Name, "of", len(plans), "index", i+1)
		// The prediction runs while the arm's load does (it took 0.3–0.7 s per arm
		// before the load), on one goroutine that yields after every simulated run
		// so the load, the service and the gateway are not held up; the arm waits
		// for it at the end.
		predicted := make(chan predictionResult, 1)
		go func(p armPlan) {
			pr, err := sim.PredictInBackground(ctx, p.sim, o.PredictRuns, uint64(o.Seed))
			predicted <- predictionResult{pr, err}
		}(p)
		arm, af, err := runArm(ctx, o, gw, p, w)
		pred := <-predicted
		if pred.err != nil && ctx.Err() == nil {
			err = errors.Join(err, fmt.Errorf("arm %s: predict: %w", p.arm.Name, pred.err))
			_ = w.Abort(run, err.Error())
			return run, dir, err
		}
		if arm != nil {
			if pred.err == nil { // interrupted: the arm is kept without its prediction
				af.prediction = pred.prediction
				addComparisons(arm, p, af)
			}
			if af.loadBehind != "" {
				run.Warnings = append(run.Warnings, af.loadBehind)
			}
			run.Arms = append(run.Arms, *arm)
			facts = append(facts, af)
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
	run.Findings = findings(run, plans, facts)
	outcomes := make([]ArmOutcome, len(run.Arms))
	for i := range run.Arms {
		outcomes[i] = withEvidence(armOutcome(&run.Arms[i], facts[i]), &run.Arms[i], o.Speed)
	}
	failed := 0
	for _, e := range expects {
		for _, v := range Check(e, outcomes) {
			if !v.OK && !v.Inconclusive {
				failed++
			}
			run.Expectations = append(run.Expectations, results.Expectation{
				Expr: e.Expr, OK: v.OK, Arm: v.Arm, Got: v.Got, Want: want(e), Message: v.Reason, Inconclusive: v.Inconclusive,
			})
		}
	}
	run.Ended = time.Now().UTC()
	run.FailOn = o.FailOn
	if err := w.Finish(run); err != nil {
		return run, dir, err
	}
	switch run.Decide() {
	case results.VerdictFailed:
		return run, dir, &ExpectationsFailed{Failed: failed, Total: len(run.Expectations), Findings: len(run.FailingFindings())}
	case results.VerdictInconclusive:
		return run, dir, inconclusiveError(run)
	}
	return run, dir, nil
}

// Inconclusive is returned by Run when no expectation failed but cbprobe
// could not see enough to decide (exit code 3). Reasons and Fix come from the
// arms' observations.
type Inconclusive struct {
	// Reasons say what was not observed, per arm.
	Reasons []string
	// Fix says what to change.
	Fix []string
}

func (e *Inconclusive) Error() string {
	msg := "inconclusive: " + strings.Join(e.Reasons, "; ")
	if len(e.Fix) > 0 {
		msg += "; fix: " + strings.Join(e.Fix, "; ")
	}
	return msg
}

// ExitCode is 3: the evidence could not decide.
func (e *Inconclusive) ExitCode() int { return 3 }

func inconclusiveError(run *results.Run) *Inconclusive {
	e := &Inconclusive{}
	for _, a := range run.Arms {
		if a.Observation == nil {
			continue
		}
		for _, r := range a.Observation.Reasons {
			e.Reasons = append(e.Reasons, "arm "+a.Name+": "+r)
		}
		for _, f := range a.Observation.Fix {
			if !slices.Contains(e.Fix, f) {
				e.Fix = append(e.Fix, f)
			}
		}
	}
	if len(e.Reasons) == 0 {
		for _, x := range run.Expectations {
			if x.Inconclusive {
				e.Reasons = append(e.Reasons, x.Expr+": "+x.Message)
			}
		}
	}
	return e
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
	if o.Service != nil {
		m["service"], m["metrics"] = o.Service.Command, o.Metrics
	}
	if o.Target != "" {
		m["target"] = o.Target
		m["metrics"] = o.Metrics
		m["pgListen"] = o.PGListen
	}
	if o.ConfigPath != "" {
		m["config"] = o.ConfigPath
	}
	if o.Shard.Split() {
		m["shard"] = o.Shard.String()
	}
	if !o.StartAt.IsZero() {
		m["startAt"] = o.StartAt.UTC().Format(time.RFC3339Nano)
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
	return fmt.Sprintf("%s %g%s", e.Op, e.Number, unitSuffix(e.Metric))
}

// predictionResult is what an arm's prediction goroutine hands back.
type predictionResult struct {
	prediction sim.Prediction
	err        error
}

// armRun is what one arm produced while it ran.
type armRun struct {
	mu       sync.Mutex
	out      *runner.Outcome
	attempts pgsim.AttemptStats
	log      []pgsim.Attempt
	orders   map[int]string // request number -> the service's orderId (captured by the flow)
	facts    armFacts
	// unreached counts requests whose payment never reached the gateway
	unreached int
	feign     string // the breaker name the configuration resolves
}

// runArm starts the gateway (and the reference service unless o.Target is set)
// and hands the arm to the shared runner (load, polling, drain, reconciliation);
// then it reads the gateway's attempt log and analyses the arm.
func runArm(ctx context.Context, o Options, gp gatewayPlan, p armPlan, w *results.Writer) (*results.Arm, armFacts, error) {
	ar := &armRun{feign: p.settings.BreakerName, orders: map[int]string{}}
	var gw gateway
	var svc *service.Process
	var stops []func()
	defer func() { // after the gateway's attempt log was read
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	useFault := gp.kind == GatewayFault
	start := func(ctx context.Context) (runner.Target, error) {
		// startReference runs the embedded reference service, with its own
		// pgsim (pgURL "") or calling the gateway at pgURL.
		startReference := func(pgURL string) (runner.Target, error) {
			svc, err := demo.New(demo.Config{Spring: p.file, EmbeddedGateway: pgURL == "", PGBaseURL: pgURL,
				Gateway: pgsim.Config{Behavior: p.behaviors[0], Seed: o.Seed}, Seed: o.Seed, Speed: o.Speed}, o.Logger)
			if err != nil {
				return runner.Target{}, err
			}
			if err := svc.Start(ctx, "127.0.0.1:0"); err != nil {
				return runner.Target{}, &RunError{Op: "start the reference service", Err: err}
			}
			if pgURL == "" {
				gw = pgsimGateway{svc.Gateway()}
			}
			clock := svc.Clock()
			stops = append(stops, func() { closeWithin(svc.Close) })
			return runner.Target{URL: svc.URL(), Clock: collect.AdaptClock(clock.Now, clock.AfterFunc), Speed: o.Speed}, nil
		}
		if o.Target == "" && o.Service == nil && !useFault {
			return startReference("")
		}
		prefix := o.CallbackPrefix
		if prefix == "" {
			prefix = "http"
		}
		listen := o.PGListen
		if o.Service != nil || o.Target == "" {
			listen = "127.0.0.1:0"
		}
		if useFault {
			fg, err := startFaultGateway(ctx, gp, p.behaviors[0], o.Seed, prefix, listen, o.Logger)
			if err != nil {
				return runner.Target{}, err
			}
			gw = fg
			stops = append(stops, func() { closeWithin(fg.Close) })
		} else {
			pg, err := pgsim.New(pgsim.Config{Behavior: p.behaviors[0], Seed: o.Seed, CallbackPrefix: prefix}, o.Logger)
			if err != nil {
				return runner.Target{}, err
			}
			if err := pg.Start(ctx, listen); err != nil {
				return runner.Target{}, &RunError{Op: "start the gateway on " + listen, Err: err}
			}
			gw = pgsimGateway{pg}
			stops = append(stops, func() { closeWithin(pg.Close) })
		}
		var err error
		switch {
		case o.Service != nil:
			if svc, err = service.Start(ctx, o.Service.ForArm(p.arm.Name, w.Dir(), p.props, gw.URL()), o.Logger); err != nil {
				return runner.Target{}, err
			}
			return runner.Target{URL: svc.URL(), Speed: 1, Stop: func() { _, _ = svc.Stop(context.WithoutCancel(ctx)) }}, nil
		case o.Target == "": // the reference service, its payments through the fault gateway (speed 1)
			return startReference(gw.URL())
		}
		if err := attack.CheckTarget(ctx, o.Target, nil); err != nil {
			return runner.Target{}, err
		}
		return runner.Target{URL: o.Target, Speed: 1}, nil
	}
	cfg := runner.Config{
		Arm:   p.arm.Name,
		Start: start,
		Source: func(target string, clock collect.Clock) (collect.Source, error) {
			return metricsSource(o, target, clock)
		},
		Interval:   pollInterval(o),
		Thresholds: ConfigThresholds(p.file),
		Breaker:    o.Breaker,
		Prefer:     p.settings.BreakerName,
		Writer:     w,
		Logger:     o.Logger,
		OnResult: func(r attack.Result) {
			if id := r.Vars["orderId"]; id != "" {
				ar.mu.Lock()
				ar.orders[r.Seq] = id
				ar.mu.Unlock()
			}
		},
	}
	if o.Notify != nil {
		cfg.Notify = func(msg string) { o.Notify(p.arm.Name, msg) }
	}
	if o.Progress != nil {
		cfg.Progress = func(pr results.Progress) { o.Progress(p.arm.Name, pr) }
	}
	var phaseTimers []*time.Timer
	cfg.BeforeAttack = func() {
		gw.ResetStats()
		phaseTimers = schedulePhaseBehaviors(p, gw, o.Speed, o.Logger)
	}
	cfg.Attack = attack.Config{Flow: p.flow, Shard: o.Shard, StartAt: o.StartAt}
	if p.seq != nil {
		cfg.Attack.Users, cfg.Attack.Requests = p.seq.Users, p.seq.Requests
		cfg.Attack.Think = time.Duration(float64(p.think) / o.Speed)
	} else {
		cfg.Attack.Phases = scalePhases(p.phases, o.Speed)
	}
	out, err := runner.Run(ctx, cfg)
	for _, t := range phaseTimers {
		t.Stop()
	}
	if out == nil {
		return nil, armFacts{}, err
	}
	ar.out = out
	if gw != nil {
		ar.attempts, ar.log = gw.Attempts()
	}
	arm := ar.analyse(p, o)
	if svc != nil { // stopped by the runner; Stop returns its record
		rec, serr := svc.Stop(context.WithoutCancel(ctx))
		arm.Service = &rec
		err = errors.Join(err, serr)
	}
	if err != nil && ctx.Err() == nil {
		return arm, ar.facts, err
	}
	return arm, ar.facts, nil
}

func closeWithin(closeFn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = closeFn(ctx)
}

func metricsSource(o Options, target string, clock collect.Clock) (collect.Source, error) {
	opt := collect.HTTPOptions{Headers: o.Headers, Insecure: o.Insecure, Clock: clock, Logger: o.Logger}
	url := o.MetricsURL
	switch {
	case url != "":
	case o.Metrics == collect.KindActuator:
		url = target
	case o.Metrics == collect.KindPrometheus:
		url = strings.TrimRight(target, "/") + "/actuator/prometheus"
	case o.Metrics == collect.KindPromAPI:
		return nil, &SpecError{Source: "--prom-api", Msg: "prom-api needs the Prometheus server's URL"}
	}
	urls := []string{url}
	if len(o.MetricsURLs) > 1 {
		urls = o.MetricsURLs
	}
	opt.InstanceLabel = o.InstanceLabel
	src, err := collect.NewSource(o.Metrics, o.Selector, opt, urls...)
	if err != nil {
		return nil, &SpecError{Source: "--metrics", Msg: err.Error()}
	}
	return src, nil
}

// pollInterval is o.Interval, or 100 ms of service time (at least 20 ms real).
func pollInterval(o Options) time.Duration {
	if o.Interval > 0 {
		return o.Interval
	}
	return max(20*time.Millisecond, time.Duration(float64(100*time.Millisecond)/o.Speed))
}

// ConfigThresholds reads each breaker's rate thresholds from f, resolved for the
// breaker's runtime name as Spring does; it is how attack, experiment and watch
// give thresholds to sources that do not export them (Prometheus).
func ConfigThresholds(f *springconf.File) collect.Thresholds {
	return func(name string) (collect.Threshold, bool) {
		r, err := f.Resolve(name)
		if err != nil {
			return collect.Threshold{}, false
		}
		return collect.Threshold{FailureRate: float64(r.Config.FailureRateThreshold), SlowCallRate: float64(r.Config.SlowCallRateThreshold),
			Source: "config " + f.Name()}, true
	}
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
func schedulePhaseBehaviors(p armPlan, g gateway, speed float64, log *slog.Logger) []*time.Timer {
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
)

// attackOptions are the flags of `cbprobe attack`.
type attackOptions struct {
	target     string
	flow       string
	phases     string
	users      int
	requests   int
	think      time.Duration
	timeout    time.Duration
	out        string
	actuator   string
	prometheus string
	poll       time.Duration
	quiet      bool
	json       bool
}

func newAttackCommand(g *globalOptions) *cobra.Command {
	o := &attackOptions{}
	cmd := &cobra.Command{
		Use:   "attack --target URL (--phases LIST | --users N --requests M)",
		Short: "Drive a service at fixed rates and record every request",
		Long: `attack is cbprobe's load engine on its own. It sends the request flow (by default
the reference service's order + payment flow; --flow FILE for your own) to --target,
either in open-model phases (--phases '15/s:5s,0/s:15s,5/s:8s', 0/s is a real pause)
or as sequential users (--users N --requests M [--think D]).

Every request is written to a run directory as it finishes (--out, default
cbprobe-results/attack-<UTC time>/): run.json, requests.csv, samples.csv,
events.jsonl, summary.md, junit.xml and report.html. A request is "succeeded" on
a 2xx answer, "rejected" when the answer carries the CIRCUIT_OPEN code of an open
breaker, "failed" otherwise. With --actuator or --prometheus the breaker's state
and rates are polled during the run and drawn in report.html.

Ctrl-C stops the attack and keeps a partial run (exit 130). An unreachable target
exits 3 before anything is written.`,
		Example: `  cbprobe attack --target http://127.0.0.1:8080 --phases '15/s:5s,0/s:15s,5/s:8s'
  cbprobe attack --target http://127.0.0.1:8080 --users 1 --requests 40 --actuator http://127.0.0.1:8080
  cbprobe attack --target http://127.0.0.1:8080 --flow checkout.yaml --phases 50/s:30s --json > run.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAttack(cmd.Context(), g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "base URL of the service under test, e.g. http://127.0.0.1:8080 (required)")
	f.StringVar(&o.flow, "flow", "", "YAML file describing the request flow (default: POST /api/v1/orders then POST /api/v1/payments)")
	f.StringVar(&o.phases, "phases", "", "open-model traffic: RATE:DURATION list, e.g. '15/s:5s,0/s:15s,5/s:8s' (0/s pauses)")
	f.IntVar(&o.users, "users", 0, "sequential mode: number of users, each sending requests back to back")
	f.IntVar(&o.requests, "requests", 0, "sequential mode: requests per user")
	f.DurationVar(&o.think, "think", 0, "sequential mode: pause between two requests of a user")
	f.DurationVar(&o.timeout, "timeout", attack.DefaultTimeout, "timeout of each HTTP request")
	f.StringVar(&o.out, "out", "", "run directory to create (default cbprobe-results/attack-<UTC time>); never overwritten")
	f.StringVar(&o.actuator, "actuator", "", "poll the breaker through this Spring Boot actuator (service root or actuator base URL)")
	f.StringVar(&o.prometheus, "prometheus", "", "poll the breaker by scraping this Prometheus metrics URL")
	f.DurationVar(&o.poll, "poll-interval", collect.DefaultInterval, "how often --actuator/--prometheus is polled")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVar(&o.json, "json", false, "print run.json to stdout instead of the summary")
	cmd.MarkFlagsMutuallyExclusive("phases", "users")
	cmd.MarkFlagsMutuallyExclusive("actuator", "prometheus")
	return cmd
}

// attackPlan is the validated form of the flags.
type attackPlan struct {
	cfg    attack.Config
	phases []results.PhaseStats
	total  time.Duration // planned length, 0 for sequential traffic
}

func (o *attackOptions) plan(g *globalOptions) (*attackPlan, error) {
	if o.target == "" {
		return nil, usageErr(errors.New("--target is required (the base URL of the service, e.g. http://127.0.0.1:8080)"))
	}
	p := &attackPlan{cfg: attack.Config{Target: o.target, Timeout: o.timeout, Logger: g.logger}}
	if o.timeout <= 0 {
		return nil, usageErr(fmt.Errorf("--timeout: %s must be positive", o.timeout))
	}
	if o.poll <= 0 {
		return nil, usageErr(fmt.Errorf("--poll-interval: %s must be positive", o.poll))
	}
	switch {
	case o.phases != "":
		if o.requests != 0 || o.think != 0 {
			return nil, usageErr(errors.New("--requests and --think belong to sequential mode (--users); they do not combine with --phases"))
		}
		phases, err := attack.ParsePhases(o.phases)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--phases: %w", err))
		}
		p.cfg.Phases = phases
		for _, ph := range phases {
			p.phases = append(p.phases, results.PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration, Planned: ph.Planned()})
			p.total += ph.Duration
		}
	case o.users > 0:
		if o.requests <= 0 {
			return nil, usageErr(errors.New("--users needs --requests M (requests per user, at least 1)"))
		}
		if o.think < 0 {
			return nil, usageErr(fmt.Errorf("--think: %s is negative", o.think))
		}
		p.cfg.Users, p.cfg.Requests, p.cfg.Think = o.users, o.requests, o.think
		p.phases = []results.PhaseStats{{Name: "sequential", Planned: o.users * o.requests}}
	default:
		return nil, usageErr(errors.New("give --phases LIST (open model) or --users N --requests M (sequential)"))
	}
	if o.flow != "" {
		flow, err := attack.LoadFlow(o.flow)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--flow: %w", err))
		}
		p.cfg.Flow = flow
	} else {
		p.cfg.Flow = attack.DefaultFlow()
	}
	return p, nil
}

// tally is the live state of an attack: the arm's counts for the summary and
// the progress line. emit and the poller update it; the ticker reads it.
type tally struct {
	mu    sync.Mutex
	arm   results.Arm
	state string            // last polled breaker state
	reqs  []results.Request // every request so far, for FirstOpenRequest and latency
}

func (t *tally) add(r results.Request) {
	t.mu.Lock()
	t.arm.Add(r)
	t.reqs = append(t.reqs, r)
	t.mu.Unlock()
}

func (t *tally) progress(elapsed, total time.Duration, rate float64, backlog int) results.Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	tot := t.arm.Totals()
	return results.Progress{Elapsed: elapsed, Total: total, Rate: rate, Sent: tot.Sent, Succeeded: tot.Succeeded,
		Rejected: tot.Rejected, Failed: tot.Failed, State: t.state, Backlog: backlog}
}

func runAttack(ctx context.Context, g *globalOptions, o *attackOptions) error {
	p, err := o.plan(g)
	if err != nil {
		return err
	}
	poller, err := o.newPoller(g)
	if err != nil {
		return err
	}
	// An unreachable target is found before anything is written.
	if err := attack.CheckTarget(ctx, o.target, nil); err != nil {
		return err
	}
	started := time.Now().UTC()
	dir := o.out
	if dir == "" {
		dir = results.DefaultDir("attack", started)
	}
	w, err := results.Create(dir)
	if err != nil {
		return err
	}
	run := &results.Run{
		Schema: results.Schema, Experiment: "attack", Tool: "cbprobe " + version, Target: o.target, Started: started,
		Description: "load from cbprobe attack (flow " + p.cfg.Flow.Name + ")",
		Parameters:  o.parameters(p),
	}
	t := &tally{arm: results.Arm{Name: "attack", Phases: append([]results.PhaseStats(nil), p.phases...),
		Thresholds: results.Thresholds{FailureRate: results.Unknown, SlowCallRate: results.Unknown}}}
	if err := w.Checkpoint(snapshotRun(run, t)); err != nil {
		_ = w.Close()
		return err
	}

	runCtx, stopAux := context.WithCancel(ctx)
	var aux sync.WaitGroup
	if poller != nil {
		poller.since = started
		aux.Go(func() { poller.run(runCtx, w, t) })
	}
	if !o.quiet && isTerminal(g.stderr) {
		aux.Go(func() { showProgress(runCtx, g.stderr, t, w, p.total, g.colorEnabled(g.stderr)) })
	}
	aux.Go(func() { checkpointEvery(runCtx, 5*time.Second, w, run, t, g) })

	emit := func(r attack.Result) {
		req := results.Request{Arm: "attack", Seq: r.Seq, Phase: r.PhaseName, User: r.User, Intended: r.Intended, Sent: r.Sent,
			Latency: r.Latency, Status: r.Status, Outcome: results.Classify(r.Status, r.Body), Error: r.Error}
		w.Request(req)
		t.add(req)
	}
	summary, runErr := attack.Run(ctx, p.cfg, emit)
	stopAux()
	aux.Wait()

	final := snapshotRun(run, t)
	mergeSummary(final, summary)
	if m := w.MaxBacklog(); m > 0 {
		final.Parameters["maxWriterBacklog"] = m
	}
	if ctx.Err() != nil || runErr != nil {
		reason := "stopped by Ctrl-C or SIGTERM"
		code := exitInterrupted
		if ctx.Err() == nil {
			reason, code = runErr.Error(), exitCode(ctx, runErr)
		}
		if err := w.Abort(final, reason); err != nil {
			fmt.Fprintln(g.stderr, "cbprobe:", err)
		}
		if !o.quiet && !o.json {
			_ = results.WriteText(g.stdout, final, results.TextOptions{Color: g.colorEnabled(g.stdout)})
		}
		if o.json {
			_ = results.EncodeRun(g.stdout, final)
		}
		fmt.Fprintf(g.stderr, "cbprobe: attack stopped (%s); partial results in %s\n", reason, dir)
		return silentErr(code, fmt.Errorf("attack: %s", reason))
	}
	if err := w.Finish(final); err != nil {
		return err
	}
	switch {
	case o.json:
		if err := results.EncodeRun(g.stdout, final); err != nil {
			return infraErr(fmt.Errorf("write run.json to stdout: %w", err))
		}
		return nil
	case o.quiet:
		return nil
	}
	if err := results.WriteText(g.stdout, final, results.TextOptions{Color: g.colorEnabled(g.stdout)}); err != nil {
		return infraErr(fmt.Errorf("write summary to stdout: %w", err))
	}
	fmt.Fprintf(g.stdout, "results: %s\n", dir)
	return nil
}

// parameters records the flags in run.json.
func (o *attackOptions) parameters(p *attackPlan) map[string]any {
	m := map[string]any{"flow": p.cfg.Flow.Name, "timeout": o.timeout.String()}
	if o.phases != "" {
		m["phases"] = attack.FormatPhases(p.cfg.Phases)
	} else {
		m["users"], m["requests"], m["think"] = o.users, o.requests, o.think.String()
	}
	if o.actuator != "" {
		m["actuator"] = o.actuator
	}
	if o.prometheus != "" {
		m["prometheus"] = o.prometheus
	}
	return m
}

// snapshotRun copies run with the tally's arm in, for a checkpoint or the end.
func snapshotRun(run *results.Run, t *tally) *results.Run {
	c := *run
	c.Parameters = make(map[string]any, len(run.Parameters)+1)
	for k, v := range run.Parameters {
		c.Parameters[k] = v
	}
	t.mu.Lock()
	arm := t.arm
	arm.Phases = append([]results.PhaseStats(nil), t.arm.Phases...)
	arm.Transitions = append([]results.Transition(nil), t.arm.Transitions...)
	arm.MarkRequests(t.reqs)
	arm.Latency = results.LatencyOf(t.reqs, arm.Name)
	t.mu.Unlock()
	c.Arms = []results.Arm{arm}
	return &c
}

// mergeSummary copies the load engine's planned, dropped and late counts into
// the arm's phases and adds a warning when the engine fell behind.
func mergeSummary(run *results.Run, s attack.Summary) {
	if !s.Started.IsZero() {
		run.Started = s.Started.UTC()
	}
	if !s.Ended.IsZero() {
		run.Ended = s.Ended.UTC()
	}
	arm := &run.Arms[0]
	dropped, late := 0, 0
	for _, ps := range s.Phases {
		ph := arm.Phase(ps.Name)
		if ph == nil {
			arm.Phases = append(arm.Phases, results.PhaseStats{Name: ps.Name})
			ph = &arm.Phases[len(arm.Phases)-1]
		}
		ph.Rate, ph.Duration, ph.Planned, ph.Dropped, ph.Late = ps.Rate, ps.Duration, ps.Planned, ps.Dropped, ps.Late
		dropped += ps.Dropped
		late += ps.Late
	}
	if dropped > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%d planned requests were dropped: the load generator could not send them on time", dropped))
	}
	if late > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("%d requests left later than intended (see intended and sent in requests.csv)", late))
	}
}

// showProgress rewrites one status line on the terminal w until ctx ends.
func showProgress(ctx context.Context, w io.Writer, t *tally, rw *results.Writer, total time.Duration, color bool) {
	start := time.Now()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastSent, lastAt := 0, start
	rate := 0.0
	for {
		select {
		case <-ctx.Done():
			fmt.Fprint(w, "\r\x1b[K")
			return
		case now := <-tick.C:
			t.mu.Lock()
			sent := len(t.reqs)
			t.mu.Unlock()
			if d := now.Sub(lastAt); d >= time.Second {
				rate = float64(sent-lastSent) / d.Seconds()
				lastSent, lastAt = sent, now
			}
			line := results.ProgressLine(t.progress(now.Sub(start), total, rate, rw.Backlog()), results.TextOptions{Color: color})
			fmt.Fprint(w, "\r"+line+"\x1b[K")
		}
	}
}

// checkpointEvery rewrites run.json (complete=false) every d until ctx ends,
// so a run killed hard still says how far it got.
func checkpointEvery(ctx context.Context, d time.Duration, w *results.Writer, run *results.Run, t *tally, g *globalOptions) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := w.Checkpoint(snapshotRun(run, t)); err != nil {
				g.logger.Warn("checkpoint run.json", "err", err)
			}
		}
	}
}

// breakerPoller runs collect's sampler during an attack and records its
// samples, events and labelled transitions.
type breakerPoller struct {
	sampler *collect.Sampler
	source  string
	since   time.Time // transitions before this predate the attack
}

func (o *attackOptions) newPoller(g *globalOptions) (*breakerPoller, error) {
	opt := collect.HTTPOptions{Logger: g.logger}
	var src collect.Source
	switch {
	case o.actuator != "":
		if err := checkURL("--actuator", o.actuator); err != nil {
			return nil, err
		}
		src = collect.NewActuator(o.actuator, opt)
	case o.prometheus != "":
		if err := checkURL("--prometheus", o.prometheus); err != nil {
			return nil, err
		}
		src = collect.NewPrometheus(o.prometheus, opt)
	default:
		return nil, nil
	}
	s, err := collect.NewSampler(collect.SamplerConfig{Source: src, Interval: o.poll, Logger: g.logger})
	if err != nil {
		return nil, usageErr(err)
	}
	return &breakerPoller{sampler: s, source: src.Name()}, nil
}

func checkURL(flag, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr(fmt.Errorf("%s: %q is not an http(s) URL", flag, s))
	}
	return nil
}

func (p *breakerPoller) run(ctx context.Context, w *results.Writer, t *tally) {
	p.sampler.Run(ctx, func(u collect.Update) { p.record(u, w, t) })
}

// unknownIfNaN maps collect's NaN (not reported) to results.Unknown.
func unknownIfNaN(f float64) float64 {
	if math.IsNaN(f) {
		return results.Unknown
	}
	return f
}

// countOrUnknown is a window count as an int, -1 when not reported.
func countOrUnknown(f float64) int {
	if math.IsNaN(f) || f < 0 {
		return -1
	}
	return int(f)
}

func (p *breakerPoller) record(u collect.Update, w *results.Writer, t *tally) {
	now := time.Now().UTC()
	if u.Err != "" {
		w.Event(results.Event{Time: now, Arm: "attack", Kind: "poll-error", Message: u.Err})
	}
	if u.Gap != nil {
		w.Event(results.Event{Time: now, Arm: "attack", Kind: "note",
			Message: fmt.Sprintf("no breaker metrics for %d polls (%s)", u.Gap.Polls, strings.Join(u.Gap.Reasons, "; "))})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if snap := u.Snapshot; snap != nil {
		for _, e := range snap.Events {
			ev := results.Event{Time: e.CreationTime.UTC(), Arm: "attack", Kind: e.Kind, Breaker: e.Name, Type: e.Type, Message: e.ErrorMessage}
			if from, to, ok := strings.Cut(e.StateTransition, "_TO_"); ok {
				ev.From, ev.To = from, to
			}
			w.Event(ev)
		}
		for _, l := range snap.Lost {
			w.Event(results.Event{Time: l.Polled.UTC(), Arm: "attack", Kind: "lost-events", Breaker: l.Name,
				Message: fmt.Sprintf("the service's event buffer (%d) may have dropped events between %s and %s (at least %d)",
					l.BufferSize, l.After.UTC().Format(time.RFC3339Nano), l.Before.UTC().Format(time.RFC3339Nano), l.AtLeast)})
		}
		for _, b := range snap.Breakers {
			at := b.ObservedAt
			if at.IsZero() {
				at = b.Received
			}
			s := results.Sample{Arm: "attack", Time: at.UTC(), Source: p.source, Breaker: b.Key().String(), State: b.State,
				FailureRate: unknownIfNaN(b.FailureRate), SlowCallRate: unknownIfNaN(b.SlowCallRate),
				FailureRateThreshold: unknownIfNaN(b.FailureRateThreshold), SlowCallRateThreshold: unknownIfNaN(b.SlowCallRateThreshold),
				Buffered: unknownIfNaN(b.Buffered), Failed: unknownIfNaN(b.Failed), Slow: unknownIfNaN(b.Slow),
				SlowFailed: unknownIfNaN(b.SlowFailed), NotPermitted: unknownIfNaN(b.NotPermitted)}
			w.Sample(s)
			if t.arm.Breaker == "" {
				t.arm.Breaker = s.Breaker // the arm follows the first breaker seen
			}
			if s.Breaker != t.arm.Breaker {
				continue
			}
			t.state = s.State
			if s.FailureRateThreshold >= 0 {
				t.arm.Thresholds = results.Thresholds{FailureRate: s.FailureRateThreshold, SlowCallRate: s.SlowCallRateThreshold}
			}
		}
	}
	for _, tr := range u.Transitions {
		if tr.Breaker.String() != t.arm.Breaker || tr.Time.Before(p.since) {
			continue // another breaker, or history from before the attack
		}
		t.arm.Transitions = append(t.arm.Transitions, convertTransition(tr))
	}
}

// convertTransition copies collect's labelled transition into the run record.
func convertTransition(tr collect.Transition) results.Transition {
	out := results.Transition{At: tr.Time.UTC(), Breaker: tr.Breaker.String(), From: tr.From, To: tr.To, Cause: tr.Cause,
		Evidence: results.UnknownEvidence()}
	var unc []string
	if tr.TimeSource == collect.TimeFromPoll {
		unc = append(unc, fmt.Sprintf("seen by polling: between %s and %s",
			tr.Earliest.UTC().Format("15:04:05.000"), tr.Latest.UTC().Format("15:04:05.000")))
	}
	if tr.Inferred {
		unc = append(unc, "inferred from the state rules (no poll or event showed it)")
	}
	if tr.Cause == collect.CauseUnknown && tr.Reason != "" {
		unc = append(unc, tr.Reason)
	}
	if tr.Note != "" {
		unc = append(unc, tr.Note)
	}
	if ev := tr.Evidence; ev != nil {
		var src []string
		if len(ev.ExceededEvents) > 0 {
			src = append(src, "events")
		}
		if !ev.SampleTime.IsZero() {
			src = append(src, "sample")
		}
		if len(src) > 0 {
			out.Evidence.Source = strings.Join(src, "+")
		}
		out.Evidence.FailureRate, out.Evidence.SlowCallRate = unknownIfNaN(ev.FailureRate), unknownIfNaN(ev.SlowCallRate)
		out.Evidence.FailureRateThreshold = unknownIfNaN(ev.FailureRateThreshold)
		out.Evidence.SlowCallRateThreshold = unknownIfNaN(ev.SlowCallRateThreshold)
		out.Evidence.Buffered, out.Evidence.Failed, out.Evidence.Slow = countOrUnknown(ev.Buffered), countOrUnknown(ev.Failed), countOrUnknown(ev.Slow)
		out.Evidence.Events = ev.ExceededEvents
		notes := append([]string{}, ev.Notes...)
		if len(ev.Missing) > 0 {
			notes = append(notes, "missing: "+strings.Join(ev.Missing, ", "))
		}
		if tr.Reason != "" && tr.Cause != collect.CauseUnknown {
			notes = append([]string{tr.Reason}, notes...)
		}
		out.Evidence.Note = strings.Join(notes, "; ")
	}
	out.Uncertainty = strings.Join(unc, "; ")
	return out
}

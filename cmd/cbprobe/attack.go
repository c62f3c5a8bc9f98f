package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/experiments"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/runner"
	"github.com/cbprobe/cbprobe/service"
	"github.com/cbprobe/cbprobe/springconf"
	"github.com/spf13/cobra"
)

// attackOptions are the flags of `cbprobe attack`.
type attackOptions struct {
	target   string
	flow     string
	phases   string
	users    int
	requests int
	think    time.Duration
	timeout  time.Duration
	out      string
	metrics  metricsFlags
	breaker  string
	poll     time.Duration // deprecated --poll-interval
	quiet    bool
	json     bool
	failOn   string
	service  serviceFlags
	svc      *service.Config // from service's flags; nil without --service
	sharding shardFlags
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
and rates are polled during the run (--prom-api reads a Prometheus server), drawn
in report.html, and reconciled with the service's answers before any verdict: a
breaker cbprobe could not observe while the service refused requests makes the
run inconclusive (exit 3, the gap and its fix named). --config application.yml
gives the thresholds a Prometheus source does not export.

Ctrl-C stops the attack and keeps a partial run (exit 130; a second Ctrl-C exits
at once). An unreachable target exits 3 before anything is written; an existing
--out is a usage error (exit 2). --fail-on, GitHub annotations and the job summary
work as for experiment: findings of the --fail-on severity fail the run (exit 1).`,
		Example: `  cbprobe attack --target http://127.0.0.1:8080 --phases '15/s:5s,0/s:15s,5/s:8s'
  cbprobe attack --target http://127.0.0.1:8080 --users 1 --requests 40 --actuator http://127.0.0.1:8080
  cbprobe attack --target http://127.0.0.1:8080 --flow checkout.yaml --phases 50/s:30s --json > run.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.svc, err = o.service.config(cmd, g, nil); err != nil {
				return err
			}
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
	o.metrics.register(cmd, "the service's application.yml: breaker thresholds for Prometheus sources and the breaker to follow")
	f.StringVar(&o.breaker, "breaker", "", "breaker to follow, name or name@instance (default: the configuration's Feign name, or the only breaker exposed)")
	f.DurationVar(&o.poll, "poll-interval", 0, "how often the metrics source is polled")
	_ = f.MarkDeprecated("poll-interval", "use --interval")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVar(&o.json, "json", false, "print run.json to stdout instead of the summary")
	f.StringVar(&o.failOn, "fail-on", "none", failOnUsage)
	cmd.MarkFlagsMutuallyExclusive("phases", "users")
	cmd.MarkFlagsMutuallyExclusive("actuator", "prometheus", "prom-api")
	o.service.add(cmd)
	o.sharding.add(cmd)
	return cmd
}

// attackPlan is the validated form of the flags.
type attackPlan struct {
	cfg    attack.Config
	phases []results.PhaseStats
	total  time.Duration  // planned length, 0 for sequential traffic
	shard  *results.Shard // nil unless --shard splits the plan
}

func (o *attackOptions) plan(g *globalOptions) (*attackPlan, error) {
	if o.target == "" && o.service.command == "" {
		return nil, usageErr(errors.New("--target (or --service) is required (the base URL of the service, e.g. http://127.0.0.1:8080)"))
	}
	p := &attackPlan{cfg: attack.Config{Target: o.target, Timeout: o.timeout, Logger: g.logger}}
	sh, startAt, err := o.sharding.resolve(time.Now())
	if err != nil {
		return nil, err
	}
	if sh.Split() && o.service.command != "" {
		return nil, usageErr(errors.New("--shard splits the load on one service over several processes: give its --target, not --service"))
	}
	p.cfg.Shard, p.cfg.StartAt = sh, startAt
	if o.timeout <= 0 {
		return nil, usageErr(fmt.Errorf("--timeout: %s must be positive", o.timeout))
	}
	if o.poll < 0 {
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
			p.phases = append(p.phases, results.PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration, Planned: sh.Planned(ph)})
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
		p.phases = []results.PhaseStats{{Name: "sequential", Planned: sh.Users(o.users) * o.requests}}
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
	p.shard = shardRecord(sh, startAt, o.planItems(p))
	return p, nil
}

// planItems are what makes the attack's plan, for --shard's plan identity:
// shards whose items differ are not one plan and merge refuses them.
func (o *attackOptions) planItems(p *attackPlan) map[string]string {
	m := map[string]string{"experiment": "attack", "target": o.target, "timeout": o.timeout.String()}
	if o.phases != "" {
		m["phases"] = attack.FormatPhases(p.cfg.Phases)
	} else {
		m["sequential"] = fmt.Sprintf("%d users x %d requests, think %s", o.users, o.requests, o.think)
	}
	if o.flow != "" {
		m["flow"] = fileDigest(o.flow)
	}
	return m
}

func runAttack(ctx context.Context, g *globalOptions, o *attackOptions) error {
	if err := results.CheckFailOn(o.failOn); err != nil {
		return usageErr(fmt.Errorf("--fail-on: %w", err))
	}
	p, err := o.plan(g)
	if err != nil {
		return err
	}
	src, err := o.source(g)
	if err != nil {
		return err
	}
	th, prefer, err := o.thresholds()
	if err != nil {
		return err
	}
	// An unreachable target is found before anything is written.
	if o.svc == nil { // --service starts the target below
		if err := attack.CheckTarget(ctx, o.target, nil); err != nil {
			return err
		}
	}
	started := time.Now().UTC()
	var w *results.Writer
	if o.out == "" {
		w, err = results.CreateDefault("attack", started)
	} else {
		w, err = results.Create(o.out)
	}
	if err != nil {
		return err
	}
	dir := w.Dir()
	run := &results.Run{
		Schema: results.Schema, Experiment: "attack", Tool: currentBuildInfo().String(), Target: o.target, Started: started,
		Description: "load from cbprobe attack (flow " + p.cfg.Flow.Name + ")",
		Parameters:  o.parameters(p),
		Shard:       p.shard,
	}
	arm := results.Arm{Name: "attack", Phases: append([]results.PhaseStats(nil), p.phases...),
		Thresholds: results.Thresholds{FailureRate: results.Unknown, SlowCallRate: results.Unknown}}
	if th != nil {
		if t, ok := th(prefer); ok {
			arm.Thresholds = results.Thresholds{FailureRate: t.FailureRate, SlowCallRate: t.SlowCallRate}
		}
	}
	run.Arms = []results.Arm{arm}
	if err := w.Checkpoint(run); err != nil {
		_ = w.Close()
		return err
	}
	defer onHardStop(ctx, func() { _ = w.Interrupt("stopped by a second Ctrl-C") })()

	progress := &progressLine{w: g.stderr, color: g.colorEnabled(g.stderr)}
	cfg := runner.Config{Arm: "attack", Attack: p.cfg, Interval: o.metrics.pollInterval(cmp.Or(o.poll, collect.DefaultInterval)), Breaker: o.breaker, Prefer: prefer,
		Writer: w, Logger: g.logger,
		Notify: func(msg string) {
			progress.clear()
			fmt.Fprintf(g.stderr, "cbprobe: %s\n", msg)
		}}
	cfg.Thresholds = th
	if src != nil {
		cfg.Source = func(string, collect.Clock) (collect.Source, error) { return src, nil }
	}
	if !o.quiet && isTerminal(g.stderr) {
		cfg.Progress = func(pr results.Progress) { progress.show("attack", pr) }
	}
	var svc *attackService
	if o.svc != nil { // --service: start pgsim and the service; poll its actuator unless told otherwise
		svc = &attackService{cfg: o.svc, g: g, dir: dir}
		cfg.Start, run.Parameters["service"] = svc.start, o.svc.Command
		if cfg.Source == nil {
			cfg.Source = actuatorSource(g)
		}
	}
	out, runErr := runner.Run(ctx, cfg)
	progress.clear()
	final := *run
	final.Arms = []results.Arm{arm}
	if out != nil {
		a := &final.Arms[0]
		out.Fill(a)
		if a.Thresholds.FailureRate < 0 {
			a.Thresholds = observedThresholds(w, out, a.Breaker)
		}
		if !out.Summary.Started.IsZero() {
			final.Started = out.Summary.Started.UTC()
		}
		if !out.Summary.Ended.IsZero() {
			final.Ended = out.Summary.Ended.UTC()
		}
		final.Warnings = append(final.Warnings, out.Warnings("attack")...)
		final.Findings = append(final.Findings, runner.Findings(out, "attack")...)
	}
	if svc != nil {
		runErr = errors.Join(runErr, svc.finish(ctx, &final.Arms[0]))
	}
	if m := w.MaxBacklog(); m > 0 {
		final.Parameters["maxWriterBacklog"] = m
	}
	if ctx.Err() != nil || runErr != nil {
		reason := "stopped by Ctrl-C or SIGTERM"
		code := exitInterrupted
		if ctx.Err() == nil {
			reason, code = runErr.Error(), exitCode(ctx, runErr)
		}
		if err := w.Abort(&final, reason); err != nil {
			fmt.Fprintln(g.stderr, "cbprobe:", err)
		}
		if !o.quiet && !o.json {
			_ = results.WriteText(g.stdout, &final, results.TextOptions{Color: g.colorEnabled(g.stdout)})
		}
		if o.json {
			_ = results.EncodeRun(g.stdout, &final)
		}
		reportToCI(g, ciWriter(g, o.json), &final, dir)
		fmt.Fprintf(g.stderr, "cbprobe: attack stopped (%s); partial results in %s\n", reason, dir)
		return silentErr(code, fmt.Errorf("attack: %s", reason))
	}
	final.FailOn = strings.TrimPrefix(o.failOn, "none")
	if err := w.Finish(&final); err != nil {
		return err
	}
	switch {
	case o.json:
		if err := results.EncodeRun(g.stdout, &final); err != nil {
			return infraErr(fmt.Errorf("write run.json to stdout: %w", err))
		}
	case o.quiet:
	default:
		if err := results.WriteText(g.stdout, &final, results.TextOptions{Color: g.colorEnabled(g.stdout)}); err != nil {
			return infraErr(fmt.Errorf("write summary to stdout: %w", err))
		}
		fmt.Fprintf(g.stdout, "results: %s\n", dir)
	}
	reportToCI(g, ciWriter(g, o.json), &final, dir)
	return verdictErr(&final, dir, g)
}

// observedThresholds are the thresholds the followed breaker reported (the
// actuator exports them), Unknown when none did.
func observedThresholds(_ *results.Writer, out *runner.Outcome, breaker string) results.Thresholds {
	for _, s := range out.Recording.Samples {
		if runner.BreakerKey(s.Name, s.Instance) == breaker && s.FailureRateThreshold >= 0 {
			return results.Thresholds{FailureRate: s.FailureRateThreshold, SlowCallRate: s.SlowCallRateThreshold}
		}
	}
	return results.Thresholds{FailureRate: results.Unknown, SlowCallRate: results.Unknown}
}

// verdictErr turns a run failed by its findings (--fail-on) into exit 1 and an
// inconclusive run into exit 3 with what to fix, printed
// on stderr (the summary above already showed it).
func verdictErr(run *results.Run, dir string, g *globalOptions) error {
	if run.Decide() == results.VerdictFailed {
		return silentErr(exitExpectation, fmt.Errorf("failed: %d findings at --fail-on %s (run in %s)", len(run.FailingFindings()), run.FailOn, dir))
	}
	if run.Decide() != results.VerdictInconclusive {
		return nil
	}
	for _, a := range run.Arms {
		if a.Observation == nil {
			continue
		}
		for _, r := range a.Observation.Reasons {
			fmt.Fprintf(g.stderr, "cbprobe: inconclusive: arm %s: %s\n", a.Name, r)
		}
		for _, f := range a.Observation.Fix {
			fmt.Fprintf(g.stderr, "cbprobe: fix: %s\n", f)
		}
	}
	return silentErr(exitInfrastructure, fmt.Errorf("inconclusive: cbprobe could not observe the breaker well enough (run in %s)", dir))
}

// source is the metrics source the flags name, nil for none.
func (o *attackOptions) source(g *globalOptions) (collect.Source, error) {
	if err := o.metrics.check(); err != nil {
		return nil, err
	}
	if o.metrics.kind == "" && o.breaker != "" {
		return nil, usageErr(errors.New("--breaker needs a metrics source (--actuator, --prometheus or --prom-api)"))
	}
	return o.metrics.source(collect.HTTPOptions{Logger: g.logger})
}

// thresholds reads --config: every breaker's thresholds and the Feign name to prefer.
func (o *attackOptions) thresholds() (collect.Thresholds, string, error) {
	if o.metrics.config == "" {
		return nil, "", nil
	}
	f, err := springconf.Load(o.metrics.config)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("--config: %w", err))
	}
	s, err := demo.ResolveSettings(f)
	if err != nil {
		return nil, "", usageErr(fmt.Errorf("--config: %w", err))
	}
	return experiments.ConfigThresholds(f), s.BreakerName, nil
}

// parameters records the flags in run.json.
func (o *attackOptions) parameters(p *attackPlan) map[string]any {
	m := map[string]any{"flow": p.cfg.Flow.Name, "timeout": o.timeout.String()}
	if o.phases != "" {
		m["phases"] = attack.FormatPhases(p.cfg.Phases)
	} else {
		m["users"], m["requests"], m["think"] = o.users, o.requests, o.think.String()
	}
	switch o.metrics.kind {
	case collect.KindActuator:
		m["actuator"] = o.metrics.url
	case collect.KindPrometheus:
		m["prometheus"] = o.metrics.url
	case collect.KindPromAPI:
		m["promApi"] = o.metrics.url
	}
	if o.breaker != "" {
		m["breaker"] = o.breaker
	}
	if o.metrics.config != "" {
		m["config"] = o.metrics.config
	}
	if p.cfg.Shard.Split() {
		m["shard"] = p.cfg.Shard.String()
	}
	if !p.cfg.StartAt.IsZero() {
		m["startAt"] = p.cfg.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return m
}

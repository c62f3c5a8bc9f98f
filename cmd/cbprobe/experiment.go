package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/experiments"
	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// experimentOptions are the flags every experiment takes.
type experimentOptions struct {
	target      string
	pgListen    string
	gateway     string
	callbackPfx string
	arm         string
	breaker     string
	metrics     metricsFlags
	seed        int64
	speed       float64
	out         string
	expect      []string
	failOn      string
	predictRuns int
	flow        string
	quiet       bool
	json        bool
	service     serviceFlags
	sharding    shardFlags
}

func newExperimentCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment NAME | run FILE.yaml | show NAME",
		Short: "Run a circuit-breaker experiment and check it against expectations",
		Long: `experiment runs the field report's experiments (slow-call, window-type, retry) or your
own spec file. Each arm runs against a fresh embedded gateway (pgsim) and reference service
(cbprobe demo) on free loopback ports, unless --target points at your service; then the
gateway listens on --pg-listen for your service to call, --arm picks the arm your service is
configured for and --actuator, --prometheus or --prom-api URL say where to read its
breaker (--metrics prometheus reads the target's own /actuator/prometheus).

For every arm it prints the requests sent, succeeded, rejected by the open breaker and
failed per phase, the request at which the breaker first opened and first rejected, gateway
attempts per request, every transition with its cause (failure-rate, slow-call-rate, both,
half-open-trial) and the simulation's prediction beside each measurement. The run directory
(--out) holds run.json, requests.csv, samples.csv, events.jsonl, summary.md, junit.xml and
report.html.

Expectations (--expect, repeatable; grammar in docs/guides/experiments.md):
  cause=slow-call-rate   first-rejected-request<=14   phase[3].success>=0.9   opens>=1
  arm[retry-3].first-open-request<=16   latency-p95<1000 (ms)   phase[3].latency-p99<1.5s
  time-to-close<=30s   time-in-open<20 (s)   half-open-trials-passed>=1
Where the run holds no evidence for one (no request in the phase, transitions not observed,
the breaker never opened, the run ended before a trial) the verdict is inconclusive.
--fail-on warning|error makes findings of that severity or worse fail the run like a failed
expectation (verdict failed, exit 1); a finding on an arm whose evidence was inconclusive
leaves it inconclusive. In GitHub Actions (GITHUB_ACTIONS=true) every failed or
inconclusive expectation and every finding is also printed as an ::error/::warning/::notice
annotation, and with GITHUB_STEP_SUMMARY set summary.md is appended to the job summary.

Exit codes: 0 all expectations held, 1 one failed (or a --fail-on finding), 2 bad flags/spec/expectation,
3 target/gateway/metrics unreachable, 130 interrupted (partial run kept).`,
		Example: `  cbprobe experiment retry
  cbprobe experiment window-type --speed 10 --out /tmp/wt
  cbprobe experiment slow-call --expect 'arm[timelimiter-1000ms].cause=slow-call-rate'
  cbprobe experiment show retry > my-experiment.yaml
  cbprobe experiment run my-experiment.yaml
  cbprobe experiment retry --target http://localhost:8080 --arm retry-3 --pg-listen 127.0.0.1:8082`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr(fmt.Errorf("unknown experiment %q (known: %s; or run FILE / show NAME)", args[0], strings.Join(experiments.Names(), ", ")))
			}
			return usageErr(fmt.Errorf("name an experiment (%s), or use run FILE / show NAME", strings.Join(experiments.Names(), ", ")))
		},
	}
	for _, name := range experiments.Names() {
		cmd.AddCommand(newNamedExperimentCommand(g, name))
	}
	cmd.AddCommand(newExperimentRunCommand(g), newExperimentShowCommand(g))
	return cmd
}

func newNamedExperimentCommand(g *globalOptions, name string) *cobra.Command {
	o := &experimentOptions{}
	spec, err := experiments.Named(name)
	short := "Run the " + name + " experiment"
	if err == nil {
		short = spec.Title
	}
	cmd := &cobra.Command{
		Use:     name,
		Short:   short,
		Example: fmt.Sprintf("  cbprobe experiment %s\n  cbprobe experiment %s --speed 20 --seed 7 --out /tmp/%s\n  cbprobe experiment show %s", name, name, name, name),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := experiments.Named(name)
			if err != nil {
				return usageErr(err)
			}
			return runExperiment(cmd, g, o, spec)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newExperimentRunCommand(g *globalOptions) *cobra.Command {
	o := &experimentOptions{}
	cmd := &cobra.Command{
		Use:   "run FILE.yaml",
		Short: "Run a user-defined experiment spec",
		Long: `run reads an experiment spec: traffic (phases or sequential users), gateway behaviour
(per phase too), configuration (an application.yml), service settings, arms with their
property overrides, and expectations. Start from a named one: cbprobe experiment show retry.`,
		Example: "  cbprobe experiment show window-type > mine.yaml\n  cbprobe experiment run mine.yaml --speed 10",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := experiments.LoadSpec(args[0])
			if err != nil {
				return usageErr(err)
			}
			return runExperiment(cmd, g, o, spec)
		},
	}
	o.addFlags(cmd)
	return cmd
}

func newExperimentShowCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "show NAME",
		Short:   "Print a named experiment's spec, to start your own from",
		Example: "  cbprobe experiment show retry > my-experiment.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			data, err := experiments.NamedSource(args[0])
			if err != nil {
				return usageErr(err)
			}
			_, err = g.stdout.Write(data)
			return err
		},
	}
}

func (o *experimentOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "base URL of your service (default: the embedded reference service)")
	f.StringVar(&o.pgListen, "pg-listen", "127.0.0.1:8082", "where the gateway listens for an external --target")
	f.StringVar(&o.gateway, "gateway", "", "what applies the payments' outcomes: pgsim, or fault (cbprobe fault injecting them in front of a pgsim that accepts every payment; real time only) (default: the spec's gateway.kind, else pgsim)")
	f.StringVar(&o.callbackPfx, "callback-prefix", "", "with --target: prefix the gateway requires of callbackUrl (default: any http(s) URL)")
	f.StringVar(&o.arm, "arm", "", "run only this arm (required with --target when the experiment has several)")
	f.StringVar(&o.breaker, "breaker", "", "breaker name to read on --target (default: the Feign name, or the only breaker exposed)")
	o.metrics.register(cmd, "application.yml (or .properties) to use instead of the spec's configuration")
	o.metrics.registerKind(cmd)
	f.Int64Var(&o.seed, "seed", 1, "seed of the gateway's outcomes and of the predictions")
	f.Float64Var(&o.speed, "speed", 1, "run the embedded setup this many times faster (tests use 10-20)")
	f.StringVar(&o.out, "out", "", "run directory (default cbprobe-results/<experiment>-<UTC time>/)")
	f.StringArrayVar(&o.expect, "expect", nil, "expectation, e.g. 'cause=slow-call-rate' or 'arm[retry-3].first-rejected-request<=14' (repeatable)")
	f.StringVar(&o.failOn, "fail-on", "none", failOnUsage)
	f.IntVar(&o.predictRuns, "predict-runs", 1000, "simulated runs behind each prediction")
	f.StringVar(&o.flow, "flow", "", "request-flow YAML file to send instead of the spec's (default: the reference order + payment flow)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVar(&o.json, "json", false, "print run.json to stdout instead of the summary")
	o.service.add(cmd)
	o.sharding.add(cmd)
}

func runExperiment(cmd *cobra.Command, g *globalOptions, o *experimentOptions, spec *experiments.Spec) error {
	if !(o.speed > 0) {
		return usageErr(fmt.Errorf("--speed: %g must be > 0", o.speed))
	}
	if err := results.CheckFailOn(o.failOn); err != nil {
		return usageErr(fmt.Errorf("--fail-on: %w", err))
	}
	if o.predictRuns < 1 {
		return usageErr(fmt.Errorf("--predict-runs: %d must be at least 1", o.predictRuns))
	}
	if o.flow != "" {
		abs, err := filepath.Abs(o.flow)
		if err != nil {
			return usageErr(fmt.Errorf("--flow: %w", err))
		}
		spec.Traffic.Flow = abs // the plan loads and checks it, naming the file
	}
	if err := o.metrics.check(); err != nil {
		return err
	}
	headers, _ := o.metrics.header() // checked above
	sh, startAt, err := o.sharding.resolve(time.Now())
	if err != nil {
		return err
	}
	if sh.Split() && o.target == "" {
		return usageErr(errors.New("--shard splits the load on one service over several processes: give its --target (each shard's embedded service would be a separate breaker)"))
	}
	opts := experiments.Options{
		Spec: spec, Target: o.target, PGListen: o.pgListen, Gateway: o.gateway, CallbackPrefix: o.callbackPfx, Arm: o.arm, Breaker: o.breaker,
		Metrics: cmp.Or(o.metrics.kind, collect.KindActuator), MetricsURL: o.metrics.url, MetricsURLs: o.metrics.fleet, Selector: o.metrics.selector,
		InstanceLabel: o.metrics.instanceLabel, Headers: headers,
		Insecure: o.metrics.insecure, Interval: o.metrics.interval,
		Seed: o.seed, Speed: o.speed, Out: o.out, Expect: o.expect, FailOn: strings.TrimPrefix(o.failOn, "none"), ConfigPath: o.metrics.config,
		PredictRuns: o.predictRuns, Logger: g.logger, Version: currentBuildInfo().String(),
		Shard: sh, StartAt: startAt,
	}
	if sh.Split() {
		items, err := o.planItems(spec)
		if err != nil {
			return err
		}
		opts.ShardRecord = shardRecord(sh, startAt, items)
	}
	progress := &progressLine{w: g.stderr, color: g.colorEnabled(g.stderr)}
	svc, err := o.service.config(cmd, g, progress)
	if err != nil {
		return err
	}
	opts.Service = svc
	opts.Notify = func(arm, msg string) {
		progress.clear()
		fmt.Fprintf(g.stderr, "cbprobe: arm %s: %s\n", arm, msg)
	}
	var unmark func()
	opts.Created = func(w *results.Writer) {
		unmark = onHardStop(cmd.Context(), func() { _ = w.Interrupt("stopped by a second Ctrl-C") })
	}
	defer func() {
		if unmark != nil {
			unmark()
		}
	}()
	if !o.quiet && isTerminal(g.stderr) {
		opts.Progress = progress.show
	} else if !o.quiet && !o.json {
		announced := map[string]bool{}
		opts.Progress = func(arm string, _ results.Progress) {
			if !announced[arm] {
				announced[arm] = true
				fmt.Fprintf(g.stderr, "cbprobe: %s: running arm %s…\n", spec.Name, arm)
			}
		}
	}
	run, dir, err := experiments.Run(cmd.Context(), opts)
	progress.clear()
	var failed *experiments.ExpectationsFailed
	var inconclusive *experiments.Inconclusive
	if run != nil && (err == nil || errors.As(err, &failed) || errors.As(err, &inconclusive) || cmd.Context().Err() != nil) {
		if werr := printRun(g, o, run, dir); werr != nil && err == nil {
			err = werr
		}
	}
	if run != nil && dir != "" {
		reportToCI(g, ciWriter(g, o.json), run, dir)
	}
	switch {
	case errors.As(err, &failed):
		return silentErr(exitExpectation, err)
	case errors.As(err, &inconclusive):
		for _, r := range inconclusive.Reasons {
			fmt.Fprintf(g.stderr, "cbprobe: inconclusive: %s\n", r)
		}
		for _, f := range inconclusive.Fix {
			fmt.Fprintf(g.stderr, "cbprobe: fix: %s\n", f)
		}
		return silentErr(exitInfrastructure, err)
	case err != nil && cmd.Context().Err() != nil:
		fmt.Fprintf(g.stderr, "cbprobe: interrupted; partial run kept in %s\n", dir)
		return silentErr(exitInterrupted, err)
	}
	return err
}

func printRun(g *globalOptions, o *experimentOptions, run *results.Run, dir string) error {
	switch {
	case o.json:
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	case o.quiet:
		return nil
	}
	if err := results.WriteText(g.stdout, run, results.TextOptions{Color: g.colorEnabled(g.stdout)}); err != nil {
		return err
	}
	for _, a := range run.Arms {
		for _, n := range a.Notes {
			if strings.HasPrefix(n, experiments.ExternalConfigNote) {
				fmt.Fprintf(g.stderr, "cbprobe: arm %s: %s\n", a.Name, n)
			}
		}
	}
	fmt.Fprintf(g.stdout, "\nRun directory: %s (open report.html)\n", dir)
	return nil
}

// progressLine rewrites one status line on a terminal.
type progressLine struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	shown bool
}

func (p *progressLine) show(arm string, pr results.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s%s: %s", eraseLine, arm, results.ProgressLine(pr, results.TextOptions{Color: p.color}))
	p.shown = true
}

func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, eraseLine)
		p.shown = false
	}
}

// planItems are what makes an experiment's plan, for --shard's plan
// identity: the spec (its YAML, hashed), the arm, seed, target, flow and
// configuration.
func (o *experimentOptions) planItems(spec *experiments.Spec) (map[string]string, error) {
	data, err := yaml.Marshal(spec)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--shard: encode the spec for its plan identity: %w", err))
	}
	m := map[string]string{"experiment": spec.Name, "spec": digest(data), "seed": strconv.FormatInt(o.seed, 10),
		"arm": o.arm, "target": o.target}
	if o.flow != "" {
		m["flow"] = fileDigest(o.flow)
	}
	if o.metrics.config != "" {
		m["config"] = fileDigest(o.metrics.config)
	}
	return m, nil
}

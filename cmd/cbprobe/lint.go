package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/sim"
	"github.com/cbprobe/cbprobe/springconf"
	"github.com/spf13/cobra"
)

type lintOptions struct {
	actuator    string
	headers     []string
	insecure    bool
	timeout     time.Duration
	rate        float64
	errorRate   float64
	latency     string
	name        string
	json        bool
	format      string
	profiles    []string
	retry       string
	timelimiter string
	assume      []string
}

func newLintCommand(g *globalOptions) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint application.yml",
		Short: "Find circuit breaker configuration traps in a Spring application.yml",
		Long: `lint reads a Spring Boot application.yml (or .properties) and reports the Resilience4j
traps it contains: instance keys that never match a runtime breaker name, a slow-call
threshold at or above the time limiter's timeout, timeouts recorded as successes, minimum
calls unreachable at the given rate, back-off settings Spring never applies, a half-open
trial that cannot pass for the given gateway, misspelled keys, health or endpoints not
exposed, and more. Each finding has an id, a severity, the key path, the line, an
explanation and the fix.

Without --name lint checks every circuit breaker instance the file defines, the breakers
that use configs.default, and the Feign breakers when the file enables Spring Cloud
CircuitBreaker for OpenFeign; it never fails a file for a breaker the file does not
mention. A Retry or TimeLimiter counts as wrapping a breaker only when the file ties one
to it (an entry of the same name; configs.default for the breakers without an instance;
Spring Cloud's TimeLimiter around every Feign call) or you say so with --retry,
--timelimiter or --assume; otherwise a finding that depends on one is an info line that
states the assumption.

--profile selects the profile documents (spring.config.activate.on-profile) as
spring.profiles.active does; without it lint follows the file's spring.profiles.active.
--actuator reads the thresholds the running service really uses and compares them with
the file. --error-rate and --latency describe the gateway (the failing share of calls and
the latency of the others, e.g. 100ms-500ms, normal:mean=200ms,sd=50ms); failing calls
are taken as answering at once. See docs/lint.md.

--format json writes an array of findings (id, severity, file, line, key, message, fix,
breakers); --format sarif a SARIF 2.1.0 log with one rule per finding id and the file and
line of each finding, for GitHub code scanning (--json is a deprecated alias of --format json).

Exit 1 when a finding has severity error, 0 otherwise, 2 when the file cannot be read.`,
		Example: `  cbprobe lint application.yml
  cbprobe lint application.yml --profile prod --rate 15 --error-rate 0.4 --latency 100ms-500ms
  cbprobe lint application.yml --name 'PgPaymentClient#requestPayment(String,PaymentRequest)' --assume retry
  cbprobe lint application.yml --actuator http://127.0.0.1:8080 --name pgPayment --format json
  cbprobe lint src/main/resources/application.yml --format sarif > cbprobe-lint.sarif`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLint(cmd.Context(), g, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.actuator, "actuator", "", "actuator URL of the running service: compare its live thresholds")
	f.StringArrayVar(&o.headers, "header", nil, "extra request header 'Name: value' for --actuator (repeatable)")
	f.BoolVar(&o.insecure, "insecure", false, "skip TLS certificate verification for --actuator")
	f.DurationVar(&o.timeout, "timeout", collect.DefaultTimeout, "request timeout for --actuator")
	f.Float64Var(&o.rate, "rate", 0, "expected load in requests per second (0: unknown)")
	f.Float64Var(&o.errorRate, "error-rate", math.NaN(), "gateway failure probability in [0,1]")
	f.StringVar(&o.latency, "latency", "", "gateway latency distribution of succeeding calls, e.g. 100ms-500ms")
	f.StringVar(&o.name, "name", "", "runtime circuit breaker name to check (default: every breaker the file defines)")
	f.StringVar(&o.format, "format", lintFormatText, "output: text, json (an array of findings, camelCase keys) or sarif (SARIF 2.1.0, for code scanning)")
	f.BoolVar(&o.json, "json", false, "deprecated: use --format json")
	_ = f.MarkHidden("json")
	f.StringArrayVar(&o.profiles, "profile", nil, "active Spring profile, as spring.profiles.active (repeatable, or comma-separated; default: the file's spring.profiles.active)")
	f.StringVar(&o.retry, "retry", "", "the checked breakers are called through this Retry (resolved from the file)")
	f.StringVar(&o.timelimiter, "timelimiter", "", "the checked breakers are called through this TimeLimiter (resolved from the file)")
	f.StringSliceVar(&o.assume, "assume", nil, "what the code does that the file cannot show: retry, timelimiter (each breaker is wrapped by one of its own name), feign (Spring Cloud CircuitBreaker for Feign is on)")
	return cmd
}

// lintGateway turns the gateway flags into pgsim's behaviour: failing calls answer
// at once, the others after a latency drawn from --latency. Nil when neither is given.
func lintGateway(errRate float64, latency string) (*behavior.Behavior, error) {
	if math.IsNaN(errRate) && latency == "" {
		return nil, nil
	}
	if math.IsNaN(errRate) || latency == "" {
		return nil, errors.New("--error-rate and --latency go together")
	}
	if errRate < 0 || errRate > 1 {
		return nil, fmt.Errorf("--error-rate %v: want a probability in [0,1]", errRate)
	}
	d, err := behavior.ParseDistribution(latency)
	if err != nil {
		return nil, fmt.Errorf("--latency: %w", err)
	}
	b := behavior.DefaultBehavior()
	b.ErrorRate, b.Latency, b.ErrorTiming = errRate, d, behavior.Immediate
	b.HangRate, b.ResetRate, b.Slow = 0, 0, false
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("--error-rate/--latency: %w", err)
	}
	return &b, nil
}

func runLint(ctx context.Context, g *globalOptions, o *lintOptions, path string) error {
	format := o.format
	if o.json {
		if format != lintFormatText && format != lintFormatJSON {
			return usageErr(fmt.Errorf("--json (deprecated) is --format json; it cannot go with --format %s", format))
		}
		fmt.Fprintln(g.stderr, "cbprobe: --json is deprecated: use --format json")
		format = lintFormatJSON
	}
	if !slices.Contains(lintFormats(), format) {
		return usageErr(fmt.Errorf("--format %q: want one of %s", format, strings.Join(lintFormats(), ", ")))
	}
	var lo springconf.Options
	if len(o.profiles) > 0 {
		lo.Profiles = o.profiles
	}
	f, err := springconf.LoadWith(path, lo)
	if err != nil {
		return usageErr(err)
	}
	opt := springconf.LintOptions{BreakerName: o.name, Rate: o.rate, RetryName: o.retry, TimeLimiterName: o.timelimiter}
	for _, a := range o.assume {
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "retry":
			opt.AssumeRetry = true
		case "timelimiter", "time-limiter":
			opt.AssumeTimeLimiter = true
		case "feign":
			opt.AssumeFeign = true
		default:
			return usageErr(fmt.Errorf("--assume %q: want retry, timelimiter or feign", a))
		}
	}
	gw, err := lintGateway(o.errorRate, o.latency)
	if err != nil {
		return usageErr(err)
	}
	if gw != nil {
		// The same computation predict and experiment use: exact where the latency
		// distribution allows it, with the TimeLimiter's timeouts counted.
		opt.GatewayFor = func(cfg breaker.Config, timeout time.Duration) *breaker.CallOutcomeProbabilities {
			p := sim.OutcomeProbabilities(*gw, cfg, breaker.RetryConfig{MaxAttempts: 1}, timeout, 0)
			return &p.Call
		}
	}
	if o.actuator != "" {
		live, err := liveThresholds(ctx, g, o)
		if err != nil {
			return infraErr(err)
		}
		opt.LiveByName = live
	}
	findings := springconf.Lint(f, opt)
	failed := false
	for _, fd := range findings {
		failed = failed || fd.Severity == "error"
	}
	switch format {
	case lintFormatJSON:
		err = writeLintJSON(g.stdout, path, findings)
	case lintFormatSARIF:
		err = writeLintSARIF(g.stdout, path, currentBuildInfo().String(), findings)
	default:
		err = writeLintText(g.stdout, path, findings)
	}
	if err != nil {
		return infraErr(fmt.Errorf("lint: write findings: %w", err))
	}
	if failed {
		return silentErr(exitExpectation, errors.New("lint found errors"))
	}
	return nil
}

// liveThresholds reads every breaker's thresholds from the actuator, by name.
func liveThresholds(ctx context.Context, g *globalOptions, o *lintOptions) (map[string]*breaker.Config, error) {
	hdr, err := parseHeaders(o.headers)
	if err != nil {
		return nil, err
	}
	src := collect.NewActuator(o.actuator, collect.HTTPOptions{Headers: hdr, Insecure: o.insecure, Timeout: o.timeout, Logger: g.logger})
	snap, err := src.Poll(ctx)
	if err != nil {
		return nil, fmt.Errorf("lint: read live thresholds: %w", err)
	}
	out := map[string]*breaker.Config{}
	var names []string
	for _, b := range snap.Breakers {
		names = append(names, b.Name)
		if !math.IsNaN(b.FailureRateThreshold) {
			out[b.Name] = &breaker.Config{FailureRateThreshold: float32(b.FailureRateThreshold), SlowCallRateThreshold: float32(b.SlowCallRateThreshold)}
		}
	}
	if o.name != "" && out[o.name] == nil {
		g.logger.Warn("lint: breaker not in the actuator's list; live thresholds not compared", "breaker", o.name, "listed", names)
	}
	return out, nil
}

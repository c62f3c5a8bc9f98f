package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/springconf"
	"github.com/spf13/cobra"
)

type lintOptions struct {
	actuator  string
	headers   []string
	insecure  bool
	timeout   time.Duration
	rate      float64
	errorRate float64
	latency   string
	name      string
	json      bool
}

func newLintCommand(g *globalOptions) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint application.yml",
		Short: "Find circuit breaker configuration traps in a Spring application.yml",
		Long: `lint reads a Spring Boot application.yml (or .properties) and reports the Resilience4j
traps it contains: instance names that never match the runtime breaker name, a slow-call
threshold at or above the time limiter's timeout, minimum calls unreachable at the given
rate, a half-open trial that cannot pass for the given gateway, health or endpoints not
exposed, and more. Each finding has an id, a severity, the key path, an explanation and
the fix.

--actuator reads the thresholds the running service really uses and compares them with
the file. --error-rate and --latency describe the gateway (the failing share of calls and
the latency of the others, e.g. 100ms-500ms, normal:mean=200ms,sd=50ms); failing calls
are taken as answering at once.

Exit 1 when a finding has severity error, 0 otherwise, 2 when the file cannot be read.`,
		Example: `  cbprobe lint application.yml
  cbprobe lint application.yml --rate 15 --error-rate 0.4 --latency 100ms-500ms
  cbprobe lint application.yml --actuator http://127.0.0.1:8080 --name pgPayment --json`,
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
	f.StringVar(&o.name, "name", "", "runtime circuit breaker name (default: the Feign name of the reference service)")
	f.BoolVar(&o.json, "json", false, "print the findings as a JSON array")
	return cmd
}

// gatewayProbabilities turns the gateway flags into call outcome probabilities
// for a slow-call threshold: failures answer at once (fast), a success is slow
// when its latency exceeds the threshold. The slow share of successes is
// estimated from 200,000 seeded draws (standard error below 0.0012).
func gatewayProbabilities(errRate float64, latency string, slow time.Duration) (*breaker.CallOutcomeProbabilities, error) {
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
	r := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	slowN := 0
	for range n {
		if d.Sample(r) > slow {
			slowN++
		}
	}
	q := float64(slowN) / n
	return &breaker.CallOutcomeProbabilities{FastSuccess: (1 - errRate) * (1 - q), SlowSuccess: (1 - errRate) * q, FastFailure: errRate}, nil
}

func runLint(ctx context.Context, g *globalOptions, o *lintOptions, path string) error {
	f, err := springconf.Load(path)
	if err != nil {
		return usageErr(err)
	}
	name := o.name
	if name == "" {
		name = springconf.DefaultBreakerName
	}
	opt := springconf.LintOptions{BreakerName: o.name, Rate: o.rate}
	slow := breaker.DefaultConfig().SlowCallDurationThreshold
	if r, err := f.Resolve(name); err == nil {
		slow = r.Config.SlowCallDurationThreshold
	}
	gw, err := gatewayProbabilities(o.errorRate, o.latency, slow)
	if err != nil {
		return usageErr(err)
	}
	opt.Gateway = gw
	if o.actuator != "" {
		live, err := liveThresholds(ctx, g, o, name)
		if err != nil {
			return infraErr(err)
		}
		opt.Live = live
	}
	findings := springconf.Lint(f, opt)
	failed := false
	for _, fd := range findings {
		failed = failed || fd.Severity == "error"
	}
	if o.json {
		if findings == nil {
			findings = []springconf.Finding{}
		}
		b, err := json.MarshalIndent(findings, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(g.stdout, string(b))
	} else {
		if len(findings) == 0 {
			fmt.Fprintf(g.stdout, "%s: no findings\n", path)
		}
		for _, fd := range findings {
			loc := path
			if fd.Line > 0 {
				loc = fmt.Sprintf("%s:%d", path, fd.Line)
			}
			fmt.Fprintf(g.stdout, "%s %s [%s] %s\n  %s\n  fix: %s\n", loc, fd.Severity, fd.ID, fd.Key, fd.Message, fd.Fix)
		}
	}
	if failed {
		return silentErr(exitExpectation, errors.New("lint found errors"))
	}
	return nil
}

// liveThresholds reads the named breaker's thresholds from the actuator.
func liveThresholds(ctx context.Context, g *globalOptions, o *lintOptions, name string) (*breaker.Config, error) {
	hdr, err := parseHeaders(o.headers)
	if err != nil {
		return nil, err
	}
	src := collect.NewActuator(o.actuator, collect.HTTPOptions{Headers: hdr, Insecure: o.insecure, Timeout: o.timeout, Logger: g.logger})
	snap, err := src.Poll(ctx)
	if err != nil {
		return nil, fmt.Errorf("lint: read live thresholds: %w", err)
	}
	var names []string
	for _, b := range snap.Breakers {
		names = append(names, b.Name)
		if b.Name == name && !math.IsNaN(b.FailureRateThreshold) {
			cfg := breaker.Config{FailureRateThreshold: float32(b.FailureRateThreshold), SlowCallRateThreshold: float32(b.SlowCallRateThreshold)}
			return &cfg, nil
		}
	}
	g.logger.Warn("lint: breaker not in the actuator's list; live thresholds not compared", "breaker", name, "listed", names)
	return nil, nil
}
